// String helpers.
//
// Debian's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl::StrCat does not accept std::string_view.
// iosfarm::StrCat accepts std::string_view, absl::string_view, std::string,
// C strings, chars, bools, integers and floating point values.
#ifndef IOSFARM_COMMON_STRINGS_H_
#define IOSFARM_COMMON_STRINGS_H_

#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace iosfarm {
namespace strings_internal {

template <typename T>
void Append(std::string& out, const T& value) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, absl::string_view>) {
    out.append(value.data(), value.size());
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out.append(std::string_view(value));
  } else if constexpr (std::is_same_v<U, bool>) {
    out.append(value ? "true" : "false");
  } else if constexpr (std::is_same_v<U, char>) {
    out.push_back(value);
  } else if constexpr (std::is_integral_v<U>) {
    out.append(std::to_string(value));
  } else if constexpr (std::is_floating_point_v<U>) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%g", static_cast<double>(value));
    out.append(buffer);
  } else {
    static_assert(sizeof(U) == 0, "StrCat: unsupported argument type");
  }
}

}  // namespace strings_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(out, args), ...);
  return out;
}

// absl::string_view (e.g. Status::message()) as std::string_view.
inline std::string_view ToStd(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_STRINGS_H_
