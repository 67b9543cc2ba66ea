// Conversion of ONNX nodes (those not folded to constants) into IR nodes.
//
// ConvertNode maps one ONNX node onto one IR node (or none: Cast to float is
// an Identity), reading weights and shape operands as constants from the
// ImportContext. Supported: Conv, MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool, Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Add, Sub,
// Mul, Div, Gemm, MatMul, BatchNormalization, Identity, Dropout (layer ops,
// op_converters.cc) and Concat, Split, Slice, Pad, Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, ReduceMean, Softmax, Cast (tensor ops,
// tensor_op_converters.cc), Resize (resize_converter.cc) and the element-wise
// functions LeakyRelu, Elu, Selu, Softplus, Mish, Erf, Sqrt, Exp, Log, Neg,
// Abs, Reciprocal and Pow (unary_math_converter.cc).
// Anything else, and any unsupported attribute
// value, is InvalidArgument naming the node and the field.
#ifndef IOSFARM_GRAPH_ONNX_OP_CONVERTERS_H_
#define IOSFARM_GRAPH_ONNX_OP_CONVERTERS_H_

#include <array>
#include <string_view>

#include "common/status.h"
#include "graph/onnx/import_context.h"
#include "graph/onnx/onnx_node.h"

namespace iosfarm::graph::onnx_import {

Status ConvertNode(const NodeView& node, ImportContext& ctx);

// True when ConvertNode handles `op_type` (default domain).
bool HasConverter(std::string_view op_type);

namespace converters_internal {

// Fails unless the node has between min and max inputs (absent optional
// inputs count) and exactly `outputs` outputs, or at most `outputs` when
// the extra ones are unused.
Status CheckArity(const NodeView& node, const ImportContext& ctx, int min_inputs, int max_inputs,
                  int outputs);

// Attribute `name` of two ints (H, W); {default_value, default_value} when
// absent.
StatusOr<std::array<int64_t, 2>> SpatialPair(const NodeView& node, std::string_view name,
                                             int64_t default_value);
// Fails unless attribute 'kernel_shape', when given, is the 4-D weight's
// [kH, kW] (dims 2 and 3).
Status CheckKernelShape(const NodeView& node, const ConstTensor& w);

// Tensor ops (tensor_op_converters.cc).
Status ConvertConcat(const NodeView& node, ImportContext& ctx);
Status ConvertSplit(const NodeView& node, ImportContext& ctx);
Status ConvertSlice(const NodeView& node, ImportContext& ctx);
Status ConvertPad(const NodeView& node, ImportContext& ctx);
Status ConvertReshape(const NodeView& node, ImportContext& ctx);
Status ConvertFlatten(const NodeView& node, ImportContext& ctx);
Status ConvertTranspose(const NodeView& node, ImportContext& ctx);
Status ConvertSqueezeOrUnsqueeze(const NodeView& node, ImportContext& ctx);
// ReduceMean, ReduceSum, ReduceMax, ReduceMin (`type`).
Status ConvertReduce(const NodeView& node, ImportContext& ctx, OpType type);
Status ConvertSoftmax(const NodeView& node, ImportContext& ctx);
Status ConvertCast(const NodeView& node, ImportContext& ctx);

// ConvTranspose (conv_transpose_converter.cc).
Status ConvertConvTranspose(const NodeView& node, ImportContext& ctx);

// Resize (resize_converter.cc).
Status ConvertResize(const NodeView& node, ImportContext& ctx);

// Operators imported as several IR nodes (normalization_converters.cc):
// PRelu, InstanceNormalization, LayerNormalization.
Status ConvertPRelu(const NodeView& node, ImportContext& ctx);
Status ConvertInstanceNormalization(const NodeView& node, ImportContext& ctx);
Status ConvertLayerNormalization(const NodeView& node, ImportContext& ctx);

// One UnaryMath node of `function` (unary_math_converter.cc): LeakyRelu,
// Elu, Selu, Softplus, Mish, Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal, and
// Pow of a constant scalar exponent.
Status ConvertUnaryMath(const NodeView& node, ImportContext& ctx, UnaryFunction function);

}  // namespace converters_internal
}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_OP_CONVERTERS_H_
