// ChildRows: the cost-to-go DP's states (ForEachRemainingSet's sets), each in a
// row, and for every state and each of its sinks the row of the state less
// that sink.
//
// Why: the cost-to-go DP's walk reads, for every ending of every state, the cost
// of its child (the state less the ending): 629 M endings for NASNet-A's
// cells. Hashing each child and probing the table of rows (8 MB and more,
// far larger than the caches) was about a tenth of the search's CPU. But
// the enumeration grows an ending an op at a time, and the op it adds is a
// sink of the child before it (EndingEnumerator::EnumerateFollowing), so
// each child is one step from the one before: a state's drops sit side by
// side, and a step reads the drop of the op's rank among the sinks, a line
// its siblings read too. A drop carries the child's row and where the
// child's own drops begin, so the next step needs no other read, and that
// line is prefetched as soon as it is known.
//
// Drop is const (safe from several threads). Memory: a Node per (state, sink)
// pair and per state (memory_bytes).
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_CHILD_ROWS_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_CHILD_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/tables/table_mapping.h"

namespace iosfarm::scheduler::ios {

template <int W>
class ChildRows {
 public:
  // Where a set stands: its row (-1: the empty set, no state) and the
  // index of its first drop.
  struct Node {
    int32_t row = -1;
    int32_t begin = 0;
  };

  // `states`: every state of `block`, row by row; row_of(set) -> the row of
  // a non-empty state (a state less one of its sinks is one too, or empty).
  template <typename RowOf>
  ChildRows(const BlockGraph& block, std::span<const OpBits<W>> states, RowOf&& row_of) {
    const int n = block.size();
    std::vector<OpBits<W>> succ(n);
    for (int i = 0; i < n; ++i) succ[i] = OpBits<W>::FromWords(block.succ_words(i));
    auto sinks = [&](const OpBits<W>& state) {
      OpBits<W> out;
      state.ForEach([&](int v) {
        if (!succ[v].Intersects(state)) out.Set(v);
      });
      return out;
    };
    begin_.resize(states.size());
    size_t total = 0;
    for (size_t row = 0; row < states.size(); ++row) {
      begin_[row] = static_cast<int32_t>(total);  // wraps only where !ok_, then cleared
      total += static_cast<size_t>(sinks(states[row]).Count());
    }
    if (total > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      ok_ = false;
      begin_ = {};
      return;
    }
    drops_.emplace(total);
    for (size_t row = 0; row < states.size(); ++row) {
      Node* drop = &(*drops_)[begin_[row]];
      sinks(states[row]).ForEach([&](int v) {
        OpBits<W> child = states[row];
        child.Reset(v);
        Node node;
        if (!child.Empty()) {
          node.row = row_of(child);
          node.begin = begin_[node.row];
        }
        *drop++ = node;
      });
    }
  }

  // False where the states have more (state, sink) pairs than an int32_t
  // counts (tens of GB of drops): then there are none.
  bool ok() const { return ok_; }

  Node Root(int32_t row) const { return {row, begin_[row]}; }

  // The node of node's set less `op`, one of `sinks` (that set's sinks).
  // Prefetches the child's drops: the enumeration's next step reads them.
  Node Drop(const Node& node, const OpBits<W>& sinks, int op) const {
    const Node child = (*drops_)[node.begin + sinks.CountBelow(op)];
    __builtin_prefetch(&(*drops_)[child.begin], 0, 3);
    return child;
  }

  // Prefetches the drops of node's set less each of `ops` (some of
  // `sinks`): the enumeration reaches those children after the first's
  // subtree, by when their lines are in the cache.
  void PrefetchChildren(const Node& node, const OpBits<W>& sinks, const OpBits<W>& ops) const {
    ops.ForEach([&](int op) { Drop(node, sinks, op); });
  }

  // Bytes the drops and rows take.
  size_t memory_bytes() const {
    return (drops_ ? drops_->memory_bytes() : 0) + begin_.capacity() * sizeof(int32_t);
  }

 private:
  // On huge pages from kMappedArrayBytes on (MappedArray): a step's read is
  // at random in a table of megabytes, where 4 KiB pages miss the TLB.
  std::optional<MappedArray<Node>> drops_;
  std::vector<int32_t> begin_;
  bool ok_ = true;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_CHILD_ROWS_H_
