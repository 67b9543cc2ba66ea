#include "common/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/strings.h"

namespace iosfarm {

Status WriteFileAtomically(const std::string& path, std::string_view bytes, std::string_view what) {
  const std::string temporary = StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file.good()) {
      std::remove(temporary.c_str());
      return absl::UnavailableError(StrCat("cannot write ", what, " '", path, "'"));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::UnavailableError(StrCat("cannot write ", what, " '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm
