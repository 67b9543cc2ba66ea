#include "runtime/status_error.h"

#include <string>

namespace iosfarm::runtime {

ErrorCode ToErrorCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return ErrorCode::kInvalidArgument;
    case absl::StatusCode::kNotFound:
      return ErrorCode::kNotFound;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return ErrorCode::kFailedPrecondition;
    case absl::StatusCode::kUnimplemented:
      return ErrorCode::kUnimplemented;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(ToErrorCode(status.code()), std::string(status.message()));
}

}  // namespace iosfarm::runtime
