// Logging setup for iosfarm binaries (spdlog).
//
// Binaries call InitLogging once in main; library code logs through spdlog's
// default logger. Log lines go to stderr so stdout stays machine-readable.
#ifndef IOSFARM_COMMON_LOGGING_H_
#define IOSFARM_COMMON_LOGGING_H_

#include <string_view>

#include "common/status.h"

namespace iosfarm {

// Parses "trace", "debug", "info", "warn", "error", "off" (case-sensitive).
// InvalidArgument names the bad level and lists the valid ones.
Status InitLogging(std::string_view level);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_LOGGING_H_
