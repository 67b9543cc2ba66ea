// Text from outside (worker reports, model names, device keys) made safe to
// store and to print.
//
// Printable escapes control characters (C0, DEL; so terminal escape
// sequences and newlines in a model name cannot redraw or break a text table)
// as "\xNN", and keeps everything else, UTF-8 included.
// Truncated keeps at most `max_bytes` bytes (cut at a UTF-8 character
// boundary) and says how much it dropped.
// CheckIdentifier is for names the farm keys things by (worker ids, device
// keys): InvalidArgument naming `field` when empty, longer than `max_bytes`
// or holding a control character.
#ifndef IOSFARM_COMMON_TEXT_H_
#define IOSFARM_COMMON_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace iosfarm {

std::string Printable(std::string_view text);

// `text` unchanged when it fits; otherwise its first bytes (no partial UTF-8
// character) followed by " ... (N more bytes)".
std::string Truncated(std::string_view text, size_t max_bytes);

Status CheckIdentifier(std::string_view field, std::string_view value, size_t max_bytes);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_TEXT_H_
