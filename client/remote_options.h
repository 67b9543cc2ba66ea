// Where the remote commands of the CLI (submit, status, watch, ...) find the
// iosfarm server: --server / --token / --tls-ca, each falling back to an
// environment variable (IOSFARM_SERVER, IOSFARM_TOKEN, IOSFARM_TLS_CA) and
// then to a default (server 127.0.0.1:7070, no token, plaintext).
//
// Flags win over the environment; an empty environment variable counts as
// unset. Stateless; thread-compatible.
#ifndef IOSFARM_CLIENT_REMOTE_OPTIONS_H_
#define IOSFARM_CLIENT_REMOTE_OPTIONS_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/local_farm.h"

namespace iosfarm::client {

inline constexpr char kDefaultServer[] = "127.0.0.1:7070";
inline constexpr char kServerEnv[] = "IOSFARM_SERVER";
inline constexpr char kTokenEnv[] = "IOSFARM_TOKEN";
inline constexpr char kTlsCaEnv[] = "IOSFARM_TLS_CA";

// The flags as given on the command line (nullopt: not given).
struct RemoteFlags {
  std::optional<std::string> server;
  std::optional<std::string> token;
  std::optional<std::string> tls_ca;
};

// The resolved connection settings.
struct RemoteOptions {
  std::string server = kDefaultServer;  // host:port
  std::string token;                    // bearer token; empty: none sent
  std::string tls_ca_file;              // empty: plaintext
  // How long to wait for the connection before a call gives up with a message
  // naming the address.
  std::chrono::milliseconds connect_timeout{5000};
  // Deadline of unary calls once connected (models upload with SubmitJob).
  std::chrono::milliseconds call_timeout{120000};
};

// EnvLookup and ProcessEnv: common/local_farm.h.
// flags > environment > defaults.
RemoteOptions ResolveRemoteOptions(const RemoteFlags& flags, const EnvLookup& env = ProcessEnv);

// Adds --server, --token and --tls-ca to a subcommand, storing into `flags`
// (which must outlive parsing).
void AddRemoteFlags(CLI::App& command, RemoteFlags& flags);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_REMOTE_OPTIONS_H_
