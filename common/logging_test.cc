#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

namespace iosfarm {
namespace {

TEST(LoggingTest, RejectsUnknownLevelByName) {
  Status status = InitLogging("loud");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("'loud'"), std::string_view::npos);
}

TEST(LoggingTest, SetsLevel) {
  ASSERT_TRUE(InitLogging("warn").ok());
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);
  spdlog::drop("iosfarm");
}

}  // namespace
}  // namespace iosfarm
