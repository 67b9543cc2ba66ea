// The runtime's one boundary between the internals' Status values and the
// public API's iosfarm::Error exceptions (include/iosfarm/runtime.h).
#ifndef IOSFARM_RUNTIME_STATUS_ERROR_H_
#define IOSFARM_RUNTIME_STATUS_ERROR_H_

#include <utility>

#include "common/status.h"
#include "iosfarm/runtime.h"

namespace iosfarm::runtime {

// The public code of an internal status code (codes without a public
// counterpart become kInternal, resource limits kUnavailable).
ErrorCode ToErrorCode(absl::StatusCode code);

// Throws Error(ToErrorCode(status.code()), status.message()) unless OK.
void ThrowIfError(const Status& status);

template <typename T>
T ValueOrThrow(StatusOr<T> value) {
  ThrowIfError(value.status());
  return *std::move(value);
}

}  // namespace iosfarm::runtime

#endif  // IOSFARM_RUNTIME_STATUS_ERROR_H_
