// Usage errors of the `iosfarm` command line (exit code 2) beyond what CLI11
// reports itself: errors found after parsing, job id arguments, and "did you
// mean" hints for mistyped subcommands and flags. Stateless; thread-safe.
#ifndef IOSFARM_CLIENT_CLI_USAGE_H_
#define IOSFARM_CLIENT_CLI_USAGE_H_

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/flags/flags.h"
#include "common/status.h"

namespace iosfarm::client {

// A usage error a command finds after parsing (e.g. a flag that another one
// requires): RunCli exits 2 with the message. InvalidArgument, marked.
Status UsageError(std::string_view message);
bool IsUsageError(const Status& status);

// Checks a JOB argument: a positive 64-bit integer. Message: "job id must be
// a positive integer, got 'abc'".
CLI::Validator JobIdValidator();

// The names of `app`'s subcommands, in the order they were added.
std::vector<std::string> SubcommandNames(const CLI::App& app);

// `args` (argv without the program name) names an unknown subcommand first:
// "unknown command 'stauts'; did you mean 'status'?" (the hint only when a
// name is near). Empty when the first argument is a flag or a known command.
std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_CLI_USAGE_H_
