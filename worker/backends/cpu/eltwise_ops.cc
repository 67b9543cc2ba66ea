// Activations, Identity/Dropout and batch norm on oneDNN.
#include <optional>
#include <variant>

#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {
namespace {

using dnnl::algorithm;

// Appends one eltwise primitive from `src` to `dst` (same layout).
std::string AddEltwise(CompileContext& ctx, CpuOp& op, algorithm alg, float alpha, float beta,
                       const dnnl::memory& src, const dnnl::memory& dst) {
  dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src.get_desc(),
                                   alpha, beta);
  dnnl::eltwise_forward::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  AddWithScratchpad(op, dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return pd.impl_info_str();
}

// A UnaryMath function as one oneDNN eltwise primitive (alpha, beta as
// dnnl_eltwise_desc_t defines them), or nullopt where oneDNN has none.
struct UnaryPrimitive {
  algorithm alg;
  float alpha = 0.0f;
  float beta = 0.0f;
};
std::optional<UnaryPrimitive> UnaryMathPrimitive(const graph::UnaryMathAttrs& a) {
  switch (a.function) {
    case graph::UnaryFunction::kLeakyRelu:
      return UnaryPrimitive{algorithm::eltwise_relu, a.alpha};  // alpha: the negative slope
    case graph::UnaryFunction::kElu:
      return UnaryPrimitive{algorithm::eltwise_elu, a.alpha};
    case graph::UnaryFunction::kSoftplus:
      return UnaryPrimitive{algorithm::eltwise_soft_relu};
    case graph::UnaryFunction::kMish:
      return UnaryPrimitive{algorithm::eltwise_mish};
    case graph::UnaryFunction::kGelu:
      return UnaryPrimitive{algorithm::eltwise_gelu_erf};
    case graph::UnaryFunction::kGeluTanh:
      return UnaryPrimitive{algorithm::eltwise_gelu_tanh};
    case graph::UnaryFunction::kSqrt:
      return UnaryPrimitive{algorithm::eltwise_sqrt};
    case graph::UnaryFunction::kExp:
      return UnaryPrimitive{algorithm::eltwise_exp};
    case graph::UnaryFunction::kLog:
      return UnaryPrimitive{algorithm::eltwise_log};
    case graph::UnaryFunction::kNeg:
      return UnaryPrimitive{algorithm::eltwise_linear, -1.0f, 0.0f};
    case graph::UnaryFunction::kAbs:
      return UnaryPrimitive{algorithm::eltwise_abs};
    case graph::UnaryFunction::kReciprocal:
      return UnaryPrimitive{algorithm::eltwise_pow, 1.0f, -1.0f};  // 1 * x^-1
    case graph::UnaryFunction::kPow:
      return UnaryPrimitive{algorithm::eltwise_pow, 1.0f, a.alpha};
    case graph::UnaryFunction::kSelu:  // two primitives (CompileEltwise)
    case graph::UnaryFunction::kErf:   // none in oneDNN
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

OpOrNull CompileEltwise(CompileContext& ctx, const graph::Node& node) {
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  if (src.get_desc() != dst.get_desc()) return std::unique_ptr<CpuOp>();
  auto op = std::make_unique<CpuOp>(node.name);
  std::string impl;
  switch (node.type) {
    case graph::OpType::kRelu:
      impl = AddEltwise(ctx, *op, algorithm::eltwise_relu, 0, 0, src, dst);
      break;
    case graph::OpType::kClip: {
      const auto& a = std::get<graph::ClipAttrs>(node.attrs);
      impl = AddEltwise(ctx, *op, algorithm::eltwise_clip, a.min, a.max, src, dst);
      break;
    }
    case graph::OpType::kSigmoid:
      impl = AddEltwise(ctx, *op, algorithm::eltwise_logistic, 0, 0, src, dst);
      break;
    case graph::OpType::kHardSigmoid: {
      // max(0, min(1, alpha x + beta)): a linear step, then a clip in place.
      const auto& a = std::get<graph::HardSigmoidAttrs>(node.attrs);
      impl = AddEltwise(ctx, *op, algorithm::eltwise_linear, a.alpha, a.beta, src, dst);
      AddEltwise(ctx, *op, algorithm::eltwise_clip, 0.0f, 1.0f, dst, dst);
      break;
    }
    case graph::OpType::kHardSwish:
      // oneDNN 2.x: x * relu6(x + 3) / 6, as ONNX.
      impl = AddEltwise(ctx, *op, algorithm::eltwise_hardswish, 0, 0, src, dst);
      break;
    case graph::OpType::kTanh:
      impl = AddEltwise(ctx, *op, algorithm::eltwise_tanh, 0, 0, src, dst);
      break;
    case graph::OpType::kUnaryMath: {
      const auto& a = std::get<graph::UnaryMathAttrs>(node.attrs);
      if (a.function == graph::UnaryFunction::kSelu) {
        // gamma * elu(x): an elu, then a scale in place.
        impl = AddEltwise(ctx, *op, algorithm::eltwise_elu, a.alpha, 0, src, dst);
        AddEltwise(ctx, *op, algorithm::eltwise_linear, a.beta, 0, dst, dst);
        break;
      }
      const std::optional<UnaryPrimitive> primitive = UnaryMathPrimitive(a);
      if (!primitive) return std::unique_ptr<CpuOp>();  // the reference loop (Erf)
      impl = AddEltwise(ctx, *op, primitive->alg, primitive->alpha, primitive->beta, src, dst);
      break;
    }
    case graph::OpType::kIdentity:
    case graph::OpType::kDropout:
      op->AddReorder(src, dst);
      impl = "reorder";
      break;
    default:
      return std::unique_ptr<CpuOp>();
  }
  op->set_implementation(impl);
  return op;
}

OpOrNull CompileBatchNorm(CompileContext& ctx, const graph::Node& node) {
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  if (src.get_desc() != dst.get_desc()) return std::unique_ptr<CpuOp>();
  const float epsilon = std::get<graph::BatchNormAttrs>(node.attrs).epsilon;
  const auto flags = dnnl::normalization_flags::use_global_stats |
                     dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference,
                                               src.get_desc(), epsilon, flags);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  const graph::Shape& shape = ctx.Shape(node.inputs[0]);
  const dnnl::memory::desc channel_md = PlainDesc({shape[1]});
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  const struct {
    const char* role;
    int arg;
  } params[] = {{"scale", DNNL_ARG_SCALE},
                {"bias", DNNL_ARG_SHIFT},
                {"mean", DNNL_ARG_MEAN},
                {"var", DNNL_ARG_VARIANCE}};
  for (const auto& p : params) {
    ASSIGN_OR_RETURN(graph::Tensor t, NodeWeight(node, p.role));
    args[p.arg] = ConstantMemory(ctx, t.data, channel_md, channel_md);
  }
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::batch_normalization_forward(pd), pd, std::move(args));
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
