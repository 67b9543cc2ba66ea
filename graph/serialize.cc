#include "graph/serialize.h"

#include <algorithm>
#include <array>

#include "common/strings.h"
#include "graph/validate.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "iosfarm/v1/graph.pb.h"

namespace iosfarm::graph {
namespace {

namespace pb = ::iosfarm::v1;

template <typename Repeated, typename Container>
void Put(const Container& from, Repeated* to) {
  for (auto x : from) to->Add(x);
}

template <size_t N, typename Repeated>
StatusOr<std::array<int64_t, N>> GetArray(const Repeated& from, const Node& node,
                                          std::string_view field) {
  if (from.size() != static_cast<int>(N)) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "': field '", field,
                                             "' has ", from.size(), " entries, expected ", N));
  }
  std::array<int64_t, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = from[static_cast<int>(i)];
  return out;
}

template <typename Repeated>
std::vector<int64_t> GetVector(const Repeated& from) {
  return std::vector<int64_t>(from.begin(), from.end());
}

void WriteAttrs(const Node& node, pb::Node* out) {
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ConvAttrs>) {
          auto* c = out->mutable_conv();
          c->set_out_channels(a.out_channels);
          Put(a.kernel, c->mutable_kernel());
          Put(a.stride, c->mutable_stride());
          Put(a.dilation, c->mutable_dilation());
          Put(a.pads, c->mutable_pads());
          c->set_groups(a.groups);
          c->set_has_bias(a.has_bias);
          c->set_activation(std::string(ActivationName(a.activation)));
          c->set_clip_min(a.clip_min);
          c->set_clip_max(a.clip_max);
        } else if constexpr (std::is_same_v<T, ConvTransposeAttrs>) {
          auto* c = out->mutable_conv_transpose();
          c->set_out_channels(a.out_channels);
          Put(a.kernel, c->mutable_kernel());
          Put(a.stride, c->mutable_stride());
          Put(a.dilation, c->mutable_dilation());
          Put(a.pads, c->mutable_pads());
          Put(a.output_padding, c->mutable_output_padding());
          c->set_groups(a.groups);
          c->set_has_bias(a.has_bias);
        } else if constexpr (std::is_same_v<T, PoolAttrs>) {
          auto* p = out->mutable_pool();
          Put(a.kernel, p->mutable_kernel());
          Put(a.stride, p->mutable_stride());
          Put(a.pads, p->mutable_pads());
          p->set_ceil_mode(a.ceil_mode);
          p->set_count_include_pad(a.count_include_pad);
        } else if constexpr (std::is_same_v<T, ClipAttrs>) {
          out->mutable_clip()->set_min(a.min);
          out->mutable_clip()->set_max(a.max);
        } else if constexpr (std::is_same_v<T, HardSigmoidAttrs>) {
          out->mutable_hard_sigmoid()->set_alpha(a.alpha);
          out->mutable_hard_sigmoid()->set_beta(a.beta);
        } else if constexpr (std::is_same_v<T, ConcatAttrs> || std::is_same_v<T, FlattenAttrs> ||
                             std::is_same_v<T, SoftmaxAttrs>) {
          out->mutable_axis()->set_axis(a.axis);
        } else if constexpr (std::is_same_v<T, SplitAttrs>) {
          out->mutable_split()->set_axis(a.axis);
          Put(a.sizes, out->mutable_split()->mutable_sizes());
        } else if constexpr (std::is_same_v<T, SliceAttrs>) {
          auto* s = out->mutable_slice();
          Put(a.axes, s->mutable_axes());
          Put(a.starts, s->mutable_starts());
          Put(a.ends, s->mutable_ends());
          Put(a.steps, s->mutable_steps());
        } else if constexpr (std::is_same_v<T, PadAttrs>) {
          Put(a.pads, out->mutable_pad()->mutable_pads());
          out->mutable_pad()->set_mode(std::string(PadModeName(a.mode)));
          out->mutable_pad()->set_value(a.value);
        } else if constexpr (std::is_same_v<T, ReshapeAttrs>) {
          Put(a.shape, out->mutable_shape()->mutable_dims());
        } else if constexpr (std::is_same_v<T, TransposeAttrs>) {
          Put(a.perm, out->mutable_shape()->mutable_dims());
        } else if constexpr (std::is_same_v<T, ReduceAttrs>) {
          Put(a.axes, out->mutable_reduce_mean()->mutable_axes());
          out->mutable_reduce_mean()->set_keepdims(a.keepdims);
        } else if constexpr (std::is_same_v<T, GemmAttrs>) {
          auto* g = out->mutable_gemm();
          g->set_alpha(a.alpha);
          g->set_beta(a.beta);
          g->set_trans_a(a.trans_a);
          g->set_trans_b(a.trans_b);
        } else if constexpr (std::is_same_v<T, BatchNormAttrs>) {
          out->mutable_batch_norm()->set_epsilon(a.epsilon);
        } else if constexpr (std::is_same_v<T, ResizeAttrs>) {
          auto* r = out->mutable_resize();
          for (int64_t d : a.size) r->add_size(d);
          for (float s : a.scale) r->add_scale(s);
          r->set_mode(std::string(ResizeModeName(a.mode)));
          r->set_coordinates(std::string(ResizeCoordinatesName(a.coordinates)));
          r->set_rounding(std::string(NearestRoundingName(a.rounding)));
        } else if constexpr (std::is_same_v<T, UnaryMathAttrs>) {
          auto* u = out->mutable_unary_math();
          u->set_function(std::string(UnaryFunctionName(a.function)));
          u->set_alpha(a.alpha);
          u->set_beta(a.beta);
        }
      },
      node.attrs);
}

StatusOr<Activation> ParseActivation(std::string_view name, const Node& node) {
  for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kClip,
                       Activation::kSigmoid, Activation::kTanh}) {
    if (ActivationName(a) == name) return a;
  }
  return absl::InvalidArgumentError(
      StrCat("node '", node.name, "': unknown activation '", name, "'"));
}

StatusOr<PadMode> ParsePadMode(std::string_view name, const Node& node) {
  for (PadMode m : {PadMode::kConstant, PadMode::kReflect, PadMode::kEdge}) {
    if (PadModeName(m) == name) return m;
  }
  return absl::InvalidArgumentError(StrCat("node '", node.name, "': unknown pad mode '", name, "'"));
}

// One of `values` by its name (`Name`), or InvalidArgument naming `what`.
template <typename Enum, typename NameOf>
StatusOr<Enum> ParseName(std::string_view name, std::initializer_list<Enum> values, NameOf name_of,
                         const Node& node, std::string_view what) {
  for (Enum v : values) {
    if (name_of(v) == name) return v;
  }
  return absl::InvalidArgumentError(
      StrCat("node '", node.name, "': unknown ", what, " '", name, "'"));
}

StatusOr<ResizeAttrs> ParseResize(const pb::ResizeAttrs& r, const Node& node) {
  ResizeAttrs a;
  ASSIGN_OR_RETURN(a.size, GetArray<2>(r.size(), node, "size"));
  if (r.scale_size() != 2) {
    return absl::InvalidArgumentError(
        StrCat("node '", node.name, "': 'scale' needs 2 values, got ", r.scale_size()));
  }
  a.scale = {r.scale(0), r.scale(1)};
  ASSIGN_OR_RETURN(a.mode, ParseName(r.mode(), {ResizeMode::kNearest, ResizeMode::kLinear},
                                     ResizeModeName, node, "resize mode"));
  ASSIGN_OR_RETURN(a.coordinates,
                   ParseName(r.coordinates(),
                             {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kPytorchHalfPixel,
                              ResizeCoordinates::kAlignCorners, ResizeCoordinates::kAsymmetric},
                             ResizeCoordinatesName, node, "resize coordinate mode"));
  ASSIGN_OR_RETURN(a.rounding,
                   ParseName(r.rounding(),
                             {NearestRounding::kRoundPreferFloor, NearestRounding::kRoundPreferCeil,
                              NearestRounding::kFloor, NearestRounding::kCeil},
                             NearestRoundingName, node, "nearest rounding"));
  return a;
}

Status MissingAttrs(const Node& node, std::string_view field) {
  return absl::InvalidArgumentError(StrCat("node '", node.name, "' (", OpTypeName(node.type),
                                           "): missing attributes '", field, "'"));
}

// Reads the attributes `node.type` needs from `in` into node.attrs.
Status ReadAttrs(const pb::Node& in, Node& node) {
  switch (node.type) {
    case OpType::kConv: {
      if (!in.has_conv()) return MissingAttrs(node, "conv");
      const auto& c = in.conv();
      ConvAttrs a;
      a.out_channels = c.out_channels();
      ASSIGN_OR_RETURN(a.kernel, GetArray<2>(c.kernel(), node, "kernel"));
      ASSIGN_OR_RETURN(a.stride, GetArray<2>(c.stride(), node, "stride"));
      ASSIGN_OR_RETURN(a.dilation, GetArray<2>(c.dilation(), node, "dilation"));
      ASSIGN_OR_RETURN(a.pads, GetArray<4>(c.pads(), node, "pads"));
      a.groups = c.groups();
      a.has_bias = c.has_bias();
      ASSIGN_OR_RETURN(a.activation, ParseActivation(c.activation(), node));
      a.clip_min = c.clip_min();
      a.clip_max = c.clip_max();
      node.attrs = a;
      return absl::OkStatus();
    }
    case OpType::kConvTranspose: {
      if (!in.has_conv_transpose()) return MissingAttrs(node, "conv_transpose");
      const auto& c = in.conv_transpose();
      ConvTransposeAttrs a;
      a.out_channels = c.out_channels();
      ASSIGN_OR_RETURN(a.kernel, GetArray<2>(c.kernel(), node, "kernel"));
      ASSIGN_OR_RETURN(a.stride, GetArray<2>(c.stride(), node, "stride"));
      ASSIGN_OR_RETURN(a.dilation, GetArray<2>(c.dilation(), node, "dilation"));
      ASSIGN_OR_RETURN(a.pads, GetArray<4>(c.pads(), node, "pads"));
      ASSIGN_OR_RETURN(a.output_padding, GetArray<2>(c.output_padding(), node, "output_padding"));
      a.groups = c.groups();
      a.has_bias = c.has_bias();
      node.attrs = a;
      return absl::OkStatus();
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool: {
      if (!in.has_pool()) return MissingAttrs(node, "pool");
      const auto& p = in.pool();
      PoolAttrs a;
      ASSIGN_OR_RETURN(a.kernel, GetArray<2>(p.kernel(), node, "kernel"));
      ASSIGN_OR_RETURN(a.stride, GetArray<2>(p.stride(), node, "stride"));
      ASSIGN_OR_RETURN(a.pads, GetArray<4>(p.pads(), node, "pads"));
      a.ceil_mode = p.ceil_mode();
      a.count_include_pad = p.count_include_pad();
      node.attrs = a;
      return absl::OkStatus();
    }
    case OpType::kClip:
      if (!in.has_clip()) return MissingAttrs(node, "clip");
      node.attrs = ClipAttrs{in.clip().min(), in.clip().max()};
      return absl::OkStatus();
    case OpType::kHardSigmoid:
      if (!in.has_hard_sigmoid()) return MissingAttrs(node, "hard_sigmoid");
      node.attrs = HardSigmoidAttrs{in.hard_sigmoid().alpha(), in.hard_sigmoid().beta()};
      return absl::OkStatus();
    case OpType::kConcat:
    case OpType::kFlatten:
    case OpType::kSoftmax:
      if (!in.has_axis()) return MissingAttrs(node, "axis");
      if (node.type == OpType::kConcat) node.attrs = ConcatAttrs{in.axis().axis()};
      if (node.type == OpType::kFlatten) node.attrs = FlattenAttrs{in.axis().axis()};
      if (node.type == OpType::kSoftmax) node.attrs = SoftmaxAttrs{in.axis().axis()};
      return absl::OkStatus();
    case OpType::kSplit:
      if (!in.has_split()) return MissingAttrs(node, "split");
      node.attrs = SplitAttrs{in.split().axis(), GetVector(in.split().sizes())};
      return absl::OkStatus();
    case OpType::kSlice: {
      if (!in.has_slice()) return MissingAttrs(node, "slice");
      const auto& s = in.slice();
      node.attrs = SliceAttrs{GetVector(s.axes()), GetVector(s.starts()), GetVector(s.ends()),
                              GetVector(s.steps())};
      return absl::OkStatus();
    }
    case OpType::kPad: {
      if (!in.has_pad()) return MissingAttrs(node, "pad");
      ASSIGN_OR_RETURN(PadMode mode, ParsePadMode(in.pad().mode(), node));
      node.attrs = PadAttrs{GetVector(in.pad().pads()), mode, in.pad().value()};
      return absl::OkStatus();
    }
    case OpType::kReshape:
    case OpType::kTranspose:
      if (!in.has_shape()) return MissingAttrs(node, "shape");
      if (node.type == OpType::kReshape) {
        node.attrs = ReshapeAttrs{GetVector(in.shape().dims())};
      } else {
        node.attrs = TransposeAttrs{GetVector(in.shape().dims())};
      }
      return absl::OkStatus();
    IOSFARM_REDUCE_OP_CASES:
      if (!in.has_reduce_mean()) return MissingAttrs(node, "reduce_mean");
      node.attrs = ReduceAttrs{GetVector(in.reduce_mean().axes()), in.reduce_mean().keepdims()};
      return absl::OkStatus();
    case OpType::kGemm: {
      if (!in.has_gemm()) return MissingAttrs(node, "gemm");
      const auto& g = in.gemm();
      node.attrs = GemmAttrs{g.alpha(), g.beta(), g.trans_a(), g.trans_b()};
      return absl::OkStatus();
    }
    case OpType::kBatchNormalization:
      if (!in.has_batch_norm()) return MissingAttrs(node, "batch_norm");
      node.attrs = BatchNormAttrs{in.batch_norm().epsilon()};
      return absl::OkStatus();
    case OpType::kResize: {
      if (!in.has_resize()) return MissingAttrs(node, "resize");
      ASSIGN_OR_RETURN(node.attrs, ParseResize(in.resize(), node));
      return absl::OkStatus();
    }
    case OpType::kUnaryMath: {
      if (!in.has_unary_math()) return MissingAttrs(node, "unary_math");
      const auto& u = in.unary_math();
      UnaryMathAttrs a;
      const auto* function =
          std::find_if(std::begin(kAllUnaryFunctions), std::end(kAllUnaryFunctions),
                       [&](UnaryFunction f) { return UnaryFunctionName(f) == u.function(); });
      if (function == std::end(kAllUnaryFunctions)) {
        return absl::InvalidArgumentError(StrCat("node '", node.name,
                                                 "': unknown element-wise function '",
                                                 u.function(), "'"));
      }
      a.function = *function;
      a.alpha = u.alpha();
      a.beta = u.beta();
      node.attrs = a;
      return absl::OkStatus();
    }
    default:
      node.attrs = NoAttrs{};
      return absl::OkStatus();
  }
}

Status ReadIndices(const google::protobuf::RepeatedField<int32_t>& from, int limit,
                   std::string_view what, std::vector<ValueId>& to) {
  for (int32_t v : from) {
    if (v < 0 || v >= limit) {
      return absl::InvalidArgumentError(StrCat(what, ": value index ", v, " out of range [0, ",
                                               limit, ")"));
    }
    to.push_back(v);
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// Hands what protobuf writes to a caller's function.
class SinkStream final : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit SinkStream(absl::FunctionRef<void(std::string_view)> sink) : sink_(sink) {}
  bool Write(const void* buffer, int size) override {
    sink_(std::string_view(static_cast<const char*>(buffer), static_cast<size_t>(size)));
    return true;
  }

 private:
  absl::FunctionRef<void(std::string_view)> sink_;
};

}  // namespace

void SerializeGraphTo(const Graph& graph, absl::FunctionRef<void(std::string_view)> sink) {
  pb::Graph out;
  out.set_format_version(kGraphFormatVersion);
  out.set_name(graph.name());
  for (const Value& value : graph.values()) {
    auto* v = out.add_values();
    v->set_name(value.name);
    Put(value.shape, v->mutable_shape());
  }
  for (const Node& node : graph.nodes()) {
    auto* n = out.add_nodes();
    n->set_name(node.name);
    n->set_op_type(std::string(OpTypeName(node.type)));
    Put(node.inputs, n->mutable_inputs());
    Put(node.outputs, n->mutable_outputs());
    for (const auto& [role, tensor] : node.weights) {
      pb::Tensor& t = (*n->mutable_weights())[role];
      Put(tensor.shape, t.mutable_shape());
      t.mutable_data()->Add(tensor.data.begin(), tensor.data.end());
    }
    WriteAttrs(node, n);
  }
  Put(graph.inputs(), out.mutable_inputs());
  Put(graph.outputs(), out.mutable_outputs());
  // Deterministic: map entries sorted, so equal graphs give equal bytes (the
  // bytes are hashed into model digests).
  SinkStream copying(sink);
  google::protobuf::io::CopyingOutputStreamAdaptor stream(&copying, 1 << 20);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    out.SerializeToCodedStream(&coded);
  }
  stream.Flush();
}

std::string SerializeGraph(const Graph& graph) {
  std::string bytes;
  SerializeGraphTo(graph, [&bytes](std::string_view piece) { bytes.append(piece); });
  return bytes;
}

StatusOr<Graph> ParseGraph(std::string_view bytes) {
  pb::Graph in;
  if (!in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        StrCat("serialized graph: not a valid iosfarm.v1.Graph (", bytes.size(), " bytes)"));
  }
  if (in.format_version() != kGraphFormatVersion) {
    return absl::InvalidArgumentError(StrCat("serialized graph '", in.name(),
                                             "': unsupported format_version ",
                                             in.format_version(), " (this build reads ",
                                             kGraphFormatVersion, ")"));
  }
  const int num_values = in.values_size();
  std::vector<ValueId> inputs;
  RETURN_IF_ERROR(ReadIndices(in.inputs(), num_values, "graph inputs", inputs));
  // Construct the final graph directly, preserving value ids.
  Graph result(in.name());
  for (int i = 0; i < num_values; ++i) {
    const ValueId id = result.AddValue(in.values(i).name());
    result.mutable_value(id).shape = GetVector(in.values(i).shape());
  }
  for (const auto& n : in.nodes()) {
    Node node;
    node.name = n.name();
    auto type = OpTypeFromName(n.op_type());
    if (!type) {
      return absl::InvalidArgumentError(
          StrCat("node '", n.name(), "': unknown op type '", n.op_type(), "'"));
    }
    node.type = *type;
    RETURN_IF_ERROR(ReadIndices(n.inputs(), num_values, StrCat("node '", n.name(), "' inputs"),
                                node.inputs));
    RETURN_IF_ERROR(ReadIndices(n.outputs(), num_values,
                                StrCat("node '", n.name(), "' outputs"), node.outputs));
    if (node.outputs.empty()) {
      return absl::InvalidArgumentError(StrCat("node '", n.name(), "' has no outputs"));
    }
    for (ValueId v : node.outputs) {
      if (result.value(v).producer != kNoNode) {
        return absl::InvalidArgumentError(StrCat("value '", result.value(v).name,
                                                 "' is produced by more than one node"));
      }
    }
    for (const auto& [role, t] : n.weights()) {
      Tensor tensor{GetVector(t.shape()), std::vector<float>(t.data().begin(), t.data().end())};
      node.weights.emplace(role, std::move(tensor));
    }
    RETURN_IF_ERROR(ReadAttrs(n, node));
    result.AddNode(std::move(node));
  }
  for (ValueId v : inputs) {
    if (result.value(v).producer != kNoNode) {
      return absl::InvalidArgumentError(
          StrCat("graph input '", result.value(v).name, "' is also produced by a node"));
    }
    result.MarkInput(v);
  }
  std::vector<ValueId> outputs;
  RETURN_IF_ERROR(ReadIndices(in.outputs(), num_values, "graph outputs", outputs));
  for (ValueId v : outputs) result.AddOutput(v);
  RETURN_IF_ERROR(Validate(result));
  return result;
}

}  // namespace iosfarm::graph
