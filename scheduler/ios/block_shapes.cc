// The shapes of blocks for the DP (block_dp.h): how many states a block
// has, which blocks share one shape, and how a shape's blocks are cut into
// pieces that walk together.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/endings.h"

namespace iosfarm::scheduler::ios {
namespace {

// CountStates for width W: a depth-first walk that removes one sink at a
// time (every remaining set is reached so: a single sink is an ending).
template <int W>
int64_t Count(const BlockGraph& block, int64_t cap) {
  int64_t count = 0;
  ForEachRemainingSet<W>(block, cap, [&](const OpBits<W>&) { ++count; });
  return count;
}

}  // namespace

int64_t CountStates(const BlockGraph& block, int64_t cap) {
  switch (block.words()) {
    case 1:
      return Count<1>(block, cap);
    case 2:
      return Count<2>(block, cap);
    case 4:
      return Count<4>(block, cap);
    case 8:
      return Count<8>(block, cap);
    default:
      return Count<16>(block, cap);
  }
}

std::vector<size_t> SharedPieceEnds(size_t count) {
  const size_t pieces = (count + kMaxSharedBlocks - 1) / kMaxSharedBlocks;
  std::vector<size_t> ends;
  for (size_t p = 1; p <= pieces; ++p) ends.push_back(count * p / pieces);
  return ends;
}

bool SameShape(const BlockGraph& a, const BlockGraph& b) {
  if (a.size() != b.size() || a.words() != b.words()) return false;
  const size_t words = static_cast<size_t>(a.size()) * a.words();
  return a.size() == 0 || std::equal(a.succ_words(0), a.succ_words(0) + words, b.succ_words(0));
}

std::vector<std::vector<size_t>> GroupByShape(size_t count,
                                              absl::FunctionRef<const BlockGraph*(size_t)> block) {
  std::vector<std::vector<size_t>> groups;
  std::vector<const BlockGraph*> firsts;  // each group's first block
  for (size_t i = 0; i < count; ++i) {
    const BlockGraph* graph = block(i);
    if (graph == nullptr) continue;
    size_t g = 0;
    while (g < groups.size() && !SameShape(*firsts[g], *graph)) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      firsts.push_back(graph);
    }
    groups[g].push_back(i);
  }
  return groups;
}

}  // namespace iosfarm::scheduler::ios
