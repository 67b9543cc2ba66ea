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
// All functions are pure and thread-safe; so is WeightCache.
#ifndef IOSFARM_WORKER_BACKENDS_WEIGHTS_H_
#define IOSFARM_WORKER_BACKENDS_WEIGHTS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
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

// Drawn weights, kept for reuse: a search plans thousands of stages of one
// model on the cuda backend, each drawing the weights of its ops, and drawing
// costs about a nanosecond a value (a stage of inception_v3 holds millions).
// Entries are keyed by all that the values depend on (seed, range, count), so
// one cache serves any number of graphs and can never answer stale values.
// Past `capacity_bytes` the oldest entries are dropped. Thread-safe.
class WeightCache {
 public:
  explicit WeightCache(int64_t capacity_bytes = int64_t{1} << 30)
      : capacity_bytes_(capacity_bytes) {}

  // The values MaterializeWeight gives weight `role` of `node`, of `shape`,
  // when it has no data; drawn at most once while they stay in the cache.
  std::shared_ptr<const std::vector<float>> Draw(const graph::Node& node, std::string_view role,
                                                 const graph::Shape& shape);
  // RandomTensor(shape, seed)'s values, the same way (a stage's random inputs).
  std::shared_ptr<const std::vector<float>> DrawRandom(const graph::Shape& shape, uint64_t seed);

  int64_t bytes() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  // FillUniform(seed, range.low, range.high) over `count` values.
  std::shared_ptr<const std::vector<float>> DrawUniform(uint64_t seed, UniformRange range,
                                                        int64_t count);

  struct Key {
    uint64_t seed;
    float low, high;
    int64_t count;
    friend bool operator==(const Key&, const Key&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.seed, k.low, k.high, k.count);
    }
  };
  const int64_t capacity_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const std::vector<float>>> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Key> order_ ABSL_GUARDED_BY(mu_);  // oldest first
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

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
