#include "common/flags/suggest.h"

#include <gtest/gtest.h>

namespace iosfarm {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("list", "list"), 0u);
  EXPECT_EQ(EditDistance("lsit", "list"), 2u);  // a transposition is two edits
  EXPECT_EQ(EditDistance("stats", "status"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
}

TEST(NearestNameTest, SuggestsOnlyPlausibleTypos) {
  const std::vector<std::string> commands = {"models", "inspect", "search", "run",  "tune",
                                             "submit", "watch",   "status", "list", "cancel"};
  EXPECT_EQ(NearestName("stauts", commands), "status");
  EXPECT_EQ(NearestName("serach", commands), "search");
  EXPECT_EQ(NearestName("lst", commands), "list");
  EXPECT_EQ(NearestName("tnue", commands), "tune");
  EXPECT_EQ(NearestName("frobnicate", commands), std::nullopt);
  EXPECT_EQ(NearestName("x", commands), std::nullopt);  // too short to guess
  const std::vector<std::string> flags = {"--backend", "--batch", "--block-size", "--format"};
  EXPECT_EQ(NearestName("--bakend", flags), "--backend");
  EXPECT_EQ(NearestName("--batc", flags), "--batch");
  EXPECT_EQ(NearestName("--frmat", flags), "--format");
  EXPECT_EQ(NearestName("--bogus", flags), std::nullopt);
}

}  // namespace
}  // namespace iosfarm
