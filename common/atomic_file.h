// Writing a file so that readers see the old contents or the new, never a
// part: the bytes go to a temporary file beside it (same directory, so the
// rename cannot cross file systems), which is then renamed over it.
#ifndef IOSFARM_COMMON_ATOMIC_FILE_H_
#define IOSFARM_COMMON_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace iosfarm {

// Writes `bytes` to `path` atomically. Unavailable "cannot write <what>
// '<path>'" when it cannot (the temporary file is removed).
Status WriteFileAtomically(const std::string& path, std::string_view bytes, std::string_view what);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_ATOMIC_FILE_H_
