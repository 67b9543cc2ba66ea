#include "common/flags/flags.h"

#include <cctype>
#include <iostream>

#include "common/strings.h"

namespace iosfarm {
namespace {

// "--name" or "-n" (not "-3", a negative number).
bool LooksLikeFlag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  if (arg[1] == '-') return arg.size() > 2;
  return std::isalpha(static_cast<unsigned char>(arg[1])) != 0;
}

}  // namespace

std::string DidYouMean(const std::optional<std::string>& name) {
  return name ? StrCat("; did you mean '", *name, "'?") : "";
}

std::string UnknownFlagMessage(const CLI::App& command, const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
  }
  std::string message;
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (!LooksLikeFlag(arg)) continue;
    const std::string name = arg.substr(0, arg.find('='));
    bool known = false;
    for (const std::string& flag : flags) known = known || flag == name;
    // "-abc": a group of short flags, or a short flag with its value glued on.
    if (!known && name.size() > 2 && name[1] != '-') {
      for (const std::string& flag : flags) known = known || flag == name.substr(0, 2);
    }
    if (known) continue;
    if (!message.empty()) message += "\n";
    message += StrCat("unknown flag '", name, "' for '", command.get_parent() != nullptr ?
                      StrCat(command.get_parent()->get_name(), " ", command.get_name()) :
                      command.get_name(), "'", DidYouMean(NearestName(name, flags)));
  }
  return message;
}

std::optional<int> ParseFlags(CLI::App& app, int argc, const char* const* argv,
                              std::ostream& err) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // A mistyped flag is the likeliest cause of most parse errors (CLI11 then
    // complains about an extra argument or a missing one): name it first.
    const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
    const std::string unknown = UnknownFlagMessage(app, args);
    err << app.get_name() << ": error: " << (unknown.empty() ? std::string(e.what()) : unknown)
        << "\nRun with --help for more information.\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace iosfarm
