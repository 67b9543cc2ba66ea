#include "common/status.h"

#include <gtest/gtest.h>

namespace iosfarm {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(*out, Half(half));
  return absl::OkStatus();
}

Status Check(bool ok) {
  RETURN_IF_ERROR(ok ? absl::OkStatus() : absl::InternalError("boom"));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status status = Quarter(6, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "odd");
}

TEST(StatusMacrosTest, ReturnIfErrorPropagates) {
  EXPECT_TRUE(Check(true).ok());
  EXPECT_EQ(Check(false).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace iosfarm
