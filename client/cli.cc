#include "client/cli.h"

#include <unistd.h>

#include <iostream>

#include "client/command.h"
#include "common/strings.h"

namespace iosfarm::client {

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"iosfarm: a tuning farm for CNN inference on GPUs", "iosfarm"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  CommandContext context{out, err, absl::OkStatus(),
                         /*out_is_tty=*/&out == &std::cout && isatty(STDOUT_FILENO) == 1};
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Help requested on a subcommand arrives as CallForHelp too; anything else
    // is a usage error.
    err << "iosfarm: " << e.what() << "\nRun 'iosfarm --help' for usage.\n";
    return kExitUsage;
  }
  if (!context.result.ok()) {
    err << "iosfarm: error: " << ToStd(context.result.message()) << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace iosfarm::client
