#include "common/local_farm.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "common/strings.h"

namespace iosfarm {

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<std::string> DefaultDatabasePath(const EnvLookup& env) {
  std::filesystem::path dir;
  if (auto xdg = env("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
    dir = *xdg;
  } else if (auto home = env("HOME"); home && !home->empty()) {
    dir = std::filesystem::path(*home) / ".cache";
  } else {
    return absl::FailedPreconditionError(
        "neither XDG_CACHE_HOME nor HOME is set; give the latency database with --db FILE");
  }
  return (dir / "iosfarm" / "latency.db").string();
}

std::string DefaultDeviceKey(const std::string& backend, const std::string& description,
                             bool cuda_graph_stages) {
  if (backend != "cuda") {
    std::string key = StrCat("local-", backend);
    for (char& c : key) c = c == ':' ? '-' : c;
    return key;
  }
  std::string name = description.substr(0, description.find(" ("));
  std::string key;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!key.empty() && key.back() != '-') {
      key += '-';
    }
  }
  while (!key.empty() && key.back() == '-') key.pop_back();
  if (key.empty()) key = "local-cuda";
  return cuda_graph_stages ? key + "-graph-stages" : key;
}

Status CreateDatabaseDirectory(const std::string& db_path) {
  const std::filesystem::path parent = std::filesystem::path(db_path).parent_path();
  if (parent.empty()) return absl::OkStatus();
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) {
    return absl::UnavailableError(StrCat("cannot create the directory '", parent.string(),
                                         "' of the latency database: ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm
