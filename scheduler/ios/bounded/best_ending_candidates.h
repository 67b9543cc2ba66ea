// BestEndingCandidates: a few endings of a state that are likely to be among its
// best, from the best endings of its children by one op. The cost-to-go DP's
// walk (cost_to_go_dp.h) takes the least value of these guesses as
// a state's first cutoff, so that it bounds the endings it lists against a
// cutoff near the state's value from the first on, not one that falls as
// they come.
//
// For a state S (a set of ops closed under predecessors) and a sink v of S,
// the child C = S - {v} is smaller than S, so the walk has its best ending E.
// Then E + {v} is an ending of S (what is left, C - E, is C's child, a
// state), and so is {v} alone (what is left is C). A state's best
// ending is most often its child's plus the op that child lacks, so the
// least guess is nearly always the state's value and the walk bounds about
// as few endings as if it knew every value beforehand
// (docs/search-design.md).
//
// Every guess is a genuine ending within the bounds (at most max_groups
// groups of at most max_group_ops ops each, the groups being its connected
// components), so the enumeration lists it too: its value is one the walk
// computes anyway, and a cutoff just above it drops no ending that could be
// the state's least.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_BEST_ENDING_CANDIDATES_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_BEST_ENDING_CANDIDATES_H_

#include <algorithm>
#include <span>
#include <vector>

#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/stages/op_components.h"

namespace iosfarm::scheduler::ios {

template <int W>
class BestEndingCandidates {
 public:
  BestEndingCandidates(const BlockGraph& block, const EndingBounds& bounds)
      : bounds_(bounds),
        succ_(block.size()),
        adjacent_(block.size()),
        groups_(static_cast<size_t>(bounds.max_groups)) {
    for (int i = 0; i < block.size(); ++i) {
      succ_[i] = OpBits<W>::FromWords(block.succ_words(i));
      adjacent_[i] = succ_[i] | OpBits<W>::FromWords(block.pred_words(i));
    }
  }

  // For each sink v of `state`: {v}, and E + {v} for each E of
  // best(state - {v}) (that child's best endings, one per block of a shared
  // walk; empty where it has none). Calls visit(ops, groups, num_groups)
  // for each that is within the bounds, with its groups (tags -1), valid
  // during the call only. (E itself, an ending of `state` where no op of E
  // feeds v, is no guess: on NASNet-A it cut 1 % of the walks' bounds for
  // 30 % more of the guesses' own.)
  template <typename Best, typename Visit>
  void ForEach(const OpBits<W>& state, Best&& best, Visit&& visit) {
    state.ForEach([&](int v) {
      if (succ_[v].Intersects(state)) return;  // not a sink
      OpBits<W> child = state;
      child.Reset(v);
      OpBits<W> single;
      single.Set(v);
      Offer(single, visit);
      if (child.Empty()) return;
      const std::span<const OpBits<W>> endings = best(child);
      for (size_t i = 0; i < endings.size(); ++i) {
        const OpBits<W>& ending = endings[i];
        if (ending.Empty() ||
            std::find(endings.begin(), endings.begin() + i, ending) != endings.begin() + i) {
          continue;
        }
        Offer(ending | single, visit);
      }
    });
  }

 private:
  // Visits `ops`, an ending of the state, where it is within the bounds.
  // ({v} and E + {v} always are endings: v feeds nothing in the state, and
  // E nothing in the child's rest, which is the state's rest too.)
  template <typename Visit>
  void Offer(const OpBits<W>& ops, Visit& visit) {
    const int num_groups = Split(ops);
    if (num_groups > 0) visit(ops, groups_.data(), num_groups);
  }

  // Splits `ops` into its connected components (groups_): how many, or 0
  // where one is over max_group_ops ops or they are over max_groups.
  int Split(const OpBits<W>& ops) {
    int count = 0;
    OpBits<W> left = ops;
    while (!left.Empty()) {
      if (count == bounds_.max_groups) return 0;
      const OpBits<W> group = ComponentOf(left.First(), left, adjacent_);
      const int size = group.Count();
      if (size > bounds_.max_group_ops) return 0;
      groups_[count++] = EndingGroup<W>{group, size, -1};
      left = left.Minus(group);
    }
    return count;
  }

  EndingBounds bounds_;
  std::vector<OpBits<W>> succ_, adjacent_;
  std::vector<EndingGroup<W>> groups_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_BEST_ENDING_CANDIDATES_H_
