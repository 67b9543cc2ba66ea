#include "graph/width.h"

#include <random>

#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"

namespace iosfarm::graph {
namespace {

// Exhaustive largest antichain for tiny graphs.
int64_t BruteForceWidth(int n, const std::vector<std::vector<bool>>& reach) {
  int64_t best = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) {
      for (int j = 0; j < n && ok; ++j) {
        if (i != j && (mask >> i & 1) && (mask >> j & 1) && reach[i][j]) ok = false;
      }
    }
    if (ok) best = std::max<int64_t>(best, __builtin_popcount(mask));
  }
  return best;
}

TEST(WidthTest, BranchyGraph) {
  auto width = ComputeWidth(testing::SmallBranchyGraph(false));
  ASSERT_TRUE(width.ok());
  EXPECT_TRUE(width->exact);
  EXPECT_EQ(width->width, 2);  // conv2 and pool
}

TEST(WidthTest, MatchesBruteForceOnRandomDags) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 11);
    GraphBuilder b("dag");
    ValueId x = b.Input("x", {1, 4});
    std::vector<ValueId> outs;
    for (int i = 0; i < n; ++i) {
      std::vector<int> preds;
      for (int j = 0; j < i; ++j) {
        if (rng() % 4 == 0) preds.push_back(j);
      }
      ValueId v;
      if (preds.empty()) {
        v = b.Relu(x, "n" + std::to_string(i));
      } else if (preds.size() == 1) {
        v = b.Relu(outs[preds[0]], "n" + std::to_string(i));
      } else {
        std::vector<ValueId> ins;
        for (int p : preds) ins.push_back(outs[p]);
        v = b.Concat(ins, 0, "n" + std::to_string(i));
        v = b.ReduceMean(v, {0}, true, "r" + std::to_string(i));
      }
      outs.push_back(v);
    }
    for (ValueId v : outs) b.Output(v);
    ASSERT_TRUE(b.status().ok()) << b.status();
    Graph g = *std::move(b).Finish();
    // Reachability over all graph nodes (concat+reshape pairs included).
    const int m = g.num_nodes();
    std::vector<std::vector<bool>> full(m, std::vector<bool>(m, false));
    auto order = *g.TopologicalOrder();
    auto preds = g.Predecessors();
    for (NodeId node : order) {
      for (NodeId p : preds[node]) {
        full[p][node] = true;
        for (int q = 0; q < m; ++q) {
          if (full[q][p]) full[q][node] = true;
        }
      }
    }
    if (m > 18) continue;  // keep brute force cheap
    auto width = ComputeWidth(g);
    ASSERT_TRUE(width.ok());
    EXPECT_EQ(width->width, BruteForceWidth(m, full)) << "trial " << trial;
  }
}

TEST(WidthTest, LevelBoundAboveLimit) {
  GraphBuilder b("wide");
  ValueId x = b.Input("x", {1, 4});
  std::vector<ValueId> outs;
  for (int i = 0; i < 6; ++i) outs.push_back(b.Relu(x, "r" + std::to_string(i)));
  b.Output(b.Concat(outs, 0, "cat"));
  Graph g = *std::move(b).Finish();
  auto width = ComputeWidth(g, /*exact_limit=*/3);
  ASSERT_TRUE(width.ok());
  EXPECT_FALSE(width->exact);
  EXPECT_EQ(width->width, 6);
  EXPECT_EQ(ComputeWidth(g)->width, 6);
}

}  // namespace
}  // namespace iosfarm::graph
