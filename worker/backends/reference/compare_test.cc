#include "worker/backends/reference/compare.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::reference {
namespace {

using ::testing::HasSubstr;

graph::Tensor T(std::vector<float> data) {
  graph::Tensor t;
  t.shape = {static_cast<int64_t>(data.size())};
  t.data = std::move(data);
  return t;
}

TEST(CompareTest, RelativeToTheValueOrTheTensorsRms) {
  // rms of expected = sqrt((100^2 + 1 + 0) / 3) ~ 57.7: small elements are
  // judged against it.
  EXPECT_TRUE(CompareTensors(T({100.05f, 1.04f, 0.05f}), T({100, 1, 0}), 1e-3, "x").ok());
  Status bad = CompareTensors(T({100.2f, 1, 0}), T({100, 1, 0}), 1e-3, "x");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(bad.message(), HasSubstr("x: 1 of 3 values differ"));
  EXPECT_THAT(bad.message(), HasSubstr("worst at 0"));
  // Pure relative error where the values dominate the rms.
  EXPECT_FALSE(CompareTensors(T({1, 1.002f}), T({1, 1}), 1e-3, "y").ok());
  EXPECT_TRUE(CompareTensors(T({0, 0}), T({0, 0}), 1e-3, "zeros").ok());
}

TEST(CompareTest, NonFiniteAndShapeMismatchFail) {
  EXPECT_FALSE(CompareTensors(T({NAN}), T({1}), 1e-3, "nan").ok());
  EXPECT_FALSE(CompareTensors(T({INFINITY}), T({INFINITY}), 1e-3, "inf").ok());
  Status shape = CompareTensors(T({1, 2}), T({1, 2, 3}), 1e-3, "s");
  EXPECT_THAT(shape.message(), HasSubstr("shape [2]"));
  EXPECT_FALSE(CompareTensorLists({T({1})}, {}, 1e-3, "list").ok());
  Status indexed = CompareTensorLists({T({1}), T({5})}, {T({1}), T({4})}, 1e-3, "out");
  EXPECT_THAT(indexed.message(), HasSubstr("out[1]"));
}

}  // namespace
}  // namespace iosfarm::worker::reference
