#include "client/remote_options.h"

namespace iosfarm::client {
namespace {

// The flag if given, else the environment variable if set and non-empty.
std::optional<std::string> Pick(const std::optional<std::string>& flag, const char* env_name,
                                const EnvLookup& env) {
  if (flag) return flag;
  if (env) {
    std::optional<std::string> value = env(env_name);
    if (value && !value->empty()) return value;
  }
  return std::nullopt;
}

}  // namespace

RemoteOptions ResolveRemoteOptions(const RemoteFlags& flags, const EnvLookup& env) {
  RemoteOptions options;
  if (auto server = Pick(flags.server, kServerEnv, env)) options.server = *server;
  if (auto token = Pick(flags.token, kTokenEnv, env)) options.token = *token;
  if (auto ca = Pick(flags.tls_ca, kTlsCaEnv, env)) options.tls_ca_file = *ca;
  return options;
}

void AddRemoteFlags(CLI::App& command, RemoteFlags& flags) {
  command.add_option("--server", flags.server,
                     "Server host:port (env IOSFARM_SERVER, default 127.0.0.1:7070)")
      ->group("Server");
  command.add_option("--token", flags.token, "Bearer token (env IOSFARM_TOKEN)")->group("Server");
  command.add_option("--tls-ca", flags.tls_ca,
                     "PEM file of the CA that signed the server's certificate; enables TLS "
                     "(env IOSFARM_TLS_CA)")
      ->group("Server");
}

}  // namespace iosfarm::client
