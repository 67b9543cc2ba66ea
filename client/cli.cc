#include "client/cli.h"

#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/progress_line.h"
#include "common/strings.h"

#ifndef IOSFARM_VERSION
#define IOSFARM_VERSION "dev"
#endif

namespace iosfarm::client {
namespace {

int Usage(std::ostream& err, const std::string& message, const std::string& help_command) {
  err << "iosfarm: " << message << "\nRun 'iosfarm " << help_command << "--help' for usage.\n";
  return kExitUsage;
}

// `iosfarm help [COMMAND]`: the help of the program or of one command.
void AddHelpCommand(CLI::App& app, std::string& topic, bool& asked) {
  auto* cmd = app.add_subcommand("help", "Show the help of iosfarm or of one command");
  cmd->add_option("COMMAND", topic, "Command to explain");
  cmd->callback([&asked] { asked = true; });
}

}  // namespace

std::string VersionText() { return StrCat("iosfarm ", IOSFARM_VERSION); }

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"iosfarm: a tuning farm for CNN inference on GPUs", "iosfarm"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  app.set_version_flag("--version", VersionText());
  CommandContext context{out, err, absl::OkStatus(),
                         /*err_is_tty=*/&err == &std::cerr && isatty(STDERR_FILENO) == 1,
                         /*err_width=*/TerminalWidth(STDERR_FILENO)};
  AddModelsCommand(app, context);
  AddInspectCommand(app, context);
  AddSearchCommand(app, context);
  AddRunCommand(app, context);
  AddTuneCommand(app, context);
  AddSubmitCommand(app, context);
  AddWatchCommand(app, context);
  AddStatusCommand(app, context);
  AddListCommand(app, context);
  AddCancelCommand(app, context);
  AddResultCommand(app, context);
  AddWorkersCommand(app, context);
  AddTimelineCommand(app, context);
  AddRetuneCommand(app, context);
  AddForgetCommand(app, context);
  std::string help_topic;
  bool help_asked = false;
  AddHelpCommand(app, help_topic, help_asked);

  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (std::string unknown = UnknownCommandMessage(app, args); !unknown.empty()) {
    return Usage(err, unknown, "");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // A mistyped flag is the likeliest cause of most parse errors (CLI11 then
    // complains about an extra argument or a missing one): name it first.
    const std::vector<CLI::App*> selected = app.get_subcommands();
    const CLI::App* command = selected.empty() ? &app : selected.front();
    const std::string help_command = selected.empty() ? "" : command->get_name() + " ";
    std::string unknown_flags = UnknownFlagMessage(*command, args);
    return Usage(err, unknown_flags.empty() ? std::string(e.what()) : unknown_flags,
                 help_command);
  }
  if (help_asked) {
    if (help_topic.empty()) {  // app.help() would explain the help command itself
      out << app.get_formatter()->make_help(&app, "iosfarm", CLI::AppFormatMode::Normal);
      return kExitOk;
    }
    if (std::string unknown = UnknownCommandMessage(app, {help_topic}); !unknown.empty()) {
      return Usage(err, unknown, "");
    }
    out << app.get_subcommand(help_topic)->help("iosfarm");
    return kExitOk;
  }
  if (IsUsageError(context.result)) {
    const std::vector<CLI::App*> selected = app.get_subcommands();
    return Usage(err, StrCat("error: ", ToStd(context.result.message())),
                 selected.empty() ? "" : selected.front()->get_name() + " ");
  }
  if (!context.result.ok()) {
    err << "iosfarm: error: " << ToStd(context.result.message()) << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace iosfarm::client
