// Deterministic weights and inputs for executing graphs whose weights have
// shapes only (zoo models) or whose inputs the caller does not supply.
//
// Every backend and the reference executor fill a weight without data with
// the same values, so outputs of different backends can be compared:
//  - the values of weight `role` of node `name` come from a counter-based
//    generator seeded with WeightSeed(name, role), so they depend on nothing
//    else (not on node ids, order, or which other nodes exist);
//  - the ranges keep activations of deep models bounded in fp32: conv, Gemm
//    and MatMul weights are U(-b, b) with b = sqrt(3 / fan_in), times sqrt(2)
//    when a Conv fuses Relu or Clip (variance preserving, He/LeCun style);
//    biases U(-0.1, 0.1); BatchNormalization scale and var U(0.8, 1.2), bias
//    and mean U(-0.1, 0.1); Constant values and any other role U(-1, 1).
// Weights that already have data are never changed.
//
// Graph inputs are U(-1, 1), input i seeded with InputSeed(seed, i).
//
// All functions are pure and thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_WEIGHTS_H_
#define IOSFARM_WORKER_BACKENDS_WEIGHTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace iosfarm::worker {

// Seed of weight `role` of the node named `node_name`.
uint64_t WeightSeed(std::string_view node_name, std::string_view role);

// Seed of graph input number `input_index` for a run seeded with `seed`.
uint64_t InputSeed(uint64_t seed, int input_index);

// Element i of `data` = low + (high - low) * u_i with u_i in [0, 1) a pure
// function of (seed, i). Platform independent.
void FillUniform(uint64_t seed, float low, float high, std::vector<float>& data);

struct UniformRange {
  float low = -1.0f;
  float high = 1.0f;
};

// The range MaterializeWeight draws weight `role` of `node` from (see above).
UniformRange WeightRange(const graph::Node& node, std::string_view role,
                         const graph::Shape& shape);

// `tensor` (weight `role` of `node`) with data: a copy of it if it has data,
// else filled as described above.
graph::Tensor MaterializeWeight(const graph::Node& node, std::string_view role,
                                const graph::Tensor& tensor);

// Every weight of `node` with data.
std::map<std::string, graph::Tensor> MaterializeNodeWeights(const graph::Node& node);

// True when some weight of `node` has no data.
bool NeedsMaterialization(const graph::Node& node);

// A copy of `graph` in which every weight has data.
graph::Graph MaterializeWeights(const graph::Graph& graph);

// A tensor of `shape` with values U(-1, 1) drawn with `seed`.
graph::Tensor RandomTensor(const graph::Shape& shape, uint64_t seed);

// One tensor per graph input, in graph.inputs() order, input i being
// RandomTensor(its shape, InputSeed(seed, i)). Input shapes must be known.
std::vector<graph::Tensor> MakeGraphInputs(const graph::Graph& graph, uint64_t seed);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_WEIGHTS_H_
