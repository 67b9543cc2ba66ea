#include "server/search_places.h"

#include "gtest/gtest.h"

namespace iosfarm::server {
namespace {

TEST(SearchPlacesTest, AtMostMaxHoldAndTheOthersStartOldestFirst) {
  SearchPlaces places(2);
  EXPECT_TRUE(places.Take(1));
  EXPECT_TRUE(places.Take(2));
  EXPECT_FALSE(places.Take(3));
  EXPECT_FALSE(places.Take(4));
  EXPECT_FALSE(places.Take(3));  // asking again keeps its turn
  EXPECT_EQ(places.held(), 2);
  EXPECT_EQ(places.waiting(), 2u);
  EXPECT_EQ(places.Release(1), std::vector<int64_t>{3});
  EXPECT_TRUE(places.holds(3));
  EXPECT_FALSE(places.holds(1));
  // A waiting job that ends (cancelled) gives up its turn; releasing a job
  // that holds nothing starts nobody.
  EXPECT_TRUE(places.Release(4).empty());
  EXPECT_TRUE(places.Release(99).empty());
  EXPECT_EQ(places.waiting(), 0u);
  EXPECT_EQ(places.Release(2), std::vector<int64_t>{});
  EXPECT_TRUE(places.Take(5));
}

TEST(SearchPlacesTest, ANewJobDoesNotJumpTheQueue) {
  SearchPlaces places(1);
  EXPECT_TRUE(places.Take(1));
  EXPECT_FALSE(places.Take(2));
  EXPECT_EQ(places.Release(1), std::vector<int64_t>{2});
  EXPECT_FALSE(places.Take(3));
  EXPECT_EQ(places.Release(2), std::vector<int64_t>{3});
  EXPECT_EQ(places.held(), 1);
}

}  // namespace
}  // namespace iosfarm::server
