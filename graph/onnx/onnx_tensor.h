// Constant tensors of an ONNX model: decoding TensorProto with checks.
//
// A ConstTensor is an initializer, a Constant node's value or the result of
// constant folding. Element types are collapsed into three kinds: floating
// point (fp32/fp16/bf16/double, held as fp32), integer (all int/uint widths,
// held as int64) and bool (held as int64 0/1). Dimensions may be 0 (empty
// tensors occur in shape arithmetic) but never negative.
//
// Decoding checks every size before allocating: dimensions must be
// non-negative, the element count must not overflow and must stay within the
// caller's limit, and the stored data must hold exactly that many elements.
// Errors are InvalidArgument naming the tensor (`what`). Thread-compatible.
#ifndef IOSFARM_GRAPH_ONNX_ONNX_TENSOR_H_
#define IOSFARM_GRAPH_ONNX_ONNX_TENSOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace iosfarm::graph::onnx_import {

enum class ConstKind { kFloat, kInt, kBool };

// Highest tensor rank the importer accepts (keeps per-element index
// arithmetic of folding cheap on hostile inputs; real models stay below 8).
inline constexpr int64_t kMaxRank = 32;

// "float", "int", "bool".
std::string_view ConstKindName(ConstKind kind);

struct ConstTensor {
  ConstKind kind = ConstKind::kFloat;
  std::vector<int64_t> dims;  // empty for a scalar; each >= 0
  std::vector<float> floats;  // kind == kFloat: one value per element
  std::vector<int64_t> ints;  // kind == kInt or kBool (0/1): one per element

  int64_t num_elements() const {
    return static_cast<int64_t>(kind == ConstKind::kFloat ? floats.size() : ints.size());
  }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_float() const { return kind == ConstKind::kFloat; }
  // Element i as a double (ints convert exactly up to 2^53).
  double AsDouble(int64_t i) const {
    return is_float() ? static_cast<double>(floats[i]) : static_cast<double>(ints[i]);
  }
};

ConstTensor MakeIntTensor(std::vector<int64_t> dims, std::vector<int64_t> values);
ConstTensor MakeFloatTensor(std::vector<int64_t> dims, std::vector<float> values);
// A tensor of `kind` with `count` zero elements (caller checked the count).
ConstTensor MakeZeroTensor(ConstKind kind, std::vector<int64_t> dims, int64_t count);

// Product of `dims`; InvalidArgument naming `what` when the rank exceeds
// kMaxRank, a dimension is negative or the product of the non-zero dimensions exceeds
// `max_elements` (checked without overflow, so partial products of valid dims are safe).
StatusOr<int64_t> CheckedElementCount(const std::vector<int64_t>& dims, int64_t max_elements,
                                      std::string_view what);

// ONNX element type name, e.g. "FLOAT16"; "type <n>" for unknown numbers.
std::string OnnxDataTypeName(int32_t data_type);

// Kind an ONNX element type maps to; error for STRING, COMPLEX, UNDEFINED, ...
StatusOr<ConstKind> KindOfDataType(int32_t data_type, std::string_view what);

// Decodes `proto` (raw_data or the typed field) into a ConstTensor. Errors:
// external or segmented data, unsupported element types, negative or
// oversized dimensions, data length that does not match the dimensions.
StatusOr<ConstTensor> ConstTensorFromProto(const onnx::TensorProto& proto, int64_t max_elements,
                                           std::string_view what);

// The tensor as a list of integers (integer or bool kind, rank 0 or 1).
StatusOr<std::vector<int64_t>> ToIntList(const ConstTensor& tensor, std::string_view what);

// The single element of a one-element tensor, as a double.
StatusOr<double> ToScalar(const ConstTensor& tensor, std::string_view what);

// IR weight tensor: fp32 data; integer and bool values convert to float.
// A scalar becomes shape [1]. Error when a dimension is 0.
StatusOr<Tensor> ToIrTensor(const ConstTensor& tensor, std::string_view what);

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_ONNX_TENSOR_H_
