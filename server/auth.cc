#include "server/auth.h"

#include <sstream>

#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "proto/rpc_util.h"

namespace iosfarm::server {

namespace {

constexpr size_t kMinTokenLength = 16;

std::string Trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// Constant-time comparison of equal-length prefixes plus the length check.
bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

Status TokenSet::Add(std::string token, std::string name, std::string_view origin) {
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(StrCat(origin, ": token is shorter than ", kMinTokenLength,
                                             " characters"));
  }
  if (name.empty()) name = StrCat("token-", names_.size() + 1);
  if (!names_.emplace(std::move(token), std::move(name)).second) {
    return absl::InvalidArgumentError(StrCat(origin, ": duplicate token"));
  }
  return absl::OkStatus();
}

StatusOr<TokenSet> TokenSet::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, rpc::ReadFileToString(path));
  TokenSet set;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    size_t space = trimmed.find_first_of(" \t");
    std::string token = trimmed.substr(0, space);
    std::string name = space == std::string::npos ? "" : Trim(trimmed.substr(space));
    RETURN_IF_ERROR(set.Add(std::move(token), std::move(name), StrCat(path, ":", number)));
  }
  return set;
}

StatusOr<TokenSet> TokenSet::FromList(std::string_view list, std::string_view origin) {
  TokenSet set;
  int index = 0;
  for (absl::string_view item_view : absl::StrSplit(absl::string_view(list.data(), list.size()),
                                                    ',', absl::SkipWhitespace())) {
    ++index;
    std::string item = Trim(std::string_view(item_view.data(), item_view.size()));
    size_t colon = item.find(':');
    std::string token = item.substr(0, colon);
    std::string name = colon == std::string::npos ? "" : item.substr(colon + 1);
    RETURN_IF_ERROR(set.Add(std::move(token), std::move(name), StrCat(origin, " item ", index)));
  }
  return set;
}

Status TokenSet::Merge(const TokenSet& other) {
  for (const auto& [token, name] : other.names_) {
    RETURN_IF_ERROR(Add(token, name, "merged token set"));
  }
  return absl::OkStatus();
}

StatusOr<std::string> TokenSet::Authenticate(std::string_view token,
                                             std::string_view audience) const {
  if (names_.empty()) return std::string("anonymous");
  if (token.empty()) {
    return absl::UnauthenticatedError(
        StrCat("missing ", audience, " token (send 'authorization: Bearer <token>')"));
  }
  const std::string* found = nullptr;
  for (const auto& [candidate, name] : names_) {
    if (SameToken(candidate, token)) found = &name;
  }
  if (found == nullptr) return absl::UnauthenticatedError(StrCat("invalid ", audience, " token"));
  return *found;
}

}  // namespace iosfarm::server
