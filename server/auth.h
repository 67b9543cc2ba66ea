// Bearer-token authentication for the server's two audiences (clients and
// workers), each with its own token set.
//
// Token files: one token per line, optionally followed by whitespace and a
// name (the job owner shown in listings); blank lines and lines starting
// with '#' are ignored. Environment: IOSFARM_CLIENT_TOKENS /
// IOSFARM_WORKER_TOKENS hold comma-separated "token" or "token:name" items.
// An empty set means "no authentication" (the server then listens on
// loopback only unless --insecure is given). Immutable after loading, so
// thread-safe.
#ifndef IOSFARM_SERVER_AUTH_H_
#define IOSFARM_SERVER_AUTH_H_

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace iosfarm::server {

class TokenSet {
 public:
  // InvalidArgument naming the file and line for a malformed line (a token
  // shorter than 16 characters, a duplicate), NotFound for a missing file.
  static StatusOr<TokenSet> FromFile(const std::string& path);
  static StatusOr<TokenSet> FromList(std::string_view list, std::string_view origin);
  // Adds every token of `other` (AlreadyExists-free: duplicates are errors).
  Status Merge(const TokenSet& other);

  bool empty() const { return names_.empty(); }
  size_t size() const { return names_.size(); }

  // The token's name (or "token-<n>") when `token` is in the set, checked in
  // time independent of where the tokens differ. Unauthenticated otherwise
  // (the message never echoes the token). An empty set accepts every call as
  // "anonymous".
  StatusOr<std::string> Authenticate(std::string_view token, std::string_view audience) const;

 private:
  Status Add(std::string token, std::string name, std::string_view origin);
  std::map<std::string, std::string> names_;  // token -> name
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_AUTH_H_
