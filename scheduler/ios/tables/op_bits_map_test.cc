#include "scheduler/ios/tables/op_bits_map.h"

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

// A table with the keys inserted so far (key i maps to index i).
template <int W>
struct Filled {
  explicit Filled(uint64_t seed) : rng(seed) {}

  void Insert(const OpBits<W>& key) {
    map.Insert(key, key.Hash(), Wide{static_cast<int64_t>(keys.size())});
    keys.push_back(key);
  }
  // Random keys until the table is mapped (kMappedTableBytes and more).
  void FillUntilMapped() {
    while (map.memory_bytes() < kMappedTableBytes) Insert(RandomKey<W>(rng));
  }
  // Random keys until the table doubles.
  void Double() {
    const size_t capacity = map.capacity();
    while (map.capacity() == capacity) Insert(RandomKey<W>(rng));
  }
  // Every key maps to its index; keys never inserted are absent.
  bool HoldsAll() {
    if (map.size() != keys.size()) return false;
    for (size_t i = 0; i < keys.size(); ++i) {
      const Wide* value = map.Find(keys[i], keys[i].Hash());
      if (value == nullptr || value->index != static_cast<int64_t>(i)) return false;
    }
    for (int i = 0; i < 1000; ++i) {
      const OpBits<W> absent = RandomKey<W>(rng);  // 2^-64 odds of a collision
      if (map.Find(absent, absent.Hash()) != nullptr) return false;
    }
    return true;
  }

  std::mt19937_64 rng;
  OpBitsMap<W, Wide> map;
  std::vector<OpBits<W>> keys;
};

// Under ulimit -v tables reserve no room to grow in place (table_mapping.h).
bool AddressSpaceLimited() {
  rlimit limit{};
  return getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY;
}

// Inserts random keys until the table is mapped, then doubles it twice
// more: in place, every key still found.
template <int W>
void GrowsInPlace() {
  if (AddressSpaceLimited())
    GTEST_SKIP() << "address space limited (ulimit -v): no growth in place";
  Filled<W> table(7);
  table.FillUntilMapped();
  EXPECT_TRUE(table.HoldsAll());
  const void* mapped_at = table.map.data();
  for (int doubling = 0; doubling < 2; ++doubling) {
    table.Double();
    EXPECT_EQ(table.map.data(), mapped_at) << "the table moved instead of growing in place";
    EXPECT_TRUE(table.HoldsAll()) << table.keys.size() << " keys";
  }
}

TEST(OpBitsMapTest, GrowsInPlaceOneWord) { GrowsInPlace<1>(); }

TEST(OpBitsMapTest, GrowsInPlaceTwoWords) { GrowsInPlace<2>(); }

// A run of used slots that wraps past the end of the table is moved whole
// when the table doubles in place (its keys' new homes are at the end of
// the old half and at the end of the new one).
TEST(OpBitsMapTest, GrowingKeepsARunThatWrapsPastTheEnd) {
  if (AddressSpaceLimited())
    GTEST_SKIP() << "address space limited (ulimit -v): no growth in place";
  Filled<1> table(11);
  table.FillUntilMapped();
  const size_t capacity = table.map.capacity();
  const void* mapped_at = table.map.data();
  // Keys whose home is one of the last four slots, more than fit there.
  int wrapping = 0;
  while (wrapping < 24) {
    const OpBits<1> key = RandomKey<1>(table.rng);
    if ((key.Hash() & (capacity - 1)) < capacity - 4) continue;
    table.Insert(key);
    ++wrapping;
  }
  ASSERT_EQ(table.map.capacity(), capacity) << "grew before the run was built";
  EXPECT_TRUE(table.HoldsAll());
  table.Double();
  EXPECT_EQ(table.map.data(), mapped_at);
  EXPECT_TRUE(table.HoldsAll());
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
  Filled<1> table(13);
  table.FillUntilMapped();
  const void* mapped_at = table.map.data();
  table.Double();
  if (table.map.data() == mapped_at) std::exit(3);  // grew in place: it reserved room
  std::exit(table.HoldsAll() ? 0 : 4);
}

// Under a limit on address space no room is reserved: a mapped table is
// mapped to size and copies itself when it doubles, keeping every key.
TEST(OpBitsMapTest, GrowsByCopyingUnderAnAddressSpaceLimit) {
  EXPECT_EXIT(GrowUnderAnAddressSpaceLimit(), ::testing::ExitedWithCode(0), "");
}

// MappedArray: zeroed and writable on the heap below kMappedArrayBytes and
// in a 2 MiB-aligned mapping from there on, holding what it was given.
TEST(MappedArrayTest, IsZeroedOnTheHeapAndInAMapping) {
  for (const size_t size : {size_t{0}, size_t{1000}, kMappedArrayBytes / sizeof(double) - 1,
                            kMappedArrayBytes / sizeof(double) + 3}) {
    MappedArray<double> array(size);
    ASSERT_EQ(array.size(), size);
    for (size_t i = 0; i < size; ++i) ASSERT_EQ(array[i], 0.0) << size << " at " << i;
    for (size_t i = 0; i < size; ++i) array[i] = static_cast<double>(i);
    double sum = 0;
    for (size_t i = 0; i < size; ++i) sum += array[i];
    EXPECT_EQ(sum, size == 0 ? 0.0 : static_cast<double>(size) * (size - 1) / 2);
    EXPECT_GE(array.memory_bytes(), size * sizeof(double));
    if (size * sizeof(double) >= kMappedArrayBytes) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(&array[0]) % kMappedTableBytes, 0u);
      EXPECT_EQ(array.memory_bytes() % kMappedTableBytes, 0u);
    }
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
