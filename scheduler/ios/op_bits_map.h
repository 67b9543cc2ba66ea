// OpBitsMap<W, V>: an open-addressing hash map from non-empty OpBits<W> to V,
// built for the DP's hot loop.
//
// Linear probing over a power-of-two table of {key, value} slots (the empty
// set marks a free slot, so it can never be a key), at most 3/4 full.
// Callers pass the key's hash (OpBits::Hash) so it is computed once, and can
// Prefetch a slot well before they look it up: the DP's tables are far larger
// than the caches, and batching lookups behind prefetches hides most of the
// memory latency. Pointers returned by Find/Insert are valid until the next
// Insert. Not thread-safe.
#ifndef IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_
#define IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scheduler/ios/op_bits.h"

namespace iosfarm::scheduler::ios {

template <int W, typename V>
class OpBitsMap {
 public:
  OpBitsMap() { Rehash(1024); }

  size_t size() const { return size_; }
  // Bytes held by the table.
  size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

  void Prefetch(uint64_t hash) const {
    __builtin_prefetch(&slots_[hash & mask_], 0, 1);
  }

  // The value of `key`, or nullptr.
  V* Find(const OpBits<W>& key, uint64_t hash) {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key.Empty()) return nullptr;
    }
  }

  // Inserts `key` (absent, non-empty) with `value`; returns the stored value.
  V* Insert(const OpBits<W>& key, uint64_t hash, const V& value) {
    if (4 * (size_ + 1) > 3 * slots_.size()) Rehash(2 * slots_.size());
    ++size_;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key.Empty()) {
        slot.key = key;
        slot.value = value;
        return &slot.value;
      }
    }
  }

 private:
  struct Slot {
    OpBits<W> key;
    V value;
  };

  void Rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& slot : old) {
      if (slot.key.Empty()) continue;
      for (size_t i = slot.key.Hash() & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].key.Empty()) {
          slots_[i] = slot;
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_
