// LatencyTable: a search session's stage latencies by signature.
//
// The DP looks a signature up for every candidate stage of every block it
// solves: NASNet-A's search makes 289 M lookups in a table of 8 M
// signatures, far larger than the caches. The table is an OpBitsMap keyed by
// the signature's 64 bits, so that Prefetch fetches the line of the
// signature's own slot and a batch of lookups overlaps its misses.
// (absl::flat_hash_map, used before, prefetches the first slot of a probe
// group, a different line most of the time: perf put 74 % of the lookups'
// time on the load of the slot.) Signature 0, the table's mark of a free
// slot, is kept apart. Pointers returned stay valid until the next insert.
// Not thread-safe.
#ifndef IOSFARM_SCHEDULER_IOS_TABLES_LATENCY_TABLE_H_
#define IOSFARM_SCHEDULER_IOS_TABLES_LATENCY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace iosfarm::scheduler::ios {

class LatencyTable {
 public:
  struct Entry {
    double ms;           // NaN while unknown
    uint32_t last_pass;  // the last DP pass that looked it up
    bool measuring;      // a thread is measuring it
  };

  size_t size() const { return map_.size() + (zero_ ? 1 : 0); }
  // Bytes held by the table.
  size_t memory_bytes() const { return map_.memory_bytes(); }

  // The entry of `signature`, or nullptr.
  Entry* Find(Signature signature) {
    if (signature == 0) return zero_ ? &*zero_ : nullptr;
    const OpBits<1> key = Key(signature);
    return map_.Find(key, key.Hash());
  }
  const Entry* Find(Signature signature) const {
    return const_cast<LatencyTable*>(this)->Find(signature);
  }

  // The entry of `signature`, added as `value` where absent; whether it was
  // added.
  std::pair<Entry*, bool> FindOrInsert(Signature signature, const Entry& value) {
    if (signature == 0) {
      if (zero_) return {&*zero_, false};
      zero_ = value;
      return {&*zero_, true};
    }
    const OpBits<1> key = Key(signature);
    const uint64_t hash = key.Hash();
    if (Entry* entry = map_.Find(key, hash)) return {entry, false};
    return {map_.Insert(key, hash, value), true};
  }

  // A hint that `signature` will be looked up soon.
  void Prefetch(Signature signature) const { map_.Prefetch(Key(signature).Hash()); }

  // Removes the entries for which drop(entry) is true and gives the memory
  // of the table back (it is built again for what stays). Returns how many
  // were removed.
  template <typename Drop>
  size_t EraseIf(Drop&& drop) {
    const size_t before = size();
    std::vector<std::pair<OpBits<1>, Entry>> kept;
    map_.ForEach([&](const OpBits<1>& key, const Entry& entry) {
      if (!drop(entry)) kept.emplace_back(key, entry);
    });
    if (zero_ && drop(*zero_)) zero_.reset();
    map_.Clear();
    for (const auto& [key, entry] : kept) map_.Insert(key, key.Hash(), entry);
    return before - size();
  }

 private:
  static OpBits<1> Key(Signature signature) {
    OpBits<1> key;
    key.words[0] = signature;
    return key;
  }

  // Small to begin with: a session of a few blocks holds few latencies,
  // and a cache limit (SearchBudget::latency_cache_bytes) counts the table.
  OpBitsMap<1, Entry> map_{16};
  std::optional<Entry> zero_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_TABLES_LATENCY_TABLE_H_
