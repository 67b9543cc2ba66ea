#include "client/cli_usage.h"

#include <cctype>
#include <charconv>

#include "common/flags/flags.h"
#include "common/strings.h"

namespace iosfarm::client {
namespace {

constexpr char kUsagePayload[] = "iosfarm.dev/usage-error";

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

}  // namespace iosfarm::client
