#include "scheduler/ios/op_bits_map.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iosfarm::scheduler::ios {
namespace {

// A value wider than a word, so that slots are not a power of two bytes.
struct Wide {
  int64_t index = 0;
  double pad[2] = {};
};

template <int W>
OpBits<W> RandomKey(std::mt19937_64& rng) {
  OpBits<W> key;
  do {
    for (uint64_t& word : key.words) word = rng();
  } while (key.Empty());
  return key;
}

// Every key of `keys` maps to its index; keys never inserted are absent.
template <int W, typename V>
void ExpectHolds(OpBitsMap<W, V>& map, const std::vector<OpBits<W>>& keys, std::mt19937_64& rng) {
  ASSERT_EQ(map.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const V* value = map.Find(keys[i], keys[i].Hash());
    ASSERT_NE(value, nullptr) << "key " << i << " of " << keys.size() << " lost";
    ASSERT_EQ(value->index, static_cast<int64_t>(i));
  }
  for (int i = 0; i < 1000; ++i) {
    const OpBits<W> absent = RandomKey<W>(rng);  // 2^-64 odds of a collision
    ASSERT_EQ(map.Find(absent, absent.Hash()), nullptr);
  }
}

// Inserts random keys until the table is mapped (kMappedTableBytes and
// more), then doubles it twice more: in place, every key still found.
template <int W, typename V>
void GrowsInPlace() {
  std::mt19937_64 rng(7);
  OpBitsMap<W, V> map;
  std::vector<OpBits<W>> keys;
  auto insert = [&](const OpBits<W>& key) {
    map.Insert(key, key.Hash(), V{static_cast<int64_t>(keys.size())});
    keys.push_back(key);
  };
  while (map.memory_bytes() < kMappedTableBytes) insert(RandomKey<W>(rng));
  ExpectHolds(map, keys, rng);
  const void* mapped_at = map.data();
  for (int doubling = 0; doubling < 2; ++doubling) {
    const size_t capacity = map.capacity();
    while (map.capacity() == capacity) insert(RandomKey<W>(rng));
    EXPECT_EQ(map.data(), mapped_at) << "the table moved instead of growing in place";
    ExpectHolds(map, keys, rng);
  }
}

TEST(OpBitsMapTest, GrowsInPlaceOneWord) { GrowsInPlace<1, Wide>(); }

TEST(OpBitsMapTest, GrowsInPlaceTwoWords) { GrowsInPlace<2, Wide>(); }

// A run of used slots that wraps past the end of the table is moved whole
// when the table doubles in place (its keys' new homes are at the end of
// the old half and at the end of the new one).
TEST(OpBitsMapTest, GrowingKeepsARunThatWrapsPastTheEnd) {
  std::mt19937_64 rng(11);
  OpBitsMap<1, Wide> map;
  std::vector<OpBits<1>> keys;
  auto insert = [&](const OpBits<1>& key) {
    map.Insert(key, key.Hash(), Wide{static_cast<int64_t>(keys.size())});
    keys.push_back(key);
  };
  while (map.memory_bytes() < kMappedTableBytes) insert(RandomKey<1>(rng));
  const size_t capacity = map.capacity();
  const void* mapped_at = map.data();
  // Keys whose home is one of the last four slots, more than fit there.
  int wrapping = 0;
  while (wrapping < 24) {
    const OpBits<1> key = RandomKey<1>(rng);
    if ((key.Hash() & (capacity - 1)) < capacity - 4) continue;
    insert(key);
    ++wrapping;
  }
  ASSERT_EQ(map.capacity(), capacity) << "grew before the run was built";
  ExpectHolds(map, keys, rng);
  while (map.capacity() == capacity) insert(RandomKey<1>(rng));
  EXPECT_EQ(map.data(), mapped_at);
  ExpectHolds(map, keys, rng);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
