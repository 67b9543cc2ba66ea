#include "worker/backends/weights.h"

#include <cmath>
#include <variant>

namespace iosfarm::worker {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// The range of RandomTensor's values.
constexpr UniformRange kRandomRange{-1.0f, 1.0f};

uint64_t SplitMix64(uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes of `text`, continuing from `hash`.
uint64_t Fnv1a(uint64_t hash, std::string_view text) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001B3ULL;
  }
  return hash;
}

UniformRange Symmetric(double bound) {
  return {static_cast<float>(-bound), static_cast<float>(bound)};
}

// Fan-in of a Conv, ConvTranspose, Gemm or MatMul weight; 0 when it cannot
// be told.
int64_t FanIn(const graph::Node& node, const graph::Shape& shape) {
  switch (node.type) {
    case graph::OpType::kConv:
      // [out, in / groups, kh, kw]
      return shape.size() == 4 ? shape[1] * shape[2] * shape[3] : 0;
    case graph::OpType::kConvTranspose:
      // [in, out / groups, kh, kw]: PyTorch's fan-in of a transposed conv.
      return shape.size() == 4 ? shape[1] * shape[2] * shape[3] : 0;
    case graph::OpType::kGemm: {
      if (shape.size() != 2) return 0;
      const auto* attrs = std::get_if<graph::GemmAttrs>(&node.attrs);
      const bool trans_b = attrs != nullptr && attrs->trans_b;
      return trans_b ? shape[1] : shape[0];
    }
    case graph::OpType::kMatMul:
      // [..., K, N], or [K] for a vector.
      return shape.size() >= 2 ? shape[shape.size() - 2] : (shape.empty() ? 0 : shape[0]);
    default:
      return 0;
  }
}

}  // namespace

uint64_t WeightSeed(std::string_view node_name, std::string_view role) {
  uint64_t hash = Fnv1a(0xCBF29CE484222325ULL, node_name);
  hash = Fnv1a(hash, std::string_view("\0", 1));
  hash = Fnv1a(hash, role);
  return SplitMix64(hash);
}

uint64_t InputSeed(uint64_t seed, int input_index) {
  return SplitMix64(SplitMix64(seed) ^ (static_cast<uint64_t>(input_index) + 1) * kGolden);
}

void FillUniform(uint64_t seed, float low, float high, std::vector<float>& data) {
  const uint64_t base = SplitMix64(seed);
  const double width = static_cast<double>(high) - static_cast<double>(low);
  for (size_t i = 0; i < data.size(); ++i) {
    // 24 random bits: exactly representable, u in [0, 1).
    const uint64_t bits = SplitMix64(base + static_cast<uint64_t>(i) * kGolden) >> 40;
    const double u = static_cast<double>(bits) / static_cast<double>(1 << 24);
    data[i] = static_cast<float>(static_cast<double>(low) + width * u);
  }
}

UniformRange WeightRange(const graph::Node& node, std::string_view role,
                         const graph::Shape& shape) {
  using graph::OpType;
  if (node.type == OpType::kBatchNormalization) {
    if (role == "scale" || role == "var") return {0.8f, 1.2f};
    return Symmetric(0.1);
  }
  const bool is_matrix =
      ((node.type == OpType::kConv || node.type == OpType::kConvTranspose) && role == "W") ||
      (node.type == OpType::kGemm && role == "B") || (node.type == OpType::kMatMul && role == "B");
  if (is_matrix) {
    const int64_t fan_in = FanIn(node, shape);
    if (fan_in <= 0) return Symmetric(1.0);
    double gain = 1.0;
    if (const auto* conv = std::get_if<graph::ConvAttrs>(&node.attrs)) {
      if (conv->activation == graph::Activation::kRelu ||
          conv->activation == graph::Activation::kClip) {
        gain = std::sqrt(2.0);
      }
    }
    return Symmetric(gain * std::sqrt(3.0 / static_cast<double>(fan_in)));
  }
  if (((node.type == OpType::kConv || node.type == OpType::kConvTranspose) && role == "B") ||
      (node.type == OpType::kGemm && role == "C")) {
    return Symmetric(0.1);
  }
  return Symmetric(1.0);
}

graph::Tensor MaterializeWeight(const graph::Node& node, std::string_view role,
                                const graph::Tensor& tensor) {
  if (tensor.has_data()) return tensor;
  graph::Tensor filled;
  filled.shape = tensor.shape;
  filled.data.resize(static_cast<size_t>(tensor.num_elements()));
  const UniformRange range = WeightRange(node, role, tensor.shape);
  FillUniform(WeightSeed(node.name, role), range.low, range.high, filled.data);
  return filled;
}

std::shared_ptr<const std::vector<float>> WeightCache::Draw(const graph::Node& node,
                                                            std::string_view role,
                                                            const graph::Shape& shape) {
  return DrawUniform(WeightSeed(node.name, role), WeightRange(node, role, shape),
                     graph::NumElements(shape));
}

std::shared_ptr<const std::vector<float>> WeightCache::DrawRandom(const graph::Shape& shape,
                                                                  uint64_t seed) {
  return DrawUniform(seed, kRandomRange, graph::NumElements(shape));
}

std::shared_ptr<const std::vector<float>> WeightCache::DrawUniform(uint64_t seed,
                                                                   UniformRange range,
                                                                   int64_t count) {
  const Key key{seed, range.low, range.high, count};
  std::shared_ptr<const std::vector<float>> values;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++hits_;
      values = it->second;
    }
  }
  if (values == nullptr) {
    auto drawn = std::make_shared<std::vector<float>>(static_cast<size_t>(key.count));
    FillUniform(key.seed, key.low, key.high, *drawn);
    values = drawn;
    const int64_t entry_bytes = key.count * static_cast<int64_t>(sizeof(float));
    absl::MutexLock lock(&mu_);
    ++misses_;
    if (entry_bytes <= capacity_bytes_ && entries_.emplace(key, values).second) {
      order_.push_back(key);
      bytes_ += entry_bytes;
      while (bytes_ > capacity_bytes_) {
        bytes_ -= entries_.at(order_.front())->size() * static_cast<int64_t>(sizeof(float));
        entries_.erase(order_.front());
        order_.pop_front();
      }
    }
  }
  return values;
}

int64_t WeightCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

int64_t WeightCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

int64_t WeightCache::misses() const {
  absl::MutexLock lock(&mu_);
  return misses_;
}

std::map<std::string, graph::Tensor> MaterializeNodeWeights(const graph::Node& node) {
  std::map<std::string, graph::Tensor> weights;
  for (const auto& [role, tensor] : node.weights) {
    weights.emplace(role, MaterializeWeight(node, role, tensor));
  }
  return weights;
}

bool NeedsMaterialization(const graph::Node& node) {
  for (const auto& [role, tensor] : node.weights) {
    if (!tensor.has_data()) return true;
  }
  return false;
}

graph::Graph MaterializeWeights(const graph::Graph& graph) {
  graph::Graph copy = graph;
  for (graph::NodeId id = 0; id < copy.num_nodes(); ++id) {
    graph::Node& node = copy.mutable_node(id);
    if (NeedsMaterialization(node)) node.weights = MaterializeNodeWeights(node);
  }
  return copy;
}

graph::Tensor RandomTensor(const graph::Shape& shape, uint64_t seed) {
  graph::Tensor tensor;
  tensor.shape = shape;
  tensor.data.resize(static_cast<size_t>(graph::NumElements(shape)));
  FillUniform(seed, kRandomRange.low, kRandomRange.high, tensor.data);
  return tensor;
}

std::vector<graph::Tensor> MakeGraphInputs(const graph::Graph& graph, uint64_t seed) {
  std::vector<graph::Tensor> inputs;
  inputs.reserve(graph.inputs().size());
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    inputs.push_back(
        RandomTensor(graph.value(graph.inputs()[i]).shape, InputSeed(seed, static_cast<int>(i))));
  }
  return inputs;
}

}  // namespace iosfarm::worker
