#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/strings.h"

namespace iosfarm {

Status InitLogging(std::string_view level) {
  spdlog::level::level_enum parsed = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        StrCat("unknown log level '", level,
                     "' (valid: trace, debug, info, warn, error, off)"));
  }
  auto logger = spdlog::stderr_color_mt("iosfarm");
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  return absl::OkStatus();
}

}  // namespace iosfarm
