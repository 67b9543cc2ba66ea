#include "scheduler/ios/op_bits_map.h"

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
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
bool HoldsAll(OpBitsMap<W, V>& map, const std::vector<OpBits<W>>& keys, std::mt19937_64& rng) {
  if (map.size() != keys.size()) return false;
  for (size_t i = 0; i < keys.size(); ++i) {
    const V* value = map.Find(keys[i], keys[i].Hash());
    if (value == nullptr || value->index != static_cast<int64_t>(i)) return false;
  }
  for (int i = 0; i < 1000; ++i) {
    const OpBits<W> absent = RandomKey<W>(rng);  // 2^-64 odds of a collision
    if (map.Find(absent, absent.Hash()) != nullptr) return false;
  }
  return true;
}

template <int W, typename V>
void ExpectHolds(OpBitsMap<W, V>& map, const std::vector<OpBits<W>>& keys, std::mt19937_64& rng) {
  EXPECT_TRUE(HoldsAll(map, keys, rng)) << keys.size() << " keys";
}

// Under ulimit -v tables reserve no room to grow in place (table_mapping.h).
bool AddressSpaceLimited() {
  rlimit limit{};
  return getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY;
}

// Inserts random keys until the table is mapped (kMappedTableBytes and
// more), then doubles it twice more: in place, every key still found.
template <int W, typename V>
void GrowsInPlace() {
  if (AddressSpaceLimited())
    GTEST_SKIP() << "address space limited (ulimit -v): no growth in place";
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
  if (AddressSpaceLimited())
    GTEST_SKIP() << "address space limited (ulimit -v): no growth in place";
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

// Sets a limit on address space (ulimit -v), doubles a mapped table and
// exits 0 when it copied itself into a new mapping (no room reserved to
// grow in place) with every key.
[[noreturn]] void GrowUnderAnAddressSpaceLimit() {
  size_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;  // the address space in use
  const rlim_t bytes = static_cast<rlim_t>(pages) * 4096 + (rlim_t{1} << 30);
  const rlimit limit{bytes, bytes};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::exit(2);
  std::mt19937_64 rng(13);
  OpBitsMap<1, Wide> map;
  std::vector<OpBits<1>> keys;
  auto insert = [&](const OpBits<1>& key) {
    map.Insert(key, key.Hash(), Wide{static_cast<int64_t>(keys.size())});
    keys.push_back(key);
  };
  while (map.memory_bytes() < kMappedTableBytes) insert(RandomKey<1>(rng));
  const void* mapped_at = map.data();
  const size_t capacity = map.capacity();
  while (map.capacity() == capacity) insert(RandomKey<1>(rng));
  if (map.data() == mapped_at) std::exit(3);  // grew in place: it reserved room
  std::exit(HoldsAll(map, keys, rng) ? 0 : 4);
}

// Under a limit on address space no room is reserved: a mapped table is
// mapped to size and copies itself when it doubles, keeping every key.
TEST(OpBitsMapTest, GrowsByCopyingUnderAnAddressSpaceLimit) {
  EXPECT_EXIT(GrowUnderAnAddressSpaceLimit(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
