#include "proto/rpc_util.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace iosfarm::rpc {
namespace {

TEST(RpcUtilTest, StatusMappingKeepsCodeAndMessage) {
  Status in = absl::NotFoundError("job 7 not found");
  grpc::Status wire = ToGrpcStatus(in);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(wire.error_message(), "job 7 not found");
  Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(back.message(), "job 7 not found");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "big")).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(RpcUtilTest, MakeChannelRejectsMissingAddressAndCaFile) {
  EXPECT_EQ(MakeChannel({}).status().code(), absl::StatusCode::kInvalidArgument);
  ChannelOptions options;
  options.address = "127.0.0.1:1";
  options.tls_ca_file = "/nonexistent/ca.pem";
  auto channel = MakeChannel(options);
  ASSERT_FALSE(channel.ok());
  EXPECT_NE(channel.status().message().find("/nonexistent/ca.pem"), std::string::npos);
}

TEST(RpcUtilTest, WaitForConnectedNamesTheAddress) {
  ChannelOptions options;
  options.address = "127.0.0.1:1";  // nothing listens on port 1
  auto channel = MakeChannel(options);
  ASSERT_TRUE(channel.ok());
  Status status = WaitForConnected(**channel, options.address, std::chrono::milliseconds(200));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("127.0.0.1:1"), std::string::npos);
}

TEST(RpcUtilTest, NormalizeTokenTrimsWhitespaceAndRejectsHeaderBreakers) {
  EXPECT_EQ(*NormalizeToken("secret\n", "--token"), "secret");
  EXPECT_EQ(*NormalizeToken("  secret\r\n", "--token"), "secret");
  EXPECT_EQ(*NormalizeToken("", "--token"), "");
  for (const std::string bad : {std::string("sec\nret"), std::string("sec ret"),
                                std::string("sec\x01ret"), std::string("sec\xc3\xa9t")}) {
    auto normalized = NormalizeToken(bad, "IOSFARM_TOKEN");
    ASSERT_FALSE(normalized.ok()) << bad;
    EXPECT_EQ(normalized.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(normalized.status().message().find("IOSFARM_TOKEN: the token has a"),
              std::string::npos)
        << normalized.status();
    EXPECT_NE(normalized.status().message().find("position 4"), std::string::npos)
        << normalized.status();
  }
  // PrepareContext never hands gRPC a header it would abort on.
  grpc::ClientContext context;
  PrepareContext(context, "bad\ntoken");
  PrepareContext(context, "good-token\n");
}

TEST(RpcUtilTest, ReadFileToString) {
  auto path = std::filesystem::temp_directory_path() / "iosfarm_rpc_util_test.txt";
  { std::ofstream(path) << "token-a client\n"; }
  auto text = ReadFileToString(path.string());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "token-a client\n");
  std::filesystem::remove(path);
  EXPECT_EQ(ReadFileToString(path.string()).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace iosfarm::rpc
