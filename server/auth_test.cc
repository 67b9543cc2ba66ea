// TokenSet parsing and matching, and bearer-token authentication of both
// services over real gRPC on loopback.
#include "server/auth.h"

#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/farm_database.h"
#include "server/server_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::Context;
using testing::FakeWorker;
using testing::LoopbackOptions;
using testing::TestFarm;
using testing::WaitUntil;
using testing::ZooRequest;

constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kWorkerToken[] = "worker-token-0123456789";
constexpr char kWrongToken[] = "wrong-token-0123456789";

class TokenSetTest : public TempDirTest {};

TEST_F(TokenSetTest, ReadsTokensNamesCommentsAndBlankLines) {
  const std::string path = PathOf("tokens");
  WriteFileBytes(path,
                 "# client tokens\n"
                 "\n"
                 "aaaaaaaaaaaaaaaa alice\n"
                 "  bbbbbbbbbbbbbbbb\t  bob smith  \r\n"
                 "cccccccccccccccc\n");
  auto tokens = TokenSet::FromFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 3u);
  EXPECT_FALSE(tokens->empty());
  EXPECT_EQ(*tokens->Authenticate("aaaaaaaaaaaaaaaa", "client"), "alice");
  EXPECT_EQ(*tokens->Authenticate("bbbbbbbbbbbbbbbb", "client"), "bob smith");
  EXPECT_EQ(*tokens->Authenticate("cccccccccccccccc", "client"), "token-3");
}

TEST_F(TokenSetTest, MalformedLinesNameFileAndLine) {
  const std::string short_path = PathOf("short");
  WriteFileBytes(short_path, "# ok\naaaaaaaaaaaaaaaa\nshort name\n");
  auto short_token = TokenSet::FromFile(short_path);
  ASSERT_FALSE(short_token.ok());
  EXPECT_EQ(short_token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_token.status().message(), HasSubstr(short_path + ":3"));
  EXPECT_THAT(short_token.status().message(), HasSubstr("shorter than 16"));
  EXPECT_THAT(short_token.status().message(), Not(HasSubstr("short name")));

  const std::string duplicate_path = PathOf("duplicate");
  WriteFileBytes(duplicate_path, "aaaaaaaaaaaaaaaa one\n\naaaaaaaaaaaaaaaa two\n");
  auto duplicate = TokenSet::FromFile(duplicate_path);
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(duplicate.status().message(), HasSubstr(duplicate_path + ":3"));
  EXPECT_THAT(duplicate.status().message(), HasSubstr("duplicate token"));

  auto missing = TokenSet::FromFile(PathOf("missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(PathOf("missing")));
}

TEST(TokenListTest, ParsesCommaSeparatedItemsWithOptionalNames) {
  auto tokens =
      TokenSet::FromList(" aaaaaaaaaaaaaaaa:alice, ,bbbbbbbbbbbbbbbb ,", "IOSFARM_CLIENT_TOKENS");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 2u);
  EXPECT_EQ(*tokens->Authenticate("aaaaaaaaaaaaaaaa", "client"), "alice");
  EXPECT_EQ(*tokens->Authenticate("bbbbbbbbbbbbbbbb", "client"), "token-2");

  auto empty = TokenSet::FromList("", "IOSFARM_CLIENT_TOKENS");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());

  auto short_item = TokenSet::FromList("aaaaaaaaaaaaaaaa,tiny:bob", "IOSFARM_WORKER_TOKENS");
  ASSERT_FALSE(short_item.ok());
  EXPECT_EQ(short_item.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_item.status().message(), HasSubstr("IOSFARM_WORKER_TOKENS item 2"));

  auto duplicate = TokenSet::FromList("aaaaaaaaaaaaaaaa:x,aaaaaaaaaaaaaaaa:y", "ENV");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("ENV item 2: duplicate token"));
}

TEST(TokenListTest, MergeRefusesDuplicates) {
  auto a = TokenSet::FromList("aaaaaaaaaaaaaaaa", "A");
  auto b = TokenSet::FromList("bbbbbbbbbbbbbbbb", "B");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->Merge(*b).ok());
  EXPECT_EQ(a->size(), 2u);
  Status again = a->Merge(*b);
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(again.message(), HasSubstr("duplicate token"));
}

TEST(TokenListTest, AuthenticateNeverEchoesTheToken) {
  TokenSet none;
  EXPECT_EQ(*none.Authenticate("", "client"), "anonymous");
  EXPECT_EQ(*none.Authenticate("anything", "client"), "anonymous");

  auto tokens = TokenSet::FromList("aaaaaaaaaaaaaaaa:alice", "T");
  ASSERT_TRUE(tokens.ok());
  auto missing = tokens->Authenticate("", "worker");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing worker token"));
  for (const char* wrong : {"aaaaaaaaaaaaaaab", "aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaa", "x"}) {
    auto refused = tokens->Authenticate(wrong, "client");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << wrong;
    EXPECT_THAT(refused.status().message(), HasSubstr("invalid client token"));
    EXPECT_THAT(refused.status().message(), Not(HasSubstr(wrong)));
  }
}

// ---------------------------------------------------------------- the server

class ServerAuthTest : public TempDirTest {
 protected:
  ServerOptions Options() {
    ServerOptions options = LoopbackOptions(PathOf("farm.db"));
    options.client_tokens_file = PathOf("client_tokens");
    options.worker_tokens_file = PathOf("worker_tokens");
    WriteFileBytes(options.client_tokens_file,
                   std::string("# clients\n") + kClientToken + " alice\n");
    WriteFileBytes(options.worker_tokens_file, std::string(kWorkerToken) + " gpu-pool\n");
    return options;
  }
};

// Calls every TuningService method with `token`; returns (method, status).
std::vector<std::pair<std::string, grpc::Status>> CallEveryTuningMethod(TestFarm& farm,
                                                                        const std::string& token,
                                                                        int64_t job_id,
                                                                        bool watch = true) {
  std::vector<std::pair<std::string, grpc::Status>> out;
  v1::JobRequest job;
  job.set_job_id(job_id);
  {
    v1::Job response;
    out.emplace_back("SubmitJob", farm.tuning->SubmitJob(Context(token).get(),
                                                         ZooRequest("squeezenet", "sim-test"),
                                                         &response));
  }
  {
    v1::Job response;
    out.emplace_back("GetJob", farm.tuning->GetJob(Context(token).get(), job, &response));
  }
  if (watch) {
    auto context = Context(token);
    auto reader = farm.tuning->WatchJob(context.get(), job);
    v1::JobEvent event;
    int events = 0;
    while (reader->Read(&event)) ++events;
    EXPECT_EQ(events, 0) << "WatchJob streamed to an unauthenticated client";
    out.emplace_back("WatchJob", reader->Finish());
  }
  {
    v1::ListJobsResponse response;
    out.emplace_back("ListJobs", farm.tuning->ListJobs(Context(token).get(), {}, &response));
  }
  {
    v1::Job response;
    out.emplace_back("CancelJob", farm.tuning->CancelJob(Context(token).get(), job, &response));
  }
  {
    v1::JobResult response;
    out.emplace_back("GetResult", farm.tuning->GetResult(Context(token).get(), job, &response));
  }
  {
    v1::ListWorkersResponse response;
    out.emplace_back("ListWorkers", farm.tuning->ListWorkers(Context(token).get(), {}, &response));
  }
  {
    v1::RetuneRequest request;
    request.set_device_key("sim-test");
    v1::RetuneResponse response;
    out.emplace_back("Retune", farm.tuning->Retune(Context(token).get(), request, &response));
  }
  {
    v1::TimelineResponse response;
    out.emplace_back("GetTimeline", farm.tuning->GetTimeline(Context(token).get(), {}, &response));
  }
  return out;
}

TEST_F(ServerAuthTest, EveryCallNeedsTheRightTokenOfItsAudience) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());

  // Workers: no token, a wrong one and a client token are refused.
  for (const std::string& token : {std::string(), std::string(kWrongToken),
                                  std::string(kClientToken)}) {
    SCOPED_TRACE("worker token '" + token + "'");
    FakeWorker worker(*farm.workers, token, "w-" + std::to_string(token.size()), "sim-test");
    grpc::Status status = worker.Connect();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("worker token"));
    EXPECT_THAT(worker.received(), IsEmpty());
  }
  EXPECT_THAT(farm.ListWorkers(kClientToken), IsEmpty());

  // The right worker token registers the device key.
  FakeWorker worker(*farm.workers, kWorkerToken, "w-ok", "sim-test");
  grpc::Status connected = worker.Connect();
  ASSERT_TRUE(connected.ok()) << connected.error_message();
  ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("w-ok", kClientToken); }));

  // A job of the right client, owned by the token's name.
  v1::Job job;
  grpc::Status submitted = farm.Submit(ZooRequest("squeezenet", "sim-test"), job, kClientToken);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  EXPECT_EQ(job.owner(), "alice");

  // Clients: no token, a wrong one and a worker token are refused by every
  // method, and change nothing.
  for (const std::string& token : {std::string(), std::string(kWrongToken),
                                  std::string(kWorkerToken)}) {
    for (const auto& [method, status] : CallEveryTuningMethod(farm, token, job.id())) {
      SCOPED_TRACE(method + " with token '" + token + "'");
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
      EXPECT_THAT(status.error_message(),
                  HasSubstr(token.empty() ? "missing client token" : "invalid client token"));
      if (!token.empty()) {
        EXPECT_THAT(status.error_message(), Not(HasSubstr(token)));
      }
    }
  }
  const std::vector<v1::Job> jobs = farm.ListJobs(kClientToken);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id(), job.id());
  EXPECT_NE(jobs[0].state(), v1::CANCELLED);
  EXPECT_EQ(farm.ListWorkers(kClientToken).size(), 1u);

  // The right client token works on every method (Retune and GetResult get
  // their ordinary answers; watching would wait for the job to end).
  for (const auto& [method, status] :
       CallEveryTuningMethod(farm, kClientToken, job.id(), /*watch=*/false)) {
    SCOPED_TRACE(method);
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  }
}

TEST_F(ServerAuthTest, RefusesEveryInterfaceWithoutTokensUnlessInsecure) {
  ServerOptions options = LoopbackOptions(PathOf("farm.db"));
  options.listen = "0.0.0.0:0";
  auto refused = FarmServer::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("refusing to listen on 0.0.0.0:0"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--insecure"));

  // Client tokens alone are not enough.
  ServerOptions half = Options();
  half.listen = "0.0.0.0:0";
  half.worker_tokens_file.clear();
  auto half_refused = FarmServer::Start(half);
  EXPECT_EQ(half_refused.status().code(), absl::StatusCode::kInvalidArgument);

  ServerOptions insecure = options;
  insecure.insecure = true;
  {
    TestFarm farm(insecure);
    ASSERT_TRUE(farm.ok());
    EXPECT_THAT(farm.address(), HasSubstr("0.0.0.0:"));
    EXPECT_THAT(farm.ListJobs(), IsEmpty());  // anonymous access
  }

  ServerOptions with_tokens = Options();
  with_tokens.listen = "0.0.0.0:0";
  {
    TestFarm farm(with_tokens);
    ASSERT_TRUE(farm.ok());
    EXPECT_THAT(farm.ListJobs(kClientToken), IsEmpty());
  }
}

TEST_F(ServerAuthTest, BadTokenFilesStopTheStart) {
  ServerOptions options = Options();
  WriteFileBytes(options.worker_tokens_file, std::string(kWorkerToken) + "\nshort\n");
  auto bad = FarmServer::Start(options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(options.worker_tokens_file + ":2"));

  options = Options();
  options.client_tokens_file = PathOf("no_such_file");
  auto missing = FarmServer::Start(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such_file"));
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST_F(ServerAuthTest, TokensFromTheEnvironment) {
  ScopedEnv clients("IOSFARM_CLIENT_TOKENS", "env-client-token-0001:carol, env-client-token-0002");
  ScopedEnv workers("IOSFARM_WORKER_TOKENS", "env-worker-token-0001");
  ServerOptions options = LoopbackOptions(PathOf("farm.db"));
  options.listen = "0.0.0.0:0";
  options.tokens_from_env = true;
  {
    TestFarm farm(options);
    ASSERT_TRUE(farm.ok());
    EXPECT_THAT(farm.ListJobs("env-client-token-0002"), IsEmpty());
    v1::ListJobsResponse response;
    EXPECT_EQ(farm.tuning->ListJobs(Context("").get(), {}, &response).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    FakeWorker worker(*farm.workers, "env-worker-token-0001", "env-w", "sim-test");
    grpc::Status connected = worker.Connect();
    EXPECT_TRUE(connected.ok()) << connected.error_message();
    v1::Job job;
    grpc::Status submitted =
        farm.Submit(ZooRequest("squeezenet", "sim-test"), job, "env-client-token-0001");
    ASSERT_TRUE(submitted.ok()) << submitted.error_message();
    EXPECT_EQ(job.owner(), "carol");
  }

  // Files and the environment together; a token in both is a duplicate.
  ServerOptions both = Options();
  both.db_path = PathOf("both.db");
  both.tokens_from_env = true;
  {
    TestFarm farm(both);
    ASSERT_TRUE(farm.ok());
    EXPECT_THAT(farm.ListJobs(kClientToken), IsEmpty());
    EXPECT_THAT(farm.ListJobs("env-client-token-0001"), IsEmpty());
  }
  WriteFileBytes(both.worker_tokens_file, "env-worker-token-0001\n");
  auto duplicate = FarmServer::Start(both);
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("duplicate token"));

  // A malformed item names the variable and the item.
  ScopedEnv bad("IOSFARM_CLIENT_TOKENS", "env-client-token-0001,short");
  auto refused = FarmServer::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("IOSFARM_CLIENT_TOKENS item 2"));
}

}  // namespace
}  // namespace iosfarm::server

namespace iosfarm::server {
namespace {

// Who may cancel what (docs/farm.md): a client cancels only its own jobs; an
// admin client (--admin-clients) any; everyone may read every job.
TEST_F(ServerAuthTest, OnlyTheOwnerOrAnAdminCancelsAJob) {
  constexpr char kBobToken[] = "bob-token-0123456789";
  constexpr char kAdminToken[] = "admin-token-0123456789";
  ServerOptions options = Options();
  WriteFileBytes(options.client_tokens_file, std::string(kClientToken) + " alice\n" + kBobToken +
                                                 " bob\n" + kAdminToken + " ops\n");
  options.admin_clients = {"ops"};
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  testing::FakeWorker silent(*farm.workers, kWorkerToken, "silent", "sim-test");  // never answers
  ASSERT_TRUE(silent.Connect().ok());

  v1::Job first, second;
  ASSERT_TRUE(farm.tuning->SubmitJob(Context(kClientToken).get(),
                                     ZooRequest("squeezenet", "sim-test"), &first).ok());
  ASSERT_TRUE(farm.tuning->SubmitJob(Context(kClientToken).get(),
                                     ZooRequest("squeezenet", "sim-test"), &second).ok());
  v1::JobRequest request;
  request.set_job_id(first.id());
  v1::Job response;
  // Bob reads alice's job but cannot cancel it.
  EXPECT_TRUE(farm.tuning->GetJob(Context(kBobToken).get(), request, &response).ok());
  grpc::Status denied = farm.tuning->CancelJob(Context(kBobToken).get(), request, &response);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED) << denied.error_message();
  EXPECT_THAT(denied.error_message(), HasSubstr("belongs to client 'alice'"));
  ASSERT_TRUE(farm.tuning->GetJob(Context(kClientToken).get(), request, &response).ok());
  EXPECT_NE(response.state(), v1::CANCELLED);
  // Alice cancels her own job; the admin cancels hers too.
  grpc::Status own = farm.tuning->CancelJob(Context(kClientToken).get(), request, &response);
  EXPECT_TRUE(own.ok()) << own.error_message();
  EXPECT_EQ(response.state(), v1::CANCELLED);
  request.set_job_id(second.id());
  grpc::Status admin = farm.tuning->CancelJob(Context(kAdminToken).get(), request, &response);
  EXPECT_TRUE(admin.ok()) << admin.error_message();
  EXPECT_EQ(response.state(), v1::CANCELLED);
}

TEST_F(ServerAuthTest, OnlyAnAdminForgetsMeasurements) {
  constexpr char kAdminToken[] = "admin-token-0123456789";
  ServerOptions options = Options();
  WriteFileBytes(options.client_tokens_file,
                 std::string(kClientToken) + " alice\n" + kAdminToken + " ops\n");
  options.admin_clients = {"ops"};
  {
    // Measurements of a good and a bad worker, stored before the server starts.
    auto store = OpenFarmDatabase(options.db_path);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<std::pair<uint64_t, StoredLatency>> rows;
    for (uint64_t signature = 1; signature <= 3; ++signature) {
      StoredLatency latency;
      latency.median_ms = latency.p10_ms = latency.p90_ms = 1;
      latency.repeats = 5;
      latency.worker = signature == 1 ? "good" : "bad";
      latency.backend = "sim";
      rows.emplace_back(signature, latency);
    }
    ASSERT_TRUE(store->latencies->PutLatencies("sim-test", rows).ok());
  }
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  v1::ForgetLatenciesRequest request;
  request.set_device_key("sim-test");
  request.set_worker("bad");
  v1::ForgetLatenciesResponse response;
  grpc::Status denied = farm.tuning->ForgetLatencies(Context(kClientToken).get(), request,
                                                     &response);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED) << denied.error_message();
  EXPECT_THAT(denied.error_message(), HasSubstr("admins only"));
  grpc::Status forgot = farm.tuning->ForgetLatencies(Context(kAdminToken).get(), request,
                                                     &response);
  ASSERT_TRUE(forgot.ok()) << forgot.error_message();
  EXPECT_EQ(response.deleted(), 2);
  EXPECT_EQ(response.remaining(), 1);
  request.set_device_key("no-such-key");
  grpc::Status unknown = farm.tuning->ForgetLatencies(Context(kAdminToken).get(), request,
                                                      &response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(unknown.error_message(), HasSubstr("'no-such-key'"));
  request.set_device_key("");
  grpc::Status empty = farm.tuning->ForgetLatencies(Context(kAdminToken).get(), request,
                                                    &response);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace iosfarm::server
