#include "graph/onnx/torchvision_export.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace iosfarm::graph::onnx_import::testing {

namespace {

std::string SourceDir() {
  if (const char* dir = std::getenv("IOSFARM_SOURCE_DIR")) return dir;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}

// <build dir>/onnx_models; without IOSFARM_BINARY_DIR (test run by hand),
// next to the test binary.
std::string ModelDir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("IOSFARM_BINARY_DIR")) {
    dir = env;
  } else {
    std::error_code error;
    dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
    if (error) dir = std::filesystem::temp_directory_path();
  }
  return (dir / "onnx_models").string();
}

// Holds an exclusive flock on `path` while alive.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(open(path.c_str(), O_CREAT | O_RDWR, 0644)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Runs the exporter into `dir` (with `flags`) unless `model`'s `files`
// (suffixes of <dir>/<model>) all exist; returns <dir>/<model>.
StatusOr<std::string> Export(const std::string& dir, const std::string& flags,
                             const std::string& model,
                             const std::vector<std::string>& export_together,
                             const std::vector<std::string>& files) {
  const std::string stem = dir + "/" + model;
  const auto exported = [&] {
    for (const std::string& suffix : files) {
      if (!std::filesystem::exists(stem + suffix)) return false;
    }
    return true;
  };
  if (exported()) return stem;
  const char* chosen = std::getenv("IOSFARM_PYTHON");  // e.g. a torch venv on a GPU machine
  const std::string python = chosen != nullptr && *chosen != '\0' ? chosen : "/usr/bin/python3";
  if (!std::filesystem::exists(python)) {
    return absl::FailedPreconditionError(StrCat("python3 is not installed (", python, ")"));
  }
  std::filesystem::create_directories(dir);
  FileLock lock(dir + "/.export.lock");
  if (exported()) return stem;  // exported while we waited
  const std::string script = SourceDir() + "/tests/onnx/export_torchvision.py";
  const std::string log = dir + "/export.log";
  std::string command = python + " '" + script + "' '" + dir + "' --opset 13 " + flags + model;
  for (const std::string& other : export_together) {
    if (other != model) command += " " + other;
  }
  command += " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log_file(log);
  std::stringstream output;
  output << log_file.rdbuf();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    return absl::FailedPreconditionError(
        StrCat("cannot export torchvision models: ", output.str()));
  }
  if (status != 0 || !exported()) {
    return absl::InternalError(
        StrCat("export of ", model, " failed (status ", status, "): ", output.str()));
  }
  return stem;
}

}  // namespace

StatusOr<std::string> ExportTorchvisionModel(const std::string& model,
                                             const std::vector<std::string>& export_together) {
  ASSIGN_OR_RETURN(std::string stem, Export(ModelDir(), "", model, export_together, {".onnx"}));
  return stem + ".onnx";
}

StatusOr<TorchReference> ExportTorchvisionReference(
    const std::string& model, const std::vector<std::string>& export_together) {
  ASSIGN_OR_RETURN(std::string stem,
                   Export(ModelDir() + "/reference", "--reference ", model, export_together,
                          {".onnx", ".input.npy", ".output.npy"}));
  return TorchReference{stem + ".onnx", stem + ".input.npy", stem + ".output.npy"};
}

}  // namespace iosfarm::graph::onnx_import::testing
