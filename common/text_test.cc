#include "common/text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iosfarm {
namespace {

using ::testing::HasSubstr;

TEST(TextTest, PrintableEscapesControlCharactersOnly) {
  EXPECT_EQ(Printable("resnet50"), "resnet50");
  EXPECT_EQ(Printable("a\nb\tc"), "a\\x0ab\\x09c");
  EXPECT_EQ(Printable("\x1b[2Jwiped"), "\\x1b[2Jwiped");
  EXPECT_EQ(Printable("x\x7f"), "x\\x7f");
  EXPECT_EQ(Printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 kept
}

TEST(TextTest, TruncatedCutsAtACharacterBoundaryAndSaysHowMuch) {
  EXPECT_EQ(Truncated("short", 10), "short");
  EXPECT_EQ(Truncated(std::string(100, 'e'), 10), std::string(10, 'e') + " ... (90 more bytes)");
  // "é" is two bytes: a cut inside it backs up before it.
  EXPECT_EQ(Truncated("ab\xc3\xa9z", 3), "ab ... (3 more bytes)");
}

TEST(TextTest, CheckIdentifierNamesTheFieldAndTheProblem) {
  EXPECT_TRUE(CheckIdentifier("device_key", "cuda:h100", 16).ok());
  EXPECT_THAT(std::string(CheckIdentifier("device_key", "", 16).message()),
              HasSubstr("device_key is empty"));
  Status long_key = CheckIdentifier("device_key", std::string(200000, 'k'), 256);
  EXPECT_EQ(long_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(long_key.message()), HasSubstr("200000 bytes long; at most 256"));
  EXPECT_LT(long_key.message().size(), 200u);
  EXPECT_THAT(std::string(CheckIdentifier("worker_id", "w\n1", 16).message()),
              HasSubstr("worker_id 'w\\x0a1' holds a control character"));
}

}  // namespace
}  // namespace iosfarm
