// OpBitsMap<W, V>: an open-addressing hash map from non-empty OpBits<W> to V,
// built for the DP's hot loop.
//
// Linear probing over a power-of-two table of {key, value} slots (the empty
// set marks a free slot, so it can never be a key), at most 3/4 full.
// Callers pass the key's hash (OpBits::Hash) so it is computed once, and can
// Prefetch a slot well before they look it up: the DP's tables are far larger
// than the caches, and batching lookups behind prefetches hides most of the
// memory latency. Tables of 2 MiB and more live in a TableMapping
// (table_mapping.h) on huge pages and double in place (GrowInPlace). Slots
// are trivially copyable; V must be too. Pointers returned by Find/Insert
// are valid until the next Insert. Not thread-safe.
#ifndef IOSFARM_SCHEDULER_IOS_TABLES_OP_BITS_MAP_H_
#define IOSFARM_SCHEDULER_IOS_TABLES_OP_BITS_MAP_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/tables/table_mapping.h"

namespace iosfarm::scheduler::ios {

template <int W, typename V>
class OpBitsMap {
 public:
  // `initial_capacity`: a power of two, the slots of an empty table.
  explicit OpBitsMap(size_t initial_capacity = kInitialCapacity)
      : initial_capacity_(initial_capacity) {
    Rehash(initial_capacity_);
  }
  ~OpBitsMap() { Release(slots_, mapping_); }
  OpBitsMap(const OpBitsMap&) = delete;
  OpBitsMap& operator=(const OpBitsMap&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Bytes held by the table.
  size_t memory_bytes() const { return capacity_ * sizeof(Slot); }
  // Where the slots are (a table that grows in place keeps it).
  const void* data() const { return slots_; }
  // Bytes a table holds after `n` inserts.
  static size_t BytesFor(size_t n) {
    size_t capacity = kInitialCapacity;
    while (4 * n > 3 * capacity) capacity *= 2;
    return capacity * sizeof(Slot);
  }

  void Prefetch(uint64_t hash) const {
    const Slot* slot = &slots_[hash & mask_];
    __builtin_prefetch(slot, 0, 1);
    // A slot of a size that does not divide a cache line (the DP's tables of
    // 4-6 blocks' values: 40-56 bytes) mostly straddles two lines.
    if constexpr (64 % sizeof(Slot) != 0) {
      __builtin_prefetch(reinterpret_cast<const char*>(slot + 1) - 1, 0, 1);
    }
  }

  // The value of `key`, or nullptr.
  V* Find(const OpBits<W>& key, uint64_t hash) {
    return const_cast<V*>(std::as_const(*this).Find(key, hash));
  }
  const V* Find(const OpBits<W>& key, uint64_t hash) const {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key.Empty()) return nullptr;
    }
  }

  // Calls f(key, value) for each entry, in slot order.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (!slots_[i].key.Empty()) f(slots_[i].key, slots_[i].value);
    }
  }

  // Removes every entry and gives the memory back (the table starts over
  // at its initial capacity).
  void Clear() {
    Release(slots_, mapping_);
    slots_ = nullptr;
    mapping_ = TableMapping();
    capacity_ = mask_ = size_ = 0;
    Rehash(initial_capacity_);
  }

  // Inserts `key` (absent, non-empty) with `value`; returns the stored value.
  V* Insert(const OpBits<W>& key, uint64_t hash, const V& value) {
    if (4 * (size_ + 1) > 3 * capacity_) Rehash(2 * capacity_);
    ++size_;
    Slot& slot = FreeSlot(hash);
    slot.key = key;
    slot.value = value;
    return &slot.value;
  }

 private:
  static constexpr size_t kInitialCapacity = 1024;
  struct Slot {
    OpBits<W> key;
    V value;
  };

  // Slots live in zeroed memory (an all-zero slot is free): on the heap,
  // or in *mapping for tables of kMappedTableBytes and more.
  static Slot* Allocate(size_t capacity, TableMapping* mapping) {
    const size_t bytes = capacity * sizeof(Slot);
    if (bytes >= kMappedTableBytes) {
      *mapping = MapTable(bytes);
      return static_cast<Slot*>(mapping->data);
    }
    *mapping = TableMapping();
    void* p = std::calloc(capacity, sizeof(Slot));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<Slot*>(p);
  }
  static void Release(Slot* slots, TableMapping& mapping) {
    if (mapping.data != nullptr) {
      UnmapTable(mapping);
    } else {
      std::free(slots);
    }
  }

  // The first free slot from the home of `hash` (linear probing).
  Slot& FreeSlot(uint64_t hash) {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key.Empty()) return slots_[i];
    }
  }
  // Places `slot` (its key absent).
  void Place(const Slot& slot) { FreeSlot(slot.key.Hash()) = slot; }

  void Rehash(size_t capacity) {
    if (mapping_.data != nullptr && capacity == 2 * capacity_ &&
        GrowTable(mapping_, capacity * sizeof(Slot))) {
      GrowInPlace();
      return;
    }
    Slot* old = slots_;
    const size_t old_capacity = capacity_;
    TableMapping old_mapping = mapping_;
    slots_ = Allocate(capacity, &mapping_);
    capacity_ = capacity;
    mask_ = capacity - 1;
    for (size_t k = 0; k < old_capacity; ++k) {
      if (!old[k].key.Empty()) Place(old[k]);
    }
    if (old != nullptr) Release(old, old_mapping);
  }

  // Doubles the table in place (the upper half committed and zero). Each
  // run of used slots (up to a free one) is taken out and placed again
  // with the new mask. A key's new home is its old one or that plus the
  // old capacity, so the keys of a run land inside the run's own slots or
  // their mirror in the upper half (at most as many keys start at or after
  // any slot of the run as the run has slots from there on), where they
  // neither cross a run not placed yet nor lie on the path of a key placed
  // before. The runs are visited once around the old table from a free
  // slot, so a run that wraps past its end is taken whole.
  void GrowInPlace() {
    const size_t old_capacity = capacity_;
    capacity_ *= 2;
    mask_ = capacity_ - 1;
    size_t free = 0;
    while (!slots_[free].key.Empty()) ++free;  // the table is at most 3/4 full
    std::vector<Slot> run;
    size_t seen = 0;
    size_t i = (free + 1) & (old_capacity - 1);
    while (seen < old_capacity - 1) {
      if (slots_[i].key.Empty()) {
        ++seen;
        i = (i + 1) & (old_capacity - 1);
        continue;
      }
      run.clear();
      for (; !slots_[i].key.Empty(); i = (i + 1) & (old_capacity - 1)) {
        run.push_back(slots_[i]);
        slots_[i] = Slot();
      }
      seen += run.size();
      for (const Slot& slot : run) Place(slot);
    }
  }

  size_t initial_capacity_;
  Slot* slots_ = nullptr;
  TableMapping mapping_;  // of a mapped table
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_TABLES_OP_BITS_MAP_H_
