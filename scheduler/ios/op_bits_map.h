// OpBitsMap<W, V>: an open-addressing hash map from non-empty OpBits<W> to V,
// built for the DP's hot loop.
//
// Linear probing over a power-of-two table of {key, value} slots (the empty
// set marks a free slot, so it can never be a key), at most 3/4 full.
// Callers pass the key's hash (OpBits::Hash) so it is computed once, and can
// Prefetch a slot well before they look it up: the DP's tables are far larger
// than the caches, and batching lookups behind prefetches hides most of the
// memory latency. Slots are trivially copyable; V must be too. Pointers returned by Find/Insert are valid until the next
// Insert. Not thread-safe.
#ifndef IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_
#define IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "scheduler/ios/op_bits.h"

namespace iosfarm::scheduler::ios {

template <int W, typename V>
class OpBitsMap {
 public:
  OpBitsMap() { Rehash(kInitialCapacity); }
  ~OpBitsMap() { Release(slots_, capacity_); }
  OpBitsMap(const OpBitsMap&) = delete;
  OpBitsMap& operator=(const OpBitsMap&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Bytes held by the table.
  size_t memory_bytes() const { return capacity_ * sizeof(Slot); }
  // Bytes a table holds after `n` inserts.
  static size_t BytesFor(size_t n) {
    size_t capacity = kInitialCapacity;
    while (4 * n > 3 * capacity) capacity *= 2;
    return capacity * sizeof(Slot);
  }

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
    if (4 * (size_ + 1) > 3 * capacity_) Rehash(2 * capacity_);
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
  static constexpr size_t kInitialCapacity = 1024;
  struct Slot {
    OpBits<W> key;
    V value;
  };

  // Slots live in zeroed memory (an all-zero slot is free); tables of 2 MiB
  // and more ask for transparent huge pages: the DP probes them at random,
  // and with 4 KiB pages nearly every probe would also miss the TLB.
  static Slot* Allocate(size_t capacity) {
    const size_t bytes = capacity * sizeof(Slot);
    constexpr size_t kHuge = size_t{2} << 20;
    if (bytes >= kHuge) {
      void* p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
      if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      madvise(p, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
#endif
      std::memset(p, 0, bytes);
      return static_cast<Slot*>(p);
    }
    void* p = std::calloc(capacity, sizeof(Slot));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<Slot*>(p);
  }
  static void Release(Slot* slots, size_t) { std::free(slots); }

  void Rehash(size_t capacity) {
    Slot* old = slots_;
    const size_t old_capacity = capacity_;
    slots_ = Allocate(capacity);
    capacity_ = capacity;
    mask_ = capacity - 1;
    for (size_t k = 0; k < old_capacity; ++k) {
      const Slot& slot = old[k];
      if (slot.key.Empty()) continue;
      for (size_t i = slot.key.Hash() & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].key.Empty()) {
          slots_[i] = slot;
          break;
        }
      }
    }
    Release(old, old_capacity);
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_OP_BITS_MAP_H_
