// Test helper: runs the `iosfarm` CLI in-process (RunCli) and captures what
// it prints. Header-only; for client/*_test.cc.
#ifndef IOSFARM_CLIENT_CLI_TESTING_H_
#define IOSFARM_CLIENT_CLI_TESTING_H_

#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"

namespace iosfarm::client {

struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};

// Runs `iosfarm args...` and returns its exit code, stdout and stderr.
inline CliResult RunIosfarm(std::vector<std::string> args) {
  args.insert(args.begin(), "iosfarm");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_CLI_TESTING_H_
