// What FarmServer::Start refuses, before it serves anything: a port in use,
// a database another server holds, a damaged or read-only database, bad TLS
// files. Each names what is wrong.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "server/database_lock.h"
#include "server/farm_server.h"
#include "server/farm_database.h"
#include "server/server_test_util.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using testing::LoopbackOptions;

class ServerStartTest : public TempDirTest {};

bool Contains(const Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

TEST_F(ServerStartTest, SecondServerOnAPortInUseIsRefused) {
  auto first = FarmServer::Start(LoopbackOptions(PathOf("a.db")));
  ASSERT_TRUE(first.ok()) << first.status();
  ServerOptions options = LoopbackOptions(PathOf("b.db"));
  options.listen = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = FarmServer::Start(options);
  ASSERT_FALSE(second.ok()) << "a second server started on port " << (*first)->port();
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(second.status(), "address in use")) << second.status();
}

TEST_F(ServerStartTest, SecondServerOnOneDatabaseIsRefusedUntilTheFirstStops) {
  const std::string db = PathOf("farm.db");
  auto first = FarmServer::Start(LoopbackOptions(db));
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = FarmServer::Start(LoopbackOptions(db));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(second.status(), "in use by another iosfarm server")) << second.status();
  EXPECT_TRUE(Contains(second.status(), std::to_string(::getpid()))) << second.status();
  first->reset();  // stopping releases the lock
  auto third = FarmServer::Start(LoopbackOptions(db));
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(ServerStartTest, LockIsReleasedWhenTheHolderDies) {
  const std::string db = PathOf("farm.db");
  const pid_t child = fork();
  if (child == 0) {
    auto lock = DatabaseLock::Acquire(db);
    _exit(lock.ok() ? 0 : 3);  // dies holding it
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(std::filesystem::exists(db + ".lock"));
  EXPECT_TRUE(DatabaseLock::Acquire(db).ok());  // a stale file does not block
}

TEST_F(ServerStartTest, DamagedDatabaseIsRefusedAtStart) {
  const std::string db = PathOf("farm.db");
  {
    auto store = OpenFarmDatabase(db);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(store->latencies->UpsertDevice("dev" + std::to_string(i), std::string(200, 'x'), "sim", i).ok());
    }
  }
  // Checkpointed on close; damage the pages after the first ones.
  std::string bytes = ReadFileBytes(db);
  ASSERT_GT(bytes.size(), 16384u);
  for (size_t i = 8192; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(0xA5 ^ bytes[i]);
  WriteFileBytes(db, bytes);
  auto server = FarmServer::Start(LoopbackOptions(db));
  ASSERT_FALSE(server.ok()) << "a damaged database started as serving";
  EXPECT_TRUE(Contains(server.status(), db)) << server.status();
}

TEST_F(ServerStartTest, ReadOnlyDatabaseIsRefusedAtStart) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: file modes do not stop writes";
  const std::string db = PathOf("farm.db");
  { ASSERT_TRUE(OpenFarmDatabase(db).ok()); }
  ASSERT_EQ(::chmod(db.c_str(), 0444), 0);
  auto server = FarmServer::Start(LoopbackOptions(db));
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(Contains(server.status(), "cannot be written") ||
              Contains(server.status(), "readonly") || Contains(server.status(), "read-only"))
      << server.status();
}

TEST_F(ServerStartTest, BadTlsFilesAreNamedNotReportedAsAddressInUse) {
  const std::string not_pem = PathOf("junk.pem");
  WriteFileBytes(not_pem, "this is not a certificate\n");
  ServerOptions options = LoopbackOptions(PathOf("farm.db"));
  options.tls_cert_file = not_pem;
  options.tls_key_file = not_pem;
  auto server = FarmServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(server.status(), "--tls-cert '" + not_pem + "' holds no PEM certificate"))
      << server.status();

  // Two real key pairs: the key of one with the certificate of the other.
  const std::string gen =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout ";
  const std::string k1 = PathOf("k1.pem"), c1 = PathOf("c1.pem"), k2 = PathOf("k2.pem"),
                    c2 = PathOf("c2.pem");
  if (std::system((gen + k1 + " -out " + c1 + " >/dev/null 2>&1").c_str()) != 0 ||
      std::system((gen + k2 + " -out " + c2 + " >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "no openssl command to make test certificates";
  }
  options.tls_cert_file = c1;
  options.tls_key_file = not_pem;
  server = FarmServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(Contains(server.status(), "holds no PEM private key")) << server.status();
  options.tls_key_file = k2;
  server = FarmServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(Contains(server.status(), "does not belong to the certificate")) << server.status();
  options.tls_key_file = k1;
  server = FarmServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
}

}  // namespace
}  // namespace iosfarm::server
