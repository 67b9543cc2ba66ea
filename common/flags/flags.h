// Command-line parsing shared by every binary (CLI11): "did you mean" for a
// mistyped flag, and one way to parse, print a usage error and exit 2
// (0 for --help and --version). The `iosfarm` CLI adds subcommand hints on
// top (client/cli_usage.h). Stateless; thread-safe.
#ifndef IOSFARM_COMMON_FLAGS_FLAGS_H_
#define IOSFARM_COMMON_FLAGS_FLAGS_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/flags/suggest.h"

namespace iosfarm {

// "; did you mean 'NAME'?", or empty without a name.
std::string DidYouMean(const std::optional<std::string>& name);

// For the flags in `args` that `command` does not have: "unknown flag
// '--bakend' for 'iosfarm search'; did you mean '--backend'?" (one line per
// flag, the hint only when a flag is near). Empty when every flag is known.
std::string UnknownFlagMessage(const CLI::App& command, const std::vector<std::string>& args);

// Parses argv with `app`. nullopt: go on. Otherwise the exit code: 0 after
// --help or --version (printed to stdout), 2 after a usage error, printed to
// `err` as "NAME: error: ..." naming a mistyped flag and the nearest known
// one first, then "Run with --help for more information."
std::optional<int> ParseFlags(CLI::App& app, int argc, const char* const* argv,
                              std::ostream& err);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_FLAGS_FLAGS_H_
