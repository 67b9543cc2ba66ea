// Convolution on oneDNN: bias and activation fused, weights reordered once;
// a residual Add (residual_fusion.h) fused as a sum post-op. ConvTranspose
// as oneDNN's deconvolution.
#include <cstring>
#include <variant>

#include "common/strings.h"
#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {
namespace {

using dnnl::memory;

memory::desc Any(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

void AppendActivation(const graph::ConvAttrs& a, dnnl::post_ops& ops) {
  switch (a.activation) {
    case graph::Activation::kNone:
      break;
    case graph::Activation::kRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case graph::Activation::kClip:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, a.clip_min, a.clip_max);
      break;
    case graph::Activation::kSigmoid:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
      break;
    case graph::Activation::kTanh:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
      break;
  }
}

}  // namespace

StatusOr<Convolution> BuildConvolution(CompileContext& ctx, const std::string& name,
                                       const graph::ConvAttrs& a, const memory& src,
                                       const graph::Shape& src_shape,
                                       const graph::Tensor& weight, const graph::Tensor* bias,
                                       const memory& dst, const graph::Shape& dst_shape,
                                       const memory* residual) {
  const int64_t channels = src_shape[1], oc = a.out_channels, g = a.groups;
  const memory::dims src_dims = ToDims(src_shape), dst_dims = ToDims(dst_shape);
  const memory::dims w_dims =
      g == 1 ? memory::dims{oc, channels, a.kernel[0], a.kernel[1]}
             : memory::dims{g, oc / g, channels / g, a.kernel[0], a.kernel[1]};
  const memory::desc w_plain(w_dims, memory::data_type::f32,
                             g == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
  const memory::desc b_md = bias != nullptr ? memory::desc({oc}, memory::data_type::f32,
                                                           memory::format_tag::x)
                                            : memory::desc();
  const memory::dims strides = {a.stride[0], a.stride[1]};
  const memory::dims dilates = {a.dilation[0] - 1, a.dilation[1] - 1};
  const memory::dims pad_l = {a.pads[0], a.pads[1]}, pad_r = {a.pads[2], a.pads[3]};
  dnnl::primitive_attr attr = ScratchpadAttr();
  dnnl::post_ops post_ops;
  // y = act(conv + bias + z): the sum post-op adds what dst holds when the
  // primitive starts (z, copied in just before), then the activation.
  if (residual != nullptr) post_ops.append_sum(1.0f);
  AppendActivation(a, post_ops);
  attr.set_post_ops(post_ops);
  const auto make = [&](const memory::desc& s, const memory::desc& d) {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, s, Any(w_dims),
                                         b_md, d, strides, dilates, pad_l, pad_r);
    return dnnl::convolution_forward::primitive_desc(desc, attr, ctx.engine());
  };
  // First choice: read and write the storage layouts as they are.
  dnnl::convolution_forward::primitive_desc pd;
  bool have_pd = false;
  try {
    pd = make(src.get_desc(), dst ? dst.get_desc() : Any(dst_dims));
    have_pd = !IsReferenceImpl(pd);
  } catch (const dnnl::error&) {
  }
  if (!have_pd) pd = make(Any(src_dims), Any(dst_dims));

  auto op = std::make_unique<CpuOp>(name);
  op->set_implementation(residual != nullptr ? StrCat(pd.impl_info_str(), kResidualFusedSuffix)
                                             : pd.impl_info_str());
  memory conv_src = src;
  if (pd.src_desc() != src.get_desc()) {
    conv_src = memory(pd.src_desc(), ctx.engine());
    op->AddReorder(src, conv_src);
  }
  const memory weights = ConstantMemory(ctx, weight.data, w_plain, pd.weights_desc());
  memory conv_dst = dst;
  if (!dst || pd.dst_desc() != dst.get_desc()) {
    conv_dst = memory(pd.dst_desc(), ctx.engine());
    std::memset(conv_dst.get_data_handle(), 0, pd.dst_desc().get_size());
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, conv_src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, conv_dst}};
  if (bias != nullptr) {
    args[DNNL_ARG_BIAS] = ConstantMemory(ctx, bias->data, b_md, pd.bias_desc());
  }
  // z never shares memory with dst (different live values), so it is
  // copied (reordered, when the layouts differ) into the conv's dst.
  if (residual != nullptr) op->AddReorder(*residual, conv_dst);
  AddWithScratchpad(*op, dnnl::convolution_forward(pd), pd, std::move(args));
  if (dst && conv_dst.get_data_handle() != dst.get_data_handle()) op->AddReorder(conv_dst, dst);
  return Convolution{std::move(op), dst ? dst : conv_dst};
}

OpOrNull CompileConv(CompileContext& ctx, const graph::Node& node) {
  const auto& a = std::get<graph::ConvAttrs>(node.attrs);
  ASSIGN_OR_RETURN(memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(memory dst, ctx.Value(node.outputs[0]));
  ASSIGN_OR_RETURN(graph::Tensor weight, NodeWeight(node, "W"));
  graph::Tensor bias;
  if (a.has_bias) {
    ASSIGN_OR_RETURN(bias, NodeWeight(node, "B"));
  }
  ASSIGN_OR_RETURN(Convolution conv,
                   BuildConvolution(ctx, node.name, a, src, ctx.Shape(node.inputs[0]), weight,
                                    a.has_bias ? &bias : nullptr, dst,
                                    ctx.Shape(node.outputs[0])));
  return std::move(conv.op);
}

OpOrNull CompileConvTranspose(CompileContext& ctx, const graph::Node& node) {
  const auto& a = std::get<graph::ConvTransposeAttrs>(node.attrs);
  // oneDNN's output size has no output padding: it goes to the end pads,
  // which must stay non-negative (else the reference loop runs it).
  const memory::dims pad_l = {a.pads[0], a.pads[1]};
  const memory::dims pad_r = {a.pads[2] - a.output_padding[0], a.pads[3] - a.output_padding[1]};
  if (pad_r[0] < 0 || pad_r[1] < 0) return std::unique_ptr<CpuOp>();
  ASSIGN_OR_RETURN(memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(memory dst, ctx.Value(node.outputs[0]));
  ASSIGN_OR_RETURN(graph::Tensor weight, NodeWeight(node, "W"));
  graph::Tensor bias;
  if (a.has_bias) {
    ASSIGN_OR_RETURN(bias, NodeWeight(node, "B"));
  }
  const graph::Shape& src_shape = ctx.Shape(node.inputs[0]);
  const int64_t channels = src_shape[1], oc = a.out_channels, g = a.groups;
  // The weight is ONNX's [C, OC/groups, KH, KW]: oneDNN's iohw (giohw).
  const memory::dims w_dims = g == 1
                                  ? memory::dims{oc, channels, a.kernel[0], a.kernel[1]}
                                  : memory::dims{g, oc / g, channels / g, a.kernel[0], a.kernel[1]};
  const memory::desc w_plain(w_dims, memory::data_type::f32,
                             g == 1 ? memory::format_tag::iohw : memory::format_tag::giohw);
  const memory::desc b_md = a.has_bias
                                ? memory::desc({oc}, memory::data_type::f32, memory::format_tag::x)
                                : memory::desc();
  const memory::dims strides = {a.stride[0], a.stride[1]};
  const memory::dims dilates = {a.dilation[0] - 1, a.dilation[1] - 1};
  const dnnl::primitive_attr attr = ScratchpadAttr();
  const auto make = [&](const memory::desc& s, const memory::desc& d) {
    dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::deconvolution_direct, s, Any(w_dims),
                                           b_md, d, strides, dilates, pad_l, pad_r);
    return dnnl::deconvolution_forward::primitive_desc(desc, attr, ctx.engine());
  };
  dnnl::deconvolution_forward::primitive_desc pd;
  bool have_pd = false;
  try {
    pd = make(src.get_desc(), dst.get_desc());
    have_pd = !IsReferenceImpl(pd);
  } catch (const dnnl::error&) {
  }
  if (!have_pd) pd = make(Any(ToDims(src_shape)), Any(ToDims(ctx.Shape(node.outputs[0]))));
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation(pd.impl_info_str());
  memory deconv_src = src;
  if (pd.src_desc() != src.get_desc()) {
    deconv_src = memory(pd.src_desc(), ctx.engine());
    op->AddReorder(src, deconv_src);
  }
  memory deconv_dst = dst;
  if (pd.dst_desc() != dst.get_desc()) deconv_dst = memory(pd.dst_desc(), ctx.engine());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, deconv_src},
      {DNNL_ARG_WEIGHTS, ConstantMemory(ctx, weight.data, w_plain, pd.weights_desc())},
      {DNNL_ARG_DST, deconv_dst}};
  if (a.has_bias) args[DNNL_ARG_BIAS] = ConstantMemory(ctx, bias.data, b_md, pd.bias_desc());
  AddWithScratchpad(*op, dnnl::deconvolution_forward(pd), pd, std::move(args));
  if (deconv_dst.get_data_handle() != dst.get_data_handle()) op->AddReorder(deconv_dst, dst);
  return op;
}

OpOrNull CompileResidualConv(CompileContext& ctx, const ResidualFusion& fusion) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(fusion.conv);
  graph::ConvAttrs a = std::get<graph::ConvAttrs>(node.attrs);
  // The conv has no activation of its own (residual_fusion.h); the fused
  // Relu, if any, applies after the sum.
  a.activation = fusion.relu != graph::kNoNode ? graph::Activation::kRelu
                                               : graph::Activation::kNone;
  ASSIGN_OR_RETURN(memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(memory z, ctx.Value(fusion.residual));
  ASSIGN_OR_RETURN(memory dst, ctx.Value(fusion.output));
  ASSIGN_OR_RETURN(graph::Tensor weight, NodeWeight(node, "W"));
  graph::Tensor bias;
  if (a.has_bias) {
    ASSIGN_OR_RETURN(bias, NodeWeight(node, "B"));
  }
  std::string name = StrCat(node.name, " + ", g.node(fusion.add).name);
  if (fusion.relu != graph::kNoNode) name = StrCat(name, " + ", g.node(fusion.relu).name);
  ASSIGN_OR_RETURN(Convolution conv,
                   BuildConvolution(ctx, name, a, src, ctx.Shape(node.inputs[0]), weight,
                                    a.has_bias ? &bias : nullptr, dst, ctx.Shape(fusion.output),
                                    &z));
  return std::move(conv.op);
}

}  // namespace iosfarm::worker::cpu::internal
