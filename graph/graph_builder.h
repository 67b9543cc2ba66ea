// GraphBuilder: builds a Graph node by node with shapes inferred as it goes.
//
// Used by the model zoo and by tests. Each method adds one node, infers its
// output shape immediately and returns the output value id. A shape error is a
// programmer error in a builder and is recorded: status() returns the first
// error and Finish() fails with it. Node names are made unique by appending
// "_<n>" when a name repeats. Not thread-safe.
#ifndef IOSFARM_GRAPH_GRAPH_BUILDER_H_
#define IOSFARM_GRAPH_GRAPH_BUILDER_H_

#include <array>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

struct ConvSpec {
  int64_t out_channels = 0;
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  // Symmetric padding {h, w}; use `pads` for asymmetric padding.
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 4> pads = {-1, -1, -1, -1};  // overrides padding if set
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
  bool bias = true;
  Activation activation = Activation::kNone;
  float clip_min = 0.0f;
  float clip_max = 6.0f;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name) : graph_(std::move(graph_name)) {}

  ValueId Input(const std::string& name, Shape shape);
  void Output(ValueId value) { graph_.AddOutput(value); }

  // Weights are created with shapes only (no data).
  ValueId Conv(ValueId x, const ConvSpec& spec, const std::string& name);
  ValueId MaxPool(ValueId x, std::array<int64_t, 2> kernel,
                  std::array<int64_t, 2> stride, std::array<int64_t, 4> pads,
                  const std::string& name, bool ceil_mode = false);
  ValueId AveragePool(ValueId x, std::array<int64_t, 2> kernel,
                      std::array<int64_t, 2> stride, std::array<int64_t, 4> pads,
                      bool count_include_pad, const std::string& name,
                      bool ceil_mode = false);
  ValueId GlobalAveragePool(ValueId x, const std::string& name);
  ValueId Relu(ValueId x, const std::string& name);
  ValueId Clip(ValueId x, float min, float max, const std::string& name);
  ValueId Sigmoid(ValueId x, const std::string& name);
  ValueId HardSigmoid(ValueId x, float alpha, float beta, const std::string& name);
  ValueId HardSwish(ValueId x, const std::string& name);
  ValueId Tanh(ValueId x, const std::string& name);
  // UnaryMath: `function` of each element (UnaryMathAttrs).
  ValueId UnaryMath(ValueId x, UnaryFunction function, const std::string& name,
                    float alpha = 0.0f, float beta = 0.0f);
  ValueId Binary(OpType type, ValueId a, ValueId b, const std::string& name);
  ValueId Add(ValueId a, ValueId b, const std::string& name) {
    return Binary(OpType::kAdd, a, b, name);
  }
  ValueId Mul(ValueId a, ValueId b, const std::string& name) {
    return Binary(OpType::kMul, a, b, name);
  }
  ValueId Concat(const std::vector<ValueId>& xs, int64_t axis, const std::string& name);
  std::vector<ValueId> Split(ValueId x, int64_t axis, std::vector<int64_t> sizes,
                             const std::string& name);
  ValueId Pad(ValueId x, std::vector<int64_t> pads, const std::string& name);
  ValueId Flatten(ValueId x, int64_t axis, const std::string& name);
  ValueId Reshape(ValueId x, std::vector<int64_t> shape, const std::string& name);
  ValueId Transpose(ValueId x, std::vector<int64_t> perm, const std::string& name);
  ValueId ReduceMean(ValueId x, std::vector<int64_t> axes, bool keepdims,
                     const std::string& name);
  // Gemm with weight B [out_features, K] (trans_b) and bias C [out_features].
  ValueId Linear(ValueId x, int64_t out_features, const std::string& name);
  ValueId Softmax(ValueId x, int64_t axis, const std::string& name);
  ValueId BatchNorm(ValueId x, const std::string& name);
  // ConvTranspose of NCHW `x` (ConvTransposeAttrs); weights with shapes only.
  ValueId ConvTranspose(ValueId x, const ConvTransposeAttrs& attrs, const std::string& name);
  // Resize of NCHW `x` to `attrs.size` (ResizeAttrs).
  ValueId Resize(ValueId x, const ResizeAttrs& attrs, const std::string& name);

  // Adds an arbitrary node (attrs must match type); returns its outputs.
  std::vector<ValueId> AddNode(OpType type, Attributes attrs,
                               std::vector<ValueId> inputs, const std::string& name,
                               std::map<std::string, Tensor> weights = {},
                               int num_outputs = 1);

  const Shape& shape(ValueId value) const { return graph_.value(value).shape; }
  const Graph& graph() const { return graph_; }
  const Status& status() const { return status_; }

  // Returns the graph, or the first recorded error.
  StatusOr<Graph> Finish() &&;

 private:
  std::string UniqueName(const std::string& name);

  Graph graph_;
  Status status_;
  std::set<std::string> names_;
};

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_GRAPH_BUILDER_H_
