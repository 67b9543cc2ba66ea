// Shapes and constant tensors of the graph IR.
//
// Shapes are static: every dimension is a positive int64 (NCHW for 4-D
// activations). A Tensor holds fp32 constant data (weights, folded constants);
// its data may be empty, meaning "values not materialised" (zoo models), in
// which case executors fill it with deterministic random values.
#ifndef IOSFARM_GRAPH_TENSOR_H_
#define IOSFARM_GRAPH_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace iosfarm::graph {

using Shape = std::vector<int64_t>;

// Product of the dimensions; 1 for a scalar (empty shape).
int64_t NumElements(const Shape& shape);

// "[1,3,224,224]".
std::string ShapeToString(const Shape& shape);

struct Tensor {
  Shape shape;
  std::vector<float> data;  // empty, or exactly NumElements(shape) values

  bool has_data() const { return !data.empty(); }
  int64_t num_elements() const { return NumElements(shape); }
};

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_TENSOR_H_
