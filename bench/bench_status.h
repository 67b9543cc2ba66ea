// Errors of the benchmark programs: a Status whose message names what
// failed ("squeezenet verify: ..."), printed once by main. Thread-safe.
#ifndef IOSFARM_BENCH_BENCH_STATUS_H_
#define IOSFARM_BENCH_BENCH_STATUS_H_

#include <string_view>

#include "common/status.h"
#include "common/strings.h"

namespace iosfarm::bench {

// `status` with "<what>: " before its message (same code); OK stays OK.
inline Status Prefixed(std::string_view what, const Status& status) {
  if (status.ok()) return status;
  return Status(status.code(), StrCat(what, ": ", status.message()));
}

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_BENCH_STATUS_H_
