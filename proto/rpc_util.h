// The RPC edge shared by the server, the worker daemon and the CLI.
//
// One function maps Status to gRPC status codes (and back); channels are
// created in one place (TLS optional); bearer tokens travel in the
// `authorization` metadata as "Bearer <token>". Stateless and thread-safe.
#ifndef IOSFARM_PROTO_RPC_UTIL_H_
#define IOSFARM_PROTO_RPC_UTIL_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace iosfarm::rpc {

inline constexpr std::string_view kAuthorizationKey = "authorization";

// The single Status -> grpc::Status mapping (codes are numerically equal in
// absl and gRPC; the message is kept).
grpc::Status ToGrpcStatus(const Status& status);
// The reverse, for clients; the message is prefixed with nothing.
Status FromGrpcStatus(const grpc::Status& status);

struct ChannelOptions {
  std::string address;      // host:port
  std::string tls_ca_file;  // PEM of the CA that signed the server; empty: plaintext
  // Max message size both ways (models travel as ONNX bytes).
  int max_message_bytes = 512 << 20;
};

// A channel to `options.address`. InvalidArgument for an empty address,
// NotFound/InvalidArgument naming the CA file when it cannot be read.
StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options);

// Adds "authorization: Bearer <token>" (nothing for an empty token, or for
// one NormalizeToken rejects: the call then fails as unauthenticated instead
// of aborting) and, if given, a deadline to a client context.
void PrepareContext(grpc::ClientContext& context, std::string_view token,
                    std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// A token as read from a flag, an environment variable or a file: leading
// and trailing whitespace (a file's or `echo`'s newline) removed; then
// InvalidArgument naming `source` and the position when a byte is left that
// cannot travel in a header (control characters, spaces, non-ASCII: gRPC
// aborts the process on those).
StatusOr<std::string> NormalizeToken(std::string_view token, std::string_view source);

// The bearer token a call carries, or "" when it has none (or a malformed
// header).
std::string BearerToken(const grpc::ServerContext& context);

// Reads a whole file (PEM certificates, token files). NotFound names the path.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Waits until `channel` is connected or `timeout` passes. Unavailable names the
// address when it does not connect.
Status WaitForConnected(grpc::Channel& channel, std::string_view address,
                        std::chrono::milliseconds timeout);

}  // namespace iosfarm::rpc

#endif  // IOSFARM_PROTO_RPC_UTIL_H_
