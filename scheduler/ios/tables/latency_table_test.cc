#include "scheduler/ios/tables/latency_table.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

TEST(LatencyTableTest, FindsWhatItHoldsAndAddsOnlyOnce) {
  LatencyTable table;
  EXPECT_EQ(table.Find(42), nullptr);
  auto [entry, added] = table.FindOrInsert(42, {1.5, 3, false});
  EXPECT_TRUE(added);
  EXPECT_EQ(entry->ms, 1.5);
  entry->measuring = true;
  auto [again, added_again] = table.FindOrInsert(42, {9.0, 7, false});
  EXPECT_FALSE(added_again);
  EXPECT_EQ(again->ms, 1.5);  // the stored entry, not the new value
  EXPECT_EQ(again->last_pass, 3u);
  EXPECT_TRUE(again->measuring);
  EXPECT_EQ(table.size(), 1u);
}

// 0 marks a free slot inside the table: signature 0 is kept apart.
TEST(LatencyTableTest, KeepsSignatureZero) {
  LatencyTable table;
  EXPECT_EQ(table.Find(0), nullptr);
  EXPECT_TRUE(table.FindOrInsert(0, {2.0, 1, false}).second);
  EXPECT_FALSE(table.FindOrInsert(0, {5.0, 1, false}).second);
  ASSERT_NE(table.Find(0), nullptr);
  EXPECT_EQ(table.Find(0)->ms, 2.0);
  EXPECT_TRUE(table.FindOrInsert(1, {3.0, 1, false}).second);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.EraseIf([](const LatencyTable::Entry& e) { return e.ms == 2.0; }), 1u);
  EXPECT_EQ(table.Find(0), nullptr);
  ASSERT_NE(table.Find(1), nullptr);
  EXPECT_EQ(table.size(), 1u);
}

// Past the mapped-table size (it grows in place), every entry is found with
// its value; EraseIf drops exactly what it is asked to, keeps the rest
// findable and gives memory back.
TEST(LatencyTableTest, GrowsAndForgetsSelectively) {
  LatencyTable table;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> signatures;
  for (int i = 0; i < 300000; ++i) {
    const uint64_t s = rng();
    if (table.FindOrInsert(s, {i % 3 == 0 ? kUnknown : double(i), uint32_t(i % 5), false}).second) {
      signatures.push_back(s);
    }
  }
  ASSERT_EQ(table.size(), signatures.size());
  const size_t grown = table.memory_bytes();
  for (size_t i = 0; i < signatures.size(); ++i) {
    const LatencyTable::Entry* e = table.Find(signatures[i]);
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->last_pass, uint32_t(i % 5));
  }
  // Forget the known latencies of passes before 4.
  const auto drop = [](const LatencyTable::Entry& e) {
    return !std::isnan(e.ms) && e.last_pass < 4;
  };
  size_t dropped = 0;
  for (size_t i = 0; i < signatures.size(); ++i) {
    dropped += drop(*table.Find(signatures[i]));
  }
  EXPECT_EQ(table.EraseIf(drop), dropped);
  EXPECT_EQ(table.size(), signatures.size() - dropped);
  EXPECT_LT(table.memory_bytes(), grown);
  for (size_t i = 0; i < signatures.size(); ++i) {
    const bool known = i % 3 != 0;
    const bool kept = !(known && i % 5 < 4);
    const LatencyTable::Entry* e = table.Find(signatures[i]);
    ASSERT_EQ(e != nullptr, kept) << i;
    if (kept) EXPECT_EQ(std::isnan(e->ms), !known) << i;
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
