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
  // Progress goes to `err`. When it is a terminal, progress lines fit its
  // width (`err_width` columns) and are redrawn in place; otherwise they are
  // printed as plain lines (client/progress_line.h).
  bool err_is_tty = false;
  int err_width = 80;
};

// Each subcommand adds itself to `app`; its callback stores its outcome in
// context.result (errors become exit code 1 with the message).
void AddModelsCommand(CLI::App& app, CommandContext& context);
void AddInspectCommand(CLI::App& app, CommandContext& context);
void AddSearchCommand(CLI::App& app, CommandContext& context);
void AddRunCommand(CLI::App& app, CommandContext& context);
// Embedded server + local worker (or --server).
void AddTuneCommand(CLI::App& app, CommandContext& context);
// Remote commands (a server at --server / IOSFARM_SERVER).
void AddSubmitCommand(CLI::App& app, CommandContext& context);
void AddWatchCommand(CLI::App& app, CommandContext& context);
void AddStatusCommand(CLI::App& app, CommandContext& context);
void AddListCommand(CLI::App& app, CommandContext& context);
void AddCancelCommand(CLI::App& app, CommandContext& context);
void AddResultCommand(CLI::App& app, CommandContext& context);
void AddWorkersCommand(CLI::App& app, CommandContext& context);
void AddTimelineCommand(CLI::App& app, CommandContext& context);
void AddRetuneCommand(CLI::App& app, CommandContext& context);
// Admin commands.
void AddForgetCommand(CLI::App& app, CommandContext& context);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_COMMAND_H_
