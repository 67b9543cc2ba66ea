#include "common/text.h"

#include <cstdio>

#include "common/strings.h"

namespace iosfarm {
namespace {

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

}  // namespace

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (!IsControl(c)) {
      out.push_back(ch);
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
    out += escaped;
  }
  return out;
}

std::string Truncated(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return StrCat(text.substr(0, cut), " ... (", text.size() - cut, " more bytes)");
}

Status CheckIdentifier(std::string_view field, std::string_view value, size_t max_bytes) {
  if (value.empty()) return absl::InvalidArgumentError(StrCat(field, " is empty"));
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(StrCat(field, " is ", value.size(),
                                             " bytes long; at most ", max_bytes, " are allowed ('",
                                             Printable(Truncated(value, 40)), "')"));
  }
  for (char ch : value) {
    if (IsControl(static_cast<unsigned char>(ch))) {
      return absl::InvalidArgumentError(
          StrCat(field, " '", Printable(value), "' holds a control character"));
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm
