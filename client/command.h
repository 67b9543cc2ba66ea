// What every subcommand of the CLI gets and how it is registered.
#ifndef IOSFARM_CLIENT_COMMAND_H_
#define IOSFARM_CLIENT_COMMAND_H_

#include <ostream>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace iosfarm::client {

struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  Status result;  // set by the subcommand that ran
};

// Each subcommand adds itself to `app`; its callback stores its outcome in
// context.result (errors become exit code 1 with the message).
void AddModelsCommand(CLI::App& app, CommandContext& context);
void AddInspectCommand(CLI::App& app, CommandContext& context);
void AddSearchCommand(CLI::App& app, CommandContext& context);
void AddRunCommand(CLI::App& app, CommandContext& context);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_COMMAND_H_
