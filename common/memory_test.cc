#include "common/memory.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace iosfarm {
namespace {

TEST(MemoryTest, ResidentBytesSeesAnAllocationTouched) {
  const int64_t before = ResidentBytes();
  ASSERT_GT(before, 0);
  std::vector<char> block(64 << 20, 1);
  EXPECT_GE(ResidentBytes(), before + (48 << 20));
  EXPECT_EQ(block[12345], 1);
}

#if defined(__GLIBC__)
TEST(MemoryTest, FreedSmallBlocksOfAThreadGoBackToTheSystem) {
  // Many small blocks, freed in an order that leaves the arena's top in use
  // (so glibc's own trimming of the top cannot give them back).
  int64_t peak = 0, freed = 0;
  std::unique_ptr<char[]> keep_top;
  std::thread([&] {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < (1 << 20); ++i) {
      blocks.emplace_back(new char[200]);
      blocks.back()[0] = static_cast<char>(i);
    }
    keep_top.reset(new char[200]);
    peak = ResidentBytes();
    blocks.clear();
    freed = ResidentBytes();
  }).join();
  ReturnFreeMemory();
  const int64_t after = ResidentBytes();
  EXPECT_GT(freed - after, 100 << 20) << "peak " << peak << " freed " << freed
                                      << " after trim " << after;
}
#endif

}  // namespace
}  // namespace iosfarm
