// The `iosfarm` command line: a table of subcommands on top of CLI11.
//
// RunCli parses argv, runs one subcommand and returns the process exit code:
// 0 success, 1 failure (a one-line "iosfarm: error: ..." on `err`), 2 usage
// error (bad flags or arguments; the message and a hint go to `err`). Output
// meant for machines goes to `out` only. Thread-compatible; no global state.
#ifndef IOSFARM_CLIENT_CLI_H_
#define IOSFARM_CLIENT_CLI_H_

#include <ostream>
#include <string>

namespace iosfarm::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// "iosfarm <version>" (`iosfarm --version`).
std::string VersionText();

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_CLI_H_
