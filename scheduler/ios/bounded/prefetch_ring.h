// PrefetchRing: a ring of the last few entries written, each settled a fixed
// number of writes after it, for loops that prefetch what an entry will
// read when it is written (the cost-to-go DP's walk and A*'s expansions,
// bounded_block_search.cc: their tables of costs to go are far larger than
// the caches).
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_PREFETCH_RING_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_PREFETCH_RING_H_

#include <array>
#include <cstdint>

namespace iosfarm::scheduler::ios {

// Entries written before the first is settled (long enough for what was
// prefetched when it was written to arrive).
inline constexpr int kPrefetchRingDepth = 8;

// The last kPrefetchRingDepth entries written, each read back kPrefetchRingDepth writes after
// it, in the order written.
template <typename T>
class PrefetchRing {
 public:
  // The slot to fill next; settles the entry written kPrefetchRingDepth writes ago
  // (settle(slot)) first.
  template <typename Settle>
  int Next(Settle&& settle) {
    const int slot = static_cast<int>(written_ % kPrefetchRingDepth);
    if (written_ >= kPrefetchRingDepth) settle(slot);
    ++written_;
    return slot;
  }
  // Settles the entries not settled yet, in the order written; returns how
  // many were written, and starts over.
  template <typename Settle>
  uint64_t Drain(Settle&& settle) {
    for (uint64_t i = written_ > kPrefetchRingDepth ? written_ - kPrefetchRingDepth : 0; i < written_; ++i) {
      settle(static_cast<int>(i % kPrefetchRingDepth));
    }
    const uint64_t written = written_;
    written_ = 0;
    return written;
  }
  T& operator[](int slot) { return slots_[slot]; }

 private:
  std::array<T, kPrefetchRingDepth> slots_;
  uint64_t written_ = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_PREFETCH_RING_H_
