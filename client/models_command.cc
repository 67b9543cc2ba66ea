// `iosfarm models [--format text|json]`: lists the built-in model zoo.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "client/command.h"
#include "graph/models/zoo.h"

namespace iosfarm::client {

void AddModelsCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("models", "List the built-in model zoo");
  auto format = std::make_shared<std::string>("text");
  cmd->add_option("--format", *format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&context, format] {
    const auto& zoo = graph::models::ZooModels();
    if (*format == "json") {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& model : zoo) {
        list.push_back({{"name", std::string(model.name)},
                        {"description", std::string(model.description)},
                        {"image_size", model.image_size}});
      }
      context.out << nlohmann::json{{"format_version", 1}, {"models", list}}.dump(2) << "\n";
      return;
    }
    for (const auto& model : zoo) {
      char line[256];
      std::snprintf(line, sizeof(line), "%-16s %4lldx%-4lld %.*s\n",
                    std::string(model.name).c_str(), static_cast<long long>(model.image_size),
                    static_cast<long long>(model.image_size),
                    static_cast<int>(model.description.size()), model.description.data());
      context.out << line;
    }
  });
}

}  // namespace iosfarm::client
