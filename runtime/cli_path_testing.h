// The `iosfarm` binary the runtime's tests run: $IOSFARM_CLI where set (a
// bundle carried to another machine, tools/gpu_run), else the one built
// beside the test (IOSFARM_CLI, a compile definition naming its build path).
#ifndef IOSFARM_RUNTIME_CLI_PATH_TESTING_H_
#define IOSFARM_RUNTIME_CLI_PATH_TESTING_H_

#include <cstdlib>
#include <string>

namespace iosfarm {

inline std::string IosfarmCliForTests() {
  const char* cli = std::getenv("IOSFARM_CLI");
  return cli != nullptr && *cli != '\0' ? cli : IOSFARM_CLI;
}

}  // namespace iosfarm

#endif  // IOSFARM_RUNTIME_CLI_PATH_TESTING_H_
