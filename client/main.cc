// The `iosfarm` binary: everything happens in RunCli (client/cli.h).
#include <iostream>

#include "client/cli.h"

int main(int argc, char** argv) {
  return iosfarm::client::RunCli(argc, argv, std::cout, std::cerr);
}
