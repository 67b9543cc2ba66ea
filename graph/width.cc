#include "graph/width.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace iosfarm::graph {
namespace {

// Maximum bipartite matching (left and right sides both 0..n-1).
class HopcroftKarp {
 public:
  explicit HopcroftKarp(const std::vector<std::vector<int>>& adjacency)
      : adj_(adjacency),
        n_(static_cast<int>(adjacency.size())),
        match_left_(n_, -1),
        match_right_(n_, -1),
        dist_(n_) {}

  int Run() {
    int matching = 0;
    while (Bfs()) {
      for (int u = 0; u < n_; ++u) {
        if (match_left_[u] == -1 && Dfs(u)) ++matching;
      }
    }
    return matching;
  }

 private:
  static constexpr int kInf = std::numeric_limits<int>::max();

  bool Bfs() {
    std::queue<int> queue;
    bool found = false;
    for (int u = 0; u < n_; ++u) {
      dist_[u] = match_left_[u] == -1 ? 0 : kInf;
      if (dist_[u] == 0) queue.push(u);
    }
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop();
      for (int v : adj_[u]) {
        const int w = match_right_[v];
        if (w == -1) {
          found = true;
        } else if (dist_[w] == kInf) {
          dist_[w] = dist_[u] + 1;
          queue.push(w);
        }
      }
    }
    return found;
  }

  // Iterative would avoid deep recursion; path length is bounded by the
  // number of BFS layers, which is small for the graph sizes used here.
  bool Dfs(int u) {
    for (int v : adj_[u]) {
      const int w = match_right_[v];
      if (w == -1 || (dist_[w] == dist_[u] + 1 && Dfs(w))) {
        match_left_[u] = v;
        match_right_[v] = u;
        return true;
      }
    }
    dist_[u] = kInf;
    return false;
  }

  const std::vector<std::vector<int>>& adj_;
  int n_;
  std::vector<int> match_left_, match_right_, dist_;
};

}  // namespace

StatusOr<GraphWidth> ComputeWidth(const Graph& graph, int64_t exact_limit) {
  ASSIGN_OR_RETURN(std::vector<NodeId> order, graph.TopologicalOrder());
  // Dense indices over operators (Constant nodes excluded), topological.
  std::vector<int> index(graph.num_nodes(), -1);
  std::vector<NodeId> ops;
  for (NodeId n : order) {
    if (graph.node(n).type == OpType::kConstant) continue;
    index[n] = static_cast<int>(ops.size());
    ops.push_back(n);
  }
  const int n = static_cast<int>(ops.size());
  if (n == 0) return GraphWidth{0, true};
  const auto preds = graph.Predecessors();
  std::vector<std::vector<int>> succs(n);
  for (int i = 0; i < n; ++i) {
    for (NodeId p : preds[ops[i]]) {
      if (index[p] >= 0) succs[index[p]].push_back(i);
    }
  }

  if (n > exact_limit) {
    std::vector<int> level(n, 0);
    int max_level = 0;
    for (int i = 0; i < n; ++i) {
      for (int s : succs[i]) level[s] = std::max(level[s], level[i] + 1);
      max_level = std::max(max_level, level[i]);
    }
    std::vector<int64_t> count(max_level + 1, 0);
    for (int l : level) ++count[l];
    return GraphWidth{*std::max_element(count.begin(), count.end()), false};
  }

  // Transitive closure as bitsets, in reverse topological order.
  const int words = (n + 63) / 64;
  std::vector<uint64_t> reach(static_cast<size_t>(n) * words, 0);
  for (int i = n - 1; i >= 0; --i) {
    uint64_t* row = &reach[static_cast<size_t>(i) * words];
    for (int s : succs[i]) {
      const uint64_t* srow = &reach[static_cast<size_t>(s) * words];
      for (int w = 0; w < words; ++w) row[w] |= srow[w];
      row[s / 64] |= uint64_t{1} << (s % 64);
    }
  }
  std::vector<std::vector<int>> adjacency(n);
  for (int i = 0; i < n; ++i) {
    const uint64_t* row = &reach[static_cast<size_t>(i) * words];
    for (int w = 0; w < words; ++w) {
      for (uint64_t bits = row[w]; bits != 0; bits &= bits - 1) {
        adjacency[i].push_back(w * 64 + __builtin_ctzll(bits));
      }
    }
  }
  // Dilworth: the largest antichain equals the minimum number of chains that
  // cover the poset, which is n minus a maximum matching of the closure.
  const int matching = HopcroftKarp(adjacency).Run();
  return GraphWidth{n - matching, true};
}

}  // namespace iosfarm::graph
