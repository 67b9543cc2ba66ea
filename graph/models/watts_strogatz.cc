#include "graph/models/watts_strogatz.h"

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace iosfarm::graph::models {
namespace {

// SplitMix64 (Steele, Lea and Flood, 2014): a tiny generator whose output is
// fully specified, unlike the std:: distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n > 0.
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<std::vector<int>> RandomDag::Predecessors() const {
  std::vector<std::vector<int>> preds(num_nodes);
  for (const auto& [u, v] : edges) preds[v].push_back(u);
  for (auto& p : preds) std::sort(p.begin(), p.end());
  return preds;
}

std::vector<int> RandomDag::InputNodes() const {
  std::vector<bool> has_pred(num_nodes, false);
  for (const auto& e : edges) has_pred[e.second] = true;
  std::vector<int> nodes;
  for (int i = 0; i < num_nodes; ++i) {
    if (!has_pred[i]) nodes.push_back(i);
  }
  return nodes;
}

std::vector<int> RandomDag::OutputNodes() const {
  std::vector<bool> has_succ(num_nodes, false);
  for (const auto& e : edges) has_succ[e.first] = true;
  std::vector<int> nodes;
  for (int i = 0; i < num_nodes; ++i) {
    if (!has_succ[i]) nodes.push_back(i);
  }
  return nodes;
}

StatusOr<RandomDag> WattsStrogatzDag(int n, int k, double p, uint64_t seed) {
  if (k <= 0 || k % 2 != 0 || k >= n || n > 100000 || !(p >= 0.0 && p <= 1.0)) {
    return absl::InvalidArgumentError(StrCat(
        "WattsStrogatzDag: need even k with 0 < k < n <= 100000 and 0 <= p <= 1, got n=",
        n, " k=", k, " p=", p));
  }
  std::vector<std::set<int>> adj(n);
  auto link = [&adj](int a, int b) {
    adj[a].insert(b);
    adj[b].insert(a);
  };
  for (int j = 1; j <= k / 2; ++j) {
    for (int i = 0; i < n; ++i) link(i, (i + j) % n);
  }
  SplitMix64 rng(seed);
  for (int j = 1; j <= k / 2; ++j) {
    for (int i = 0; i < n; ++i) {
      if (rng.Uniform() >= p) continue;
      // A node linked to every other node has nowhere to rewire to.
      if (static_cast<int>(adj[i].size()) >= n - 1) continue;
      int w = rng.Below(n);
      while (w == i || adj[i].count(w) > 0) w = rng.Below(n);
      const int v = (i + j) % n;
      adj[i].erase(v);
      adj[v].erase(i);
      link(i, w);
    }
  }
  RandomDag dag;
  dag.num_nodes = n;
  for (int u = 0; u < n; ++u) {
    for (int v : adj[u]) {
      if (u < v) dag.edges.emplace_back(u, v);
    }
  }
  return dag;
}

}  // namespace iosfarm::graph::models
