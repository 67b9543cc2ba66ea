#include "graph/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/strings.h"
#include "absl/strings/str_join.h"
#include "graph/op_type.h"

namespace iosfarm::graph {
namespace {

// Upper bound on any inferred dimension or element count; keeps hostile
// attributes from overflowing int64 arithmetic downstream.
constexpr int64_t kMaxElements = int64_t{1} << 40;

Status NodeError(const Node& node, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(
      "node '", node.name, "' (", OpTypeName(node.type), "): ", what));
}

std::string Str(const Shape& shape) { return ShapeToString(shape); }

Status CheckInputCount(const Node& node, const std::vector<Shape>& in, size_t min,
                       size_t max) {
  if (in.size() < min || in.size() > max) {
    return NodeError(node, StrCat("expects ", min == max ? "" : "between ", min,
                                        min == max ? "" : StrCat(" and ", max),
                                        " input(s), got ", in.size()));
  }
  return absl::OkStatus();
}

Status CheckRank(const Node& node, const Shape& shape, size_t rank, std::string_view what) {
  if (shape.size() != rank) {
    return NodeError(node, StrCat(what, " must have rank ", rank, ", got ", Str(shape)));
  }
  return absl::OkStatus();
}

Status CheckShapeValid(const Node& node, const Shape& shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1) return NodeError(node, StrCat("non-positive dimension in ", Str(shape)));
    if (d > kMaxElements / elements) {
      return NodeError(node, StrCat("tensor too large: ", Str(shape)));
    }
    elements *= d;
  }
  return absl::OkStatus();
}

StatusOr<const Tensor*> Weight(const Node& node, const std::string& role) {
  auto it = node.weights.find(role);
  if (it == node.weights.end()) {
    return NodeError(node, StrCat("missing weight '", role, "'"));
  }
  return &it->second;
}

// Output size of a sliding window along one spatial dimension.
StatusOr<int64_t> WindowOutput(const Node& node, int64_t in, int64_t kernel, int64_t stride,
                               int64_t dilation, int64_t pad_begin, int64_t pad_end,
                               bool ceil_mode) {
  if (kernel < 1 || stride < 1 || dilation < 1 || pad_begin < 0 || pad_end < 0 ||
      kernel > kMaxElements || stride > kMaxElements || dilation > kMaxElements ||
      pad_begin > kMaxElements || pad_end > kMaxElements) {
    return NodeError(node, StrCat("invalid window: kernel ", kernel, ", stride ", stride,
                                        ", dilation ", dilation, ", pads ", pad_begin, "/",
                                        pad_end));
  }
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t padded = in + pad_begin + pad_end;
  if (padded < span) {
    return NodeError(node, StrCat("window of size ", span, " does not fit input of size ",
                                        in, " with pads ", pad_begin, "/", pad_end));
  }
  int64_t out = ceil_mode ? (padded - span + stride - 1) / stride + 1
                          : (padded - span) / stride + 1;
  // As PyTorch and ONNX Runtime: the last window must start inside the input
  // or the leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

StatusOr<std::vector<Shape>> InferConv(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  RETURN_IF_ERROR(CheckRank(node, in[0], 4, "input"));
  const auto& a = std::get<ConvAttrs>(node.attrs);
  ASSIGN_OR_RETURN(const Tensor* w, Weight(node, "W"));
  const int64_t c = in[0][1];
  if (a.groups < 1 || c % a.groups != 0 || a.out_channels % a.groups != 0) {
    return NodeError(node, StrCat("groups ", a.groups, " must divide input channels ", c,
                                        " and output channels ", a.out_channels));
  }
  const Shape expected_w = {a.out_channels, c / a.groups, a.kernel[0], a.kernel[1]};
  if (w->shape != expected_w) {
    return NodeError(node, StrCat("weight 'W' has shape ", Str(w->shape), ", expected ",
                                        Str(expected_w)));
  }
  if (a.has_bias) {
    ASSIGN_OR_RETURN(const Tensor* b, Weight(node, "B"));
    if (b->shape != Shape{a.out_channels}) {
      return NodeError(node, StrCat("bias 'B' has shape ", Str(b->shape), ", expected [",
                                          a.out_channels, "]"));
    }
  }
  Shape out = {in[0][0], a.out_channels, 0, 0};
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(out[2 + i], WindowOutput(node, in[0][2 + i], a.kernel[i], a.stride[i],
                                              a.dilation[i], a.pads[i], a.pads[2 + i], false));
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferConvTranspose(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  RETURN_IF_ERROR(CheckRank(node, in[0], 4, "input"));
  const auto& a = std::get<ConvTransposeAttrs>(node.attrs);
  ASSIGN_OR_RETURN(const Tensor* w, Weight(node, "W"));
  const int64_t c = in[0][1];
  if (a.groups < 1 || c % a.groups != 0 || a.out_channels < 1 || a.out_channels % a.groups != 0) {
    return NodeError(node, StrCat("groups ", a.groups, " must divide input channels ", c,
                                  " and output channels ", a.out_channels));
  }
  const Shape expected_w = {c, a.out_channels / a.groups, a.kernel[0], a.kernel[1]};
  if (w->shape != expected_w) {
    return NodeError(
        node, StrCat("weight 'W' has shape ", Str(w->shape), ", expected ", Str(expected_w)));
  }
  if (a.has_bias) {
    ASSIGN_OR_RETURN(const Tensor* b, Weight(node, "B"));
    if (b->shape != Shape{a.out_channels}) {
      return NodeError(
          node, StrCat("bias 'B' has shape ", Str(b->shape), ", expected [", a.out_channels, "]"));
    }
  }
  Shape out = {in[0][0], a.out_channels, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t k = a.kernel[i], s = a.stride[i], d = a.dilation[i], op = a.output_padding[i];
    const int64_t top = a.pads[i], bottom = a.pads[2 + i];
    if (k < 1 || s < 1 || d < 1 || top < 0 || bottom < 0 || op < 0 || op >= std::max(s, d) ||
        k > kMaxElements || s > kMaxElements || d > kMaxElements || top > kMaxElements ||
        bottom > kMaxElements || in[0][2 + i] > kMaxElements) {
      return NodeError(
          node, StrCat("invalid transposed window: kernel ", k, ", stride ", s, ", dilation ", d,
                       ", pads ", top, "/", bottom, ", output padding ", op));
    }
    out[2 + i] = (in[0][2 + i] - 1) * s - top - bottom + (k - 1) * d + op + 1;
    if (out[2 + i] < 1) {
      return NodeError(node, StrCat("pads ", top, "/", bottom, " leave no output of an input of ",
                                    in[0][2 + i]));
    }
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferPool(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  RETURN_IF_ERROR(CheckRank(node, in[0], 4, "input"));
  const auto& a = std::get<PoolAttrs>(node.attrs);
  for (int i = 0; i < 2; ++i) {
    if (a.pads[i] >= a.kernel[i] || a.pads[2 + i] >= a.kernel[i]) {
      return NodeError(node, "padding must be smaller than the kernel");
    }
  }
  Shape out = in[0];
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(out[2 + i], WindowOutput(node, in[0][2 + i], a.kernel[i], a.stride[i], 1,
                                              a.pads[i], a.pads[2 + i], a.ceil_mode));
  }
  return std::vector<Shape>{out};
}

StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return NodeError(node, StrCat("axis ", axis, " out of range for rank ", rank));
  }
  return axis < 0 ? axis + r : axis;
}

StatusOr<std::vector<Shape>> InferConcat(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, std::numeric_limits<size_t>::max()));
  const auto& a = std::get<ConcatAttrs>(node.attrs);
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a.axis, in[0].size()));
  Shape out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != out.size()) {
      return NodeError(node, StrCat("input ", i, " has shape ", Str(in[i]),
                                          ", rank differs from ", Str(in[0])));
    }
    for (size_t d = 0; d < out.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) continue;
      if (in[i][d] != out[d]) {
        return NodeError(node, StrCat("input ", i, " has shape ", Str(in[i]),
                                            ", incompatible with ", Str(in[0]),
                                            " outside axis ", axis));
      }
    }
    out[axis] += in[i][axis];
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferSplit(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<SplitAttrs>(node.attrs);
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a.axis, in[0].size()));
  if (a.sizes.empty()) return NodeError(node, "split sizes are empty");
  int64_t total = 0;
  std::vector<Shape> outs;
  for (int64_t size : a.sizes) {
    if (size < 1 || size > in[0][axis]) {
      return NodeError(node, StrCat("invalid split size ", size));
    }
    total += size;
    Shape out = in[0];
    out[axis] = size;
    outs.push_back(out);
  }
  if (total != in[0][axis]) {
    return NodeError(node, StrCat("split sizes sum to ", total, " but axis ", axis,
                                        " of ", Str(in[0]), " has ", in[0][axis]));
  }
  return outs;
}

StatusOr<std::vector<Shape>> InferSlice(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<SliceAttrs>(node.attrs);
  const size_t n = a.axes.size();
  if (a.starts.size() != n || a.ends.size() != n || a.steps.size() != n) {
    return NodeError(node, "axes, starts, ends and steps must have equal lengths");
  }
  Shape out = in[0];
  std::vector<bool> seen(out.size(), false);
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a.axes[i], out.size()));
    if (seen[axis]) return NodeError(node, StrCat("axis ", axis, " sliced twice"));
    seen[axis] = true;
    const int64_t dim = in[0][axis];
    if (a.steps[i] < 1 || a.starts[i] < 0 || a.ends[i] > dim || a.starts[i] >= a.ends[i]) {
      return NodeError(node, StrCat("slice [", a.starts[i], ":", a.ends[i], ":",
                                          a.steps[i], "] on axis ", axis, " of size ", dim,
                                          " is not a non-empty static slice"));
    }
    out[axis] = (a.ends[i] - a.starts[i] + a.steps[i] - 1) / a.steps[i];
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferPad(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<PadAttrs>(node.attrs);
  const size_t rank = in[0].size();
  if (a.pads.size() != 2 * rank) {
    return NodeError(node, StrCat("pads has ", a.pads.size(), " entries, expected ",
                                        2 * rank));
  }
  Shape out = in[0];
  for (size_t d = 0; d < rank; ++d) {
    const int64_t begin = a.pads[d], end = a.pads[d + rank];
    if (begin < 0 || end < 0 || begin > kMaxElements || end > kMaxElements) {
      return NodeError(node, "pads must be non-negative");
    }
    if (a.mode == PadMode::kReflect && (begin >= in[0][d] || end >= in[0][d])) {
      return NodeError(node, "reflect pads must be smaller than the dimension");
    }
    out[d] += begin + end;
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferResize(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  RETURN_IF_ERROR(CheckRank(node, in[0], 4, "input"));
  const auto& a = std::get<ResizeAttrs>(node.attrs);
  for (int d = 0; d < 2; ++d) {
    if (a.size[d] < 1 || a.size[d] > kMaxElements) {
      return NodeError(node, StrCat("output size ", a.size[d], " is out of range"));
    }
    if (!(a.scale[d] > 0.0f) || !std::isfinite(a.scale[d])) {
      return NodeError(node, StrCat("scale ", a.scale[d], " must be positive"));
    }
  }
  return std::vector<Shape>{{in[0][0], in[0][1], a.size[0], a.size[1]}};
}

StatusOr<std::vector<Shape>> InferReshape(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<ReshapeAttrs>(node.attrs);
  Shape out(a.shape.begin(), a.shape.end());
  RETURN_IF_ERROR(CheckShapeValid(node, out));
  if (NumElements(out) != NumElements(in[0])) {
    return NodeError(node, StrCat("cannot reshape ", Str(in[0]), " to ", Str(out)));
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferFlatten(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<FlattenAttrs>(node.attrs);
  const int64_t rank = static_cast<int64_t>(in[0].size());
  if (a.axis < 0 || a.axis > rank) {
    return NodeError(node, StrCat("axis ", a.axis, " out of range for rank ", rank));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a.axis ? outer : inner) *= in[0][d];
  return std::vector<Shape>{{outer, inner}};
}

StatusOr<std::vector<Shape>> InferTranspose(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<TransposeAttrs>(node.attrs);
  if (a.perm.size() != in[0].size()) {
    return NodeError(node, StrCat("perm has ", a.perm.size(), " entries for rank ",
                                        in[0].size()));
  }
  std::vector<bool> seen(a.perm.size(), false);
  Shape out;
  for (int64_t p : a.perm) {
    if (p < 0 || p >= static_cast<int64_t>(seen.size()) || seen[p]) {
      return NodeError(node, StrCat("perm [", absl::StrJoin(a.perm, ","),
                                          "] is not a permutation"));
    }
    seen[p] = true;
    out.push_back(in[0][p]);
  }
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferReduce(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  const auto& a = std::get<ReduceAttrs>(node.attrs);
  std::vector<bool> reduce(in[0].size(), a.axes.empty());
  for (int64_t axis : a.axes) {
    ASSIGN_OR_RETURN(int64_t normalized, NormalizeAxis(node, axis, in[0].size()));
    reduce[normalized] = true;
  }
  Shape out;
  for (size_t d = 0; d < in[0].size(); ++d) {
    if (!reduce[d]) {
      out.push_back(in[0][d]);
    } else if (a.keepdims) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferGemm(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  RETURN_IF_ERROR(CheckRank(node, in[0], 2, "input A"));
  const auto& a = std::get<GemmAttrs>(node.attrs);
  ASSIGN_OR_RETURN(const Tensor* b, Weight(node, "B"));
  if (b->shape.size() != 2) {
    return NodeError(node, StrCat("weight 'B' must be 2-D, got ", Str(b->shape)));
  }
  const int64_t m = a.trans_a ? in[0][1] : in[0][0];
  const int64_t k = a.trans_a ? in[0][0] : in[0][1];
  const int64_t kb = a.trans_b ? b->shape[1] : b->shape[0];
  const int64_t n = a.trans_b ? b->shape[0] : b->shape[1];
  if (k != kb) {
    return NodeError(node, StrCat("inner dimensions differ: A ", Str(in[0]), " B ",
                                        Str(b->shape)));
  }
  auto c = node.weights.find("C");
  if (c != node.weights.end()) {
    auto broadcast = BroadcastShapes(c->second.shape, {m, n});
    if (!broadcast.ok() || *broadcast != Shape{m, n}) {
      return NodeError(node, StrCat("bias 'C' of shape ", Str(c->second.shape),
                                          " does not broadcast to [", m, ",", n, "]"));
    }
  }
  return std::vector<Shape>{{m, n}};
}

StatusOr<std::vector<Shape>> InferMatMul(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 2));
  Shape a = in[0];
  Shape b;
  if (in.size() == 2) {
    b = in[1];
  } else {
    ASSIGN_OR_RETURN(const Tensor* w, Weight(node, "B"));
    b = w->shape;
  }
  if (a.empty() || b.empty()) return NodeError(node, "operands must have rank >= 1");
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  if (a.back() != b[b.size() - 2]) {
    return NodeError(node, StrCat("inner dimensions differ: ", Str(in[0]), " x ",
                                        Str(b_vector ? Shape{b[0]} : b)));
  }
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok()) return NodeError(node, "batch dimensions do not broadcast");
  Shape out = *batch;
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  if (out.empty()) out.push_back(1);
  return std::vector<Shape>{out};
}

StatusOr<std::vector<Shape>> InferBatchNorm(const Node& node, const std::vector<Shape>& in) {
  RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
  if (in[0].size() < 2) return NodeError(node, "input must have rank >= 2");
  for (const char* role : {"scale", "bias", "mean", "var"}) {
    ASSIGN_OR_RETURN(const Tensor* w, Weight(node, role));
    if (w->shape != Shape{in[0][1]}) {
      return NodeError(node, StrCat("weight '", role, "' has shape ", Str(w->shape),
                                          ", expected [", in[0][1], "]"));
    }
  }
  return std::vector<Shape>{in[0]};
}

}  // namespace

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          StrCat("shapes ", Str(a), " and ", Str(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

StatusOr<std::vector<Shape>> InferNodeShapes(const Node& node,
                                             const std::vector<Shape>& input_shapes) {
  if (!AttributesMatch(node.type, node.attrs)) {
    return NodeError(node, "attributes do not match the op type");
  }
  for (const Shape& shape : input_shapes) {
    if (shape.empty()) return NodeError(node, "an input has no known shape");
    RETURN_IF_ERROR(CheckShapeValid(node, shape));
  }
  const auto& in = input_shapes;
  StatusOr<std::vector<Shape>> result = std::vector<Shape>{};
  switch (node.type) {
    case OpType::kConstant: {
      RETURN_IF_ERROR(CheckInputCount(node, in, 0, 0));
      ASSIGN_OR_RETURN(const Tensor* value, Weight(node, "value"));
      Shape shape = value->shape.empty() ? Shape{1} : value->shape;
      result = std::vector<Shape>{shape};
      break;
    }
    case OpType::kConv:
      result = InferConv(node, in);
      break;
    case OpType::kConvTranspose:
      result = InferConvTranspose(node, in);
      break;
    case OpType::kMaxPool:
    case OpType::kAveragePool:
      result = InferPool(node, in);
      break;
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
      RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
      RETURN_IF_ERROR(CheckRank(node, in[0], 4, "input"));
      result = std::vector<Shape>{{in[0][0], in[0][1], 1, 1}};
      break;
    IOSFARM_ACTIVATION_OP_CASES:
    case OpType::kIdentity:
    case OpType::kDropout:
      RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
      result = std::vector<Shape>{in[0]};
      break;
    case OpType::kSoftmax: {
      RETURN_IF_ERROR(CheckInputCount(node, in, 1, 1));
      const auto& a = std::get<SoftmaxAttrs>(node.attrs);
      RETURN_IF_ERROR(NormalizeAxis(node, a.axis, in[0].size()).status());
      result = std::vector<Shape>{in[0]};
      break;
    }
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv: {
      RETURN_IF_ERROR(CheckInputCount(node, in, 2, 2));
      auto out = BroadcastShapes(in[0], in[1]);
      if (!out.ok()) return NodeError(node, ToStd(out.status().message()));
      result = std::vector<Shape>{*out};
      break;
    }
    case OpType::kConcat:
      result = InferConcat(node, in);
      break;
    case OpType::kSplit:
      result = InferSplit(node, in);
      break;
    case OpType::kSlice:
      result = InferSlice(node, in);
      break;
    case OpType::kPad:
      result = InferPad(node, in);
      break;
    case OpType::kReshape:
      result = InferReshape(node, in);
      break;
    case OpType::kFlatten:
      result = InferFlatten(node, in);
      break;
    case OpType::kTranspose:
      result = InferTranspose(node, in);
      break;
    IOSFARM_REDUCE_OP_CASES:
      result = InferReduce(node, in);
      break;
    case OpType::kGemm:
      result = InferGemm(node, in);
      break;
    case OpType::kMatMul:
      result = InferMatMul(node, in);
      break;
    case OpType::kBatchNormalization:
      result = InferBatchNorm(node, in);
      break;
    case OpType::kResize:
      result = InferResize(node, in);
      break;
  }
  if (!result.ok()) return result.status();
  for (const Shape& shape : *result) RETURN_IF_ERROR(CheckShapeValid(node, shape));
  if (!node.outputs.empty() && result->size() != node.outputs.size()) {
    return NodeError(node, StrCat("has ", node.outputs.size(), " outputs, expected ",
                                        result->size()));
  }
  return result;
}

Status InferShapes(Graph& graph) {
  for (ValueId input : graph.inputs()) {
    if (graph.value(input).shape.empty()) {
      return absl::InvalidArgumentError(
          StrCat("graph input '", graph.value(input).name, "' has no shape"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<NodeId> order, graph.TopologicalOrder());
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    std::vector<Shape> input_shapes;
    for (ValueId v : node.inputs) {
      const Value& value = graph.value(v);
      if (value.shape.empty()) {
        return NodeError(node, StrCat("input '", value.name,
                                            "' is produced by no node and is not a graph input"));
      }
      input_shapes.push_back(value.shape);
    }
    ASSIGN_OR_RETURN(std::vector<Shape> outputs, InferNodeShapes(node, input_shapes));
    for (size_t i = 0; i < outputs.size() && i < node.outputs.size(); ++i) {
      graph.mutable_value(node.outputs[i]).shape = std::move(outputs[i]);
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::graph
