#include "scheduler/ios/bounded/best_ending_candidates.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

std::vector<int> Indices(const OpBits<1>& ops) {
  std::vector<int> out;
  ops.ForEach([&](int i) { out.push_back(i); });
  return out;
}

OpBits<1> Bits(const std::vector<int>& ops) {
  OpBits<1> out;
  for (int i : ops) out.Set(i);
  return out;
}

// Every guess is an ending of its state with the groups the enumeration
// gives it, and every ending a guess should be ({v} and E + {v} for each
// sink v and its child's ending E) is guessed: on random DAGs, bounds and
// child endings.
TEST(BestEndingCandidatesTest, GuessesAreTheEndingsTheyShouldBe) {
  std::mt19937_64 rng(7);
  int checked_guesses = 0, checked_states = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const int n = 4 + static_cast<int>(seed % 11);
    const graph::Graph graph = testing::RandomDag(seed, n);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    const EndingBounds bounds{1 + static_cast<int>(seed % 3), 1 + static_cast<int>(seed / 3 % 4)};
    BestEndingCandidates<1> guesses(block, bounds);
    std::vector<OpBits<1>> states;
    ForEachRemainingSet<1>(block, 1 << 20, [&](const OpBits<1>& set) { states.push_back(set); });
    // Each state's endings (as the enumeration gives them) and one of them
    // picked at random, standing for its best.
    std::map<uint64_t, std::map<std::vector<int>, std::vector<std::vector<int>>>> endings;
    std::map<uint64_t, std::vector<OpBits<1>>> picked;
    for (const OpBits<1>& state : states) {
      const StatusOr<std::vector<Ending>> listed = EnumerateEndings(block, Indices(state), bounds);
      ASSERT_TRUE(listed.ok());
      auto& of_state = endings[state.words[0]];
      for (const Ending& ending : *listed) of_state[ending.ops] = ending.groups;
      std::vector<OpBits<1>>& mine = picked[state.words[0]];
      for (int k = 0; k < 2; ++k) {
        const size_t i = rng() % (listed->size() + 1);  // size(): none
        mine.push_back(i < listed->size() ? Bits((*listed)[i].ops) : OpBits<1>());
      }
    }
    for (const OpBits<1>& state : states) {
      const auto& of_state = endings[state.words[0]];
      std::map<std::vector<int>, int> seen;
      guesses.ForEach(
          state,
          [&](const OpBits<1>& child) -> std::span<const OpBits<1>> {
            EXPECT_TRUE(picked.count(child.words[0])) << "not a state: " << child.words[0];
            return picked[child.words[0]];
          },
          [&](const OpBits<1>& ops, EndingGroup<1>* groups, int num_groups) {
            const std::vector<int> key = Indices(ops);
            auto it = of_state.find(key);
            ASSERT_NE(it, of_state.end()) << "not an ending of state " << state.words[0];
            std::vector<std::vector<int>> got;
            for (int g = 0; g < num_groups; ++g) {
              EXPECT_EQ(groups[g].size, groups[g].ops.Count());
              EXPECT_EQ(groups[g].tag, -1);
              got.push_back(Indices(groups[g].ops));
            }
            std::sort(got.begin(), got.end());
            EXPECT_EQ(got, it->second);
            ++seen[key];
            ++checked_guesses;
          });
      // What it should have guessed, where those are endings in bounds.
      state.ForEach([&](int v) {
        bool sink = true;
        for (int succ : block.succs(v)) sink = sink && !state.Test(succ);
        if (!sink) return;
        OpBits<1> single;
        single.Set(v);
        EXPECT_TRUE(seen.count(Indices(single))) << "missed {" << v << "}";
        OpBits<1> child = state;
        child.Reset(v);
        if (child.Empty()) return;
        for (const OpBits<1>& ending : picked[child.words[0]]) {
          if (ending.Empty()) continue;
          if (of_state.count(Indices(ending | single))) {
            EXPECT_TRUE(seen.count(Indices(ending | single)))
                << "missed a guess of " << state.words[0];
          }
        }
      });
      ++checked_states;
    }
  }
  EXPECT_GT(checked_states, 500);
  EXPECT_GT(checked_guesses, 2000);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
