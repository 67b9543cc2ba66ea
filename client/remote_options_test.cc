#include "client/remote_options.h"

#include <map>

#include <gtest/gtest.h>

namespace iosfarm::client {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RemoteOptionsTest, DefaultsWithoutFlagsOrEnvironment) {
  RemoteOptions o = ResolveRemoteOptions({}, FakeEnv({}));
  EXPECT_EQ(o.server, "127.0.0.1:7070");
  EXPECT_EQ(o.token, "");
  EXPECT_EQ(o.tls_ca_file, "");
  EXPECT_EQ(o.connect_timeout.count(), 5000);
}

TEST(RemoteOptionsTest, EnvironmentFillsWhatFlagsLeaveOpen) {
  RemoteOptions o = ResolveRemoteOptions(
      {}, FakeEnv({{"IOSFARM_SERVER", "farm:9000"}, {"IOSFARM_TOKEN", "t0k"},
                   {"IOSFARM_TLS_CA", "/etc/ca.pem"}}));
  EXPECT_EQ(o.server, "farm:9000");
  EXPECT_EQ(o.token, "t0k");
  EXPECT_EQ(o.tls_ca_file, "/etc/ca.pem");
}

TEST(RemoteOptionsTest, FlagsWinOverEnvironment) {
  RemoteFlags flags;
  flags.server = "flag:1";
  flags.token = "";  // explicitly empty: no token even if the env has one
  RemoteOptions o = ResolveRemoteOptions(
      flags, FakeEnv({{"IOSFARM_SERVER", "env:2"}, {"IOSFARM_TOKEN", "envtok"}}));
  EXPECT_EQ(o.server, "flag:1");
  EXPECT_EQ(o.token, "");
}

TEST(RemoteOptionsTest, EmptyEnvironmentVariableCountsAsUnset) {
  RemoteOptions o = ResolveRemoteOptions({}, FakeEnv({{"IOSFARM_SERVER", ""}}));
  EXPECT_EQ(o.server, "127.0.0.1:7070");
}

TEST(RemoteOptionsTest, FlagsParseFromCommandLine) {
  CLI::App app;
  RemoteFlags flags;
  AddRemoteFlags(app, flags);
  const char* argv[] = {"x", "--server", "h:1", "--token", "abc", "--tls-ca", "ca.pem"};
  app.parse(7, argv);
  ASSERT_TRUE(flags.server && flags.token && flags.tls_ca);
  EXPECT_EQ(*flags.server, "h:1");
  EXPECT_EQ(*flags.token, "abc");
  EXPECT_EQ(*flags.tls_ca, "ca.pem");
}

}  // namespace
}  // namespace iosfarm::client
