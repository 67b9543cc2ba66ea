// Status and StatusOr for iosfarm: errors are values.
//
// iosfarm uses absl::Status / absl::StatusOr<T> (abseil comes with gRPC). This
// header re-exports them under iosfarm:: and adds the two propagation macros
// used everywhere. A Status message must name what is wrong (file, node, field).
#ifndef IOSFARM_COMMON_STATUS_H_
#define IOSFARM_COMMON_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iosfarm {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

}  // namespace iosfarm

#define IOSFARM_CONCAT_INNER_(a, b) a##b
#define IOSFARM_CONCAT_(a, b) IOSFARM_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status iosfarm_status_ = (expr);               \
    if (!iosfarm_status_.ok()) return iosfarm_status_;     \
  } while (false)

// `lhs` = value of `rexpr` (a StatusOr); returns its status if not OK.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ASSIGN_OR_RETURN_IMPL_(IOSFARM_CONCAT_(iosfarm_statusor_, __LINE__), lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                           \
  if (!statusor.ok()) return statusor.status();      \
  lhs = std::move(statusor).value()

#endif  // IOSFARM_COMMON_STATUS_H_
