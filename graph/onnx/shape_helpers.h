// Shape arithmetic shared by constant folding and op conversion: axis
// normalisation, Reshape target resolution, Slice clamping, auto_pad.
//
// All functions check their integer arithmetic for overflow and report errors
// through the NodeView (naming the node and the field).
#ifndef IOSFARM_GRAPH_ONNX_SHAPE_HELPERS_H_
#define IOSFARM_GRAPH_ONNX_SHAPE_HELPERS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/onnx/onnx_node.h"

namespace iosfarm::graph::onnx_import {

// Batch override in effect: graph inputs had batch `original` in the file and
// are imported with batch `batch`.
struct BatchRewrite {
  int64_t original = 1;
  int64_t batch = 1;
};

// `axis` in [-rank, rank) mapped to [0, rank); error names `field`.
StatusOr<int64_t> NormalizeAxis(const NodeView& node, int64_t axis, int64_t rank,
                                std::string_view field);

// Normalises a list of axes; error on out-of-range or repeated axes.
StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeView& node, const std::vector<int64_t>& axes,
                                             int64_t rank, std::string_view field);

// a * b and a + b, or an error naming `what` on int64 overflow.
StatusOr<int64_t> CheckedMul(const NodeView& node, int64_t a, int64_t b, std::string_view what);
StatusOr<int64_t> CheckedAdd(const NodeView& node, int64_t a, int64_t b, std::string_view what);

// Resolves an ONNX Reshape target against `input` dims (each >= 0): 0 copies
// the input dimension (unless allow_zero), one -1 is inferred. The element
// counts must match. With `batch` set, a target whose first entry is the
// file's batch while the input's first dimension is the new batch gets the
// new batch (exporters bake the traced batch into Reshape constants).
StatusOr<std::vector<int64_t>> ResolveReshapeTarget(const NodeView& node,
                                                    const std::vector<int64_t>& input,
                                                    std::vector<int64_t> target, bool allow_zero,
                                                    const std::optional<BatchRewrite>& batch);

// One axis of a Slice after ONNX clamping: elements start, start+step, ...
// (count of them), step != 0.
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};
StatusOr<SliceRange> ClampSlice(const NodeView& node, int64_t dim, int64_t start, int64_t end,
                                int64_t step);

// Sizes of a Split of a dimension of size `dim` into `num_outputs` parts:
// `split` when given (the input at opset 13+, the attribute before), else
// equal parts (dim must divide evenly).
StatusOr<std::vector<int64_t>> ResolveSplitSizes(const NodeView& node, int64_t dim,
                                                 const std::optional<std::vector<int64_t>>& split,
                                                 int num_outputs);

// Explicit {top, left, bottom, right} pads of a 2-D window op from auto_pad
// (NOTSET, SAME_UPPER, SAME_LOWER, VALID) and the ONNX "pads" attribute
// ([h_begin, w_begin, h_end, w_end]). Checks kernel/stride/dilation >= 1.
StatusOr<std::array<int64_t, 4>> ResolveWindowPads(
    const NodeView& node, const std::string& auto_pad, const std::array<int64_t, 2>& input_hw,
    const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
    const std::array<int64_t, 2>& dilation, const std::optional<std::vector<int64_t>>& pads);

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_SHAPE_HELPERS_H_
