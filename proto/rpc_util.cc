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

void PrepareContext(grpc::ClientContext& context, std::string_view token,
                    std::optional<std::chrono::milliseconds> timeout) {
  if (!token.empty()) {
    context.AddMetadata(std::string(kAuthorizationKey), StrCat("Bearer ", token));
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
