#include "proto/rpc_util.h"

#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace iosfarm::rpc {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())),
                      std::string(status.message()));
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return Status(static_cast<absl::StatusCode>(static_cast<int>(status.error_code())),
                status.error_message());
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("error reading '", path, "'"));
  return text.str();
}

StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  if (options.address.empty()) return absl::InvalidArgumentError("no server address given");
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls_ca_file.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    ASSIGN_OR_RETURN(std::string ca, ReadFileToString(options.tls_ca_file));
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ca;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  return grpc::CreateCustomChannel(options.address, credentials, args);
}

StatusOr<std::string> NormalizeToken(std::string_view token, std::string_view source) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!token.empty() && space(token.front())) token.remove_prefix(1);
  while (!token.empty() && space(token.back())) token.remove_suffix(1);
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          StrCat(source, ": the token has a ",
                 c < 0x20 || c == 0x7f ? "control character" : c == ' ' ? "space" : "non-ASCII byte",
                 " at position ", i + 1, " (tokens are printable ASCII without spaces)"));
    }
  }
  return std::string(token);
}

void PrepareContext(grpc::ClientContext& context, std::string_view token,
                    std::optional<std::chrono::milliseconds> timeout) {
  if (auto normalized = NormalizeToken(token, "token"); normalized.ok() && !normalized->empty()) {
    context.AddMetadata(std::string(kAuthorizationKey), StrCat("Bearer ", *normalized));
  }
  if (timeout) context.set_deadline(std::chrono::system_clock::now() + *timeout);
}

std::string BearerToken(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(grpc::string_ref(kAuthorizationKey.data(), kAuthorizationKey.size()));
  if (it == metadata.end()) return "";
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kPrefix = "Bearer ";
  if (value.size() <= kPrefix.size() || value.substr(0, kPrefix.size()) != kPrefix) return "";
  return std::string(value.substr(kPrefix.size()));
}

Status WaitForConnected(grpc::Channel& channel, std::string_view address,
                        std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::system_clock::now() + timeout;
  if (channel.WaitForConnected(deadline)) return absl::OkStatus();
  return absl::UnavailableError(StrCat("cannot connect to the iosfarm server at ", address,
                                       " (is it running? check --server / IOSFARM_SERVER)"));
}

}  // namespace iosfarm::rpc
