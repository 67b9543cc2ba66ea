#include "client/cli_usage.h"

#include <cctype>
#include <charconv>

#include "client/suggest.h"
#include "common/strings.h"

namespace iosfarm::client {
namespace {

constexpr char kUsagePayload[] = "iosfarm.dev/usage-error";

std::string DidYouMean(const std::optional<std::string>& name) {
  return name ? StrCat("; did you mean '", *name, "'?") : "";
}

// "--name" or "-n" (not "-3", a negative number).
bool LooksLikeFlag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  if (arg[1] == '-') return arg.size() > 2;
  return std::isalpha(static_cast<unsigned char>(arg[1])) != 0;
}

}  // namespace

Status UsageError(std::string_view message) {
  Status status = absl::InvalidArgumentError(absl::string_view(message.data(), message.size()));
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

CLI::Validator JobIdValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t id = 0;
        const char* end = text.data() + text.size();
        auto [ptr, error] = std::from_chars(text.data(), end, id);
        if (text.empty() || error != std::errc() || ptr != end || id <= 0) {
          return StrCat("job id must be a positive integer, got '", text, "'");
        }
        return "";
      },
      "JOB_ID", "JobId");
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty() || args[0].empty() || args[0][0] == '-') return "";
  const std::vector<std::string> names = SubcommandNames(app);
  for (const std::string& name : names) {
    if (name == args[0]) return "";
  }
  return StrCat("unknown command '", args[0], "'", DidYouMean(NearestName(args[0], names)));
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

}  // namespace iosfarm::client
