#include "scheduler/ios/endings.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

BlockGraph WholeGraphBlock(const graph::Graph& graph) {
  OpDag dag = *BuildOpDag(graph);
  return *BlockGraph::Build(graph, dag.order);
}

std::vector<std::vector<int>> OpsOf(const std::vector<Ending>& endings) {
  std::vector<std::vector<int>> out;
  for (const Ending& e : endings) out.push_back(e.ops);
  return out;
}

// p -> {a, b} -> c = a + b. Local order: p=0, a=1, b=2, c=3.
graph::Graph Diamond() {
  graph::GraphBuilder b("diamond");
  auto x = b.Input("x", {1, 4, 8, 8});
  auto p = b.Relu(x, "p");
  auto a = b.Relu(p, "a");
  auto bb = b.Relu(p, "b");
  b.Output(b.Add(a, bb, "c"));
  return *std::move(b).Finish();
}

TEST(EndingsTest, FindsEndingsWhoseGroupsShareDescendants) {
  // a and b have overlapping descendant closures ({a, c} and {b, c}). Their
  // union {a, b, c} is one group of three ops: a legal ending for r = 3,
  // s = 1, which enumerating per-op descendant closures as separate groups
  // misses.
  const graph::Graph graph = Diamond();
  const BlockGraph block = WholeGraphBlock(graph);
  auto endings = EnumerateEndings(block, {0, 1, 2, 3}, EndingBounds{3, 1});
  ASSERT_TRUE(endings.ok());
  const std::vector<std::vector<int>> expected = {{1, 2, 3}, {1, 3}, {2, 3}, {3}};
  EXPECT_EQ(OpsOf(*endings), expected);
  // {a, b, c} is a single group.
  const Ending& abc = (*endings)[0];
  ASSERT_EQ(abc.groups.size(), 1u);
  EXPECT_EQ(abc.groups[0], (std::vector<int>{1, 2, 3}));
  // With r = 2 it is gone (one group of three), and so is nothing else.
  endings = EnumerateEndings(block, {0, 1, 2, 3}, EndingBounds{2, 8});
  ASSERT_TRUE(endings.ok());
  EXPECT_EQ(OpsOf(*endings), (std::vector<std::vector<int>>{{1, 3}, {2, 3}, {3}}));
}

TEST(EndingsTest, GroupsAreConnectedComponents) {
  // Remaining {p, a, b}: a and b are independent sinks: {a, b} has two groups.
  const graph::Graph graph = Diamond();
  const BlockGraph block = WholeGraphBlock(graph);
  auto endings = EnumerateEndings(block, {0, 1, 2}, EndingBounds{3, 8});
  ASSERT_TRUE(endings.ok());
  const std::vector<std::vector<int>> expected = {{0, 1, 2}, {1}, {1, 2}, {2}};
  EXPECT_EQ(OpsOf(*endings), expected);
  EXPECT_EQ((*endings)[0].groups.size(), 1u);  // p joins a and b
  EXPECT_EQ((*endings)[2].groups.size(), 2u);
  // s = 1 forbids {a, b} but allows {p, a, b} (one group).
  endings = EnumerateEndings(block, {0, 1, 2}, EndingBounds{3, 1});
  ASSERT_TRUE(endings.ok());
  EXPECT_EQ(OpsOf(*endings), (std::vector<std::vector<int>>{{0, 1, 2}, {1}, {2}}));
}

TEST(EndingsTest, RejectsBadArguments) {
  const graph::Graph graph = Diamond();
  const BlockGraph block = WholeGraphBlock(graph);
  EXPECT_FALSE(EnumerateEndings(block, {0}, EndingBounds{0, 1}).ok());
  EXPECT_FALSE(EnumerateEndings(block, {7}, EndingBounds{1, 1}).ok());
}

// Brute force: every subset of `remaining` closed under successors within
// it, whose components (naive) respect the bounds.
std::vector<std::vector<int>> BruteForceEndings(const BlockGraph& block, uint32_t remaining,
                                                int r, int s) {
  const int n = block.size();
  std::vector<std::vector<int>> out;
  for (uint32_t t = remaining; t != 0; t = (t - 1) & remaining) {
    bool closed = true;
    for (int i = 0; i < n && closed; ++i) {
      if (!(t >> i & 1)) continue;
      for (int j : block.succs(i)) {
        if ((remaining >> j & 1) && !(t >> j & 1)) closed = false;
      }
    }
    if (!closed) continue;
    std::vector<int> label(n, -1);
    int groups = 0;
    bool ok = true;
    for (int i = 0; i < n; ++i) {
      if (!(t >> i & 1) || label[i] >= 0) continue;
      std::vector<int> stack = {i};
      label[i] = groups;
      int size = 0;
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        ++size;
        for (const auto* adj : {&block.preds(x), &block.succs(x)}) {
          for (int y : *adj) {
            if ((t >> y & 1) && label[y] < 0) {
              label[y] = groups;
              stack.push_back(y);
            }
          }
        }
      }
      ok = ok && size <= r;
      ++groups;
    }
    if (!ok || groups > s) continue;
    std::vector<int> ops;
    for (int i = 0; i < n; ++i) {
      if (t >> i & 1) ops.push_back(i);
    }
    out.push_back(ops);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(EndingsTest, TagsStayWithTheGroupsTheyWereGiven) {
  // A visitor tags each group with its own number for that op set; every
  // tag it sees again must be that group's number, carried into the larger
  // endings grown from the one where it was given.
  int carried = 0, endings = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed, 4 + static_cast<int>(seed % 9));
    const BlockGraph block = WholeGraphBlock(graph);
    std::map<uint64_t, int32_t> number;  // the op set's bits -> its tag
    EndingEnumerator<1> enumerator(block, EndingBounds{3, 4});
    auto visit = [&](const OpBits<1>& ops, EndingGroup<1>* groups, int num_groups) {
      ++endings;
      OpBits<1> together;
      for (int g = 0; g < num_groups; ++g) {
        together |= groups[g].ops;
        const int32_t next = static_cast<int32_t>(number.size());
        auto [it, added] = number.emplace(groups[g].ops.words[0], next);
        if (groups[g].tag >= 0) {
          ++carried;
          EXPECT_EQ(groups[g].tag, it->second) << "seed " << seed;
          EXPECT_FALSE(added) << "a tag on a group never tagged, seed " << seed;
        }
        groups[g].tag = it->second;
      }
      EXPECT_EQ(together, ops);
    };
    enumerator.Enumerate(OpBits<1>::FirstN(block.size()), visit);
  }
  // Most groups of a multi-group ending were tagged in the ending before.
  EXPECT_GT(endings, 1000);
  EXPECT_GT(carried, endings / 2);
}

TEST(EndingsTest, CompleteAndDuplicateFreeOnRandomGraphs) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const int n = 3 + static_cast<int>(seed % 10);  // 3..12 ops
    const graph::Graph graph = testing::RandomDag(seed, n);
    const BlockGraph block = WholeGraphBlock(graph);
    // Remaining sets: the whole graph and random down-closed subsets (the
    // DP's states are down-closed).
    std::vector<uint32_t> sets = {(1u << n) - 1};
    for (int k = 0; k < 3; ++k) {
      uint32_t set = (1u << n) - 1;
      const int remove = static_cast<int>(rng() % n);
      for (int step = 0; step < remove; ++step) {
        // Remove a random sink of the current set.
        std::vector<int> sinks;
        for (int i = 0; i < n; ++i) {
          if (!(set >> i & 1)) continue;
          bool sink = true;
          for (int j : block.succs(i)) sink = sink && !(set >> j & 1);
          if (sink) sinks.push_back(i);
        }
        set &= ~(1u << sinks[rng() % sinks.size()]);
      }
      if (set != 0) sets.push_back(set);
    }
    for (uint32_t set : sets) {
      std::vector<int> remaining;
      for (int i = 0; i < n; ++i) {
        if (set >> i & 1) remaining.push_back(i);
      }
      for (auto [r, s] : {std::pair{1, 1}, {1, 3}, {2, 2}, {3, 8}, {2, 8}, {12, 12}}) {
        auto endings = EnumerateEndings(block, remaining, EndingBounds{r, s});
        ASSERT_TRUE(endings.ok());
        const auto ops = OpsOf(*endings);
        EXPECT_EQ(std::set<std::vector<int>>(ops.begin(), ops.end()).size(), ops.size())
            << "duplicate endings, seed " << seed;
        EXPECT_EQ(ops, BruteForceEndings(block, set, r, s))
            << "seed " << seed << " set " << set << " r=" << r << " s=" << s;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 2000);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
