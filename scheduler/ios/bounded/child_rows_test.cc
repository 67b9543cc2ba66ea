#include "scheduler/ios/bounded/child_rows.h"

#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

// One listed ending: its ops and groups, in the order listed.
template <int W>
struct Listed {
  OpBits<W> ops;
  std::vector<OpBits<W>> groups;
  bool operator==(const Listed&) const = default;
};

// Every ending EnumerateFollowing lists, through ChildRows, comes with
// its child's row (-1 where the ending takes the whole state), and the
// endings and groups are Enumerate's, in its order. Returns the endings
// checked.
template <int W>
int CheckBlock(const graph::Graph& graph, const EndingBounds& bounds) {
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  std::vector<OpBits<W>> states;
  ForEachRemainingSet<W>(block, 1 << 20, [&](const OpBits<W>& set) { states.push_back(set); });
  absl::flat_hash_map<OpBits<W>, int32_t, OpBitsHash<W>> row_of;
  for (size_t row = 0; row < states.size(); ++row) row_of[states[row]] = static_cast<int32_t>(row);
  const ChildRows<W> drops(block, states, [&](const OpBits<W>& set) { return row_of.at(set); });
  EXPECT_GT(drops.memory_bytes(), 0u);
  EndingEnumerator<W> plain(block, bounds), following(block, bounds);
  int checked = 0;
  for (size_t row = 0; row < states.size(); ++row) {
    const OpBits<W>& state = states[row];
    std::vector<Listed<W>> want, got;
    auto groups_of = [](EndingGroup<W>* groups, int num_groups) {
      std::vector<OpBits<W>> out;
      for (int g = 0; g < num_groups; ++g) out.push_back(groups[g].ops);
      return out;
    };
    plain.Enumerate(state, [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
      want.push_back({ops, groups_of(groups, num_groups)});
    });
    following.EnumerateFollowing(state, drops, drops.Root(static_cast<int32_t>(row)),
                                 [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                                     typename ChildRows<W>::Node child) {
                                   got.push_back({ops, groups_of(groups, num_groups)});
                                   const OpBits<W> left = state.Minus(ops);
                                   EXPECT_EQ(child.row, left.Empty() ? -1 : row_of.at(left))
                                       << "state row " << row << ", ending of " << ops.Count()
                                       << " ops";
                                   ++checked;
                                 });
    EXPECT_EQ(got, want) << "state row " << row;
  }
  return checked;
}

TEST(ChildRowsTest, FollowsEveryEndingToItsChildsRow) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    const int n = 3 + static_cast<int>(seed % 15);
    const EndingBounds bounds{1 + static_cast<int>(seed % 3), 1 + static_cast<int>(seed / 3 % 5)};
    checked += CheckBlock<1>(testing::RandomDag(seed, n), bounds);
  }
  EXPECT_GT(checked, 20000);
}

// Blocks of more than 64 ops: a sink's rank counts the sinks of the words
// below its own.
TEST(ChildRowsTest, FollowsBlocksOfTwoWords) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const graph::Graph graph = testing::RepeatedCells(seed, /*cells=*/11, /*ops_per_cell=*/6);
    checked += CheckBlock<2>(graph, EndingBounds{2, 3});
  }
  EXPECT_GT(checked, 1000);
}

TEST(ChildRowsTest, CountBelowCountsAcrossWords) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    OpBits<2> bits;
    bits.words = {rng(), rng()};
    int below = 0;
    for (int i = 0; i <= 128; ++i) {
      ASSERT_EQ(bits.CountBelow(i), below) << "i " << i;
      if (i < 128 && bits.Test(i)) ++below;
    }
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
