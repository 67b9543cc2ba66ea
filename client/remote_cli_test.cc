// The remote commands against an in-test fake TuningService on 127.0.0.1:0.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_testing.h"
#include "client/job_watch.h"
#include "iosfarm/v1/farm.grpc.pb.h"
#include "onnx/onnx_pb.h"

namespace iosfarm::client {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int64_t kFailingJob = 8;
constexpr int64_t kMissingJob = 404;

v1::Job JobWith(int64_t id, v1::JobState state, int blocks_done) {
  v1::Job job;
  job.set_id(id);
  job.set_model_name("resnet50");
  job.set_device_key("h100");
  job.set_batch(1);
  job.set_state(state);
  job.mutable_progress()->set_phase("profile");
  job.mutable_progress()->set_blocks_total(3);
  job.mutable_progress()->set_blocks_done(blocks_done);
  job.mutable_progress()->set_stages_profiled(10 * blocks_done);
  job.mutable_progress()->set_eta_s(-1);
  if (state == v1::FAILED) job.set_error("out of GPU memory");
  return job;
}

class FakeTuningService final : public v1::TuningService::Service {
 public:
  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::Job* job) override {
    std::lock_guard<std::mutex> lock(mu_);
    submits_.push_back(*request);
    authorization_ = Authorization(*context);
    if (!required_token_.empty() && authorization_ != "Bearer " + required_token_) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
    }
    if (request->device_key() == "no-such-gpu") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "unknown device key 'no-such-gpu' (known: h100)");
    }
    *job = JobWith(7, v1::QUEUED, 0);
    job->set_model_name(request->model_name());
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext*, const v1::JobRequest* request,
                      v1::Job* job) override {
    if (request->job_id() == kMissingJob) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "job 404 not found");
    }
    *job = JobWith(request->job_id(), v1::SUCCEEDED, 3);
    return grpc::Status::OK;
  }
  grpc::Status WatchJob(grpc::ServerContext*, const v1::JobRequest* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override {
    const int64_t id = request->job_id();
    if (id == kMissingJob) return grpc::Status(grpc::StatusCode::NOT_FOUND, "job 404 not found");
    std::vector<v1::Job> snapshots = {JobWith(id, v1::QUEUED, 0), JobWith(id, v1::RUNNING, 1),
                                      JobWith(id, v1::RUNNING, 1), JobWith(id, v1::RUNNING, 2)};
    snapshots.push_back(id == kFailingJob ? JobWith(id, v1::FAILED, 2)
                                          : JobWith(id, v1::SUCCEEDED, 3));
    for (const v1::Job& job : snapshots) {
      v1::JobEvent event;
      *event.mutable_job() = job;
      event.set_message("changed");
      writer->Write(event);
    }
    return grpc::Status::OK;
  }
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    list_requests_.push_back(*request);
    if (request->retune_batch() == "rb-1") {
      *response->add_jobs() = JobWith(21, v1::SUCCEEDED, 3);
      *response->add_jobs() = JobWith(22, v1::SUCCEEDED, 3);
      return grpc::Status::OK;
    }
    *response->add_jobs() = JobWith(7, v1::RUNNING, 1);
    *response->add_jobs() = JobWith(6, v1::SUCCEEDED, 3);
    return grpc::Status::OK;
  }
  grpc::Status CancelJob(grpc::ServerContext*, const v1::JobRequest* request,
                         v1::Job* job) override {
    *job = JobWith(request->job_id(), v1::CANCELLED, 1);
    return grpc::Status::OK;
  }
  grpc::Status GetResult(grpc::ServerContext*, const v1::JobRequest* request,
                         v1::JobResult* result) override {
    if (request->job_id() != 7) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "job " + std::to_string(request->job_id()) + " has not succeeded");
    }
    result->set_job_id(7);
    result->set_schedule_json(R"({"format_version":1,"stages":[]})");
    for (auto [name, ms] : {std::pair{"ios", 4.0}, {"sequential", 6.0}, {"greedy", 5.0}}) {
      v1::ScheduleLatency* l = result->add_measured();
      l->set_name(name);
      l->set_median_ms(ms);
      l->set_repeats(20);
    }
    result->set_predicted_ms(3.9);
    result->set_stages_profiled(30);
    result->set_cache_hits(12);
    return grpc::Status::OK;
  }
  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                           v1::ListWorkersResponse* response) override {
    v1::WorkerInfo* w = response->add_workers();
    w->set_id("gpu-box-0");
    w->set_device_key("h100");
    w->set_backend("cuda");
    w->set_state("idle");
    return grpc::Status::OK;
  }
  grpc::Status Retune(grpc::ServerContext*, const v1::RetuneRequest* request,
                      v1::RetuneResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    retunes_.push_back(*request);
    response->set_retune_batch("rb-1");
    *response->add_jobs() = JobWith(21, v1::QUEUED, 0);
    *response->add_jobs() = JobWith(22, v1::QUEUED, 0);
    return grpc::Status::OK;
  }
  grpc::Status GetTimeline(grpc::ServerContext*, const v1::TimelineRequest* request,
                           v1::TimelineResponse* response) override {
    v1::PhaseEntry* p = response->add_phases();
    p->set_job_id(request->job_id() == 0 ? 7 : request->job_id());
    p->set_phase("enumerate");
    p->set_resource("server-cpu/0");
    p->set_queued_s(100);
    p->set_start_s(100.5);
    p->set_end_s(101);
    p->set_outcome("ok");
    return grpc::Status::OK;
  }

  static std::string Authorization(const grpc::ServerContext& context) {
    auto it = context.client_metadata().find("authorization");
    if (it == context.client_metadata().end()) return "";
    return std::string(it->second.data(), it->second.size());
  }

  std::mutex mu_;
  std::vector<v1::SubmitJobRequest> submits_;
  std::vector<v1::ListJobsRequest> list_requests_;
  std::vector<v1::RetuneRequest> retunes_;
  std::string authorization_;
  std::string required_token_;
};

using Result = CliResult;

class RemoteCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("IOSFARM_SERVER");
    unsetenv("IOSFARM_TOKEN");
    unsetenv("IOSFARM_TLS_CA");
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(); }

  // Runs `iosfarm args... --server <fake>`.
  Result Run(std::vector<std::string> args, bool add_server = true) {
    if (add_server) {
      args.push_back("--server");
      args.push_back(address_);
    }
    return RunIosfarm(std::move(args));
  }

  std::string TempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            (std::to_string(getpid()) + "_" + name))
        .string();
  }

  FakeTuningService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(RemoteCliTest, SubmitZooModelSendsZooNameOptionsAndToken) {
  Result r = Run({"submit", "resnet50", "--device", "h100", "--batch", "4", "--r", "2",
                  "--block-size", "30", "--priority", "5", "--token", "s3cret"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "7\n");
  EXPECT_TRUE(r.err.empty());
  ASSERT_EQ(service_.submits_.size(), 1u);
  const v1::SubmitJobRequest& request = service_.submits_[0];
  EXPECT_EQ(request.model_case(), v1::SubmitJobRequest::kZooName);
  EXPECT_EQ(request.zoo_name(), "resnet50");
  EXPECT_EQ(request.device_key(), "h100");
  EXPECT_EQ(request.batch(), 4);
  EXPECT_EQ(request.options().r(), 2);
  EXPECT_EQ(request.options().s(), 0);  // server default
  EXPECT_EQ(request.options().block_size(), 30);
  EXPECT_EQ(request.priority(), 5);
  EXPECT_EQ(service_.authorization_, "Bearer s3cret");
}

TEST_F(RemoteCliTest, SubmitOnnxFileSendsItsBytesAndFileName) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("tiny");
  onnx::NodeProto* relu = graph->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("y");
  for (auto [list, name] : {std::pair{graph->add_input(), "x"}, {graph->add_output(), "y"}}) {
    list->set_name(name);
    auto* tensor = list->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 4}) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  }
  const std::string bytes = model.SerializeAsString();
  const std::string path = TempPath("tiny.onnx");
  std::ofstream(path, std::ios::binary) << bytes;

  Result r = Run({"submit", path, "--device", "h100", "--format", "json"});
  std::remove(path.c_str());
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(service_.submits_.size(), 1u);
  const v1::SubmitJobRequest& request = service_.submits_[0];
  EXPECT_EQ(request.model_case(), v1::SubmitJobRequest::kOnnx);
  EXPECT_EQ(request.onnx(), bytes);
  EXPECT_EQ(request.model_name(), std::filesystem::path(path).filename().string());
  EXPECT_EQ(request.batch(), 0);  // the model's own
  EXPECT_EQ(service_.authorization_, "");  // no token given: none sent
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["job"]["id"], 7);
  EXPECT_EQ(j["job"]["state"], "queued");
}

TEST_F(RemoteCliTest, ServerAndTokenComeFromTheEnvironment) {
  setenv("IOSFARM_SERVER", address_.c_str(), 1);
  setenv("IOSFARM_TOKEN", "from-env", 1);
  Result r = Run({"submit", "squeezenet", "--device", "h100"}, /*add_server=*/false);
  unsetenv("IOSFARM_SERVER");
  unsetenv("IOSFARM_TOKEN");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(service_.authorization_, "Bearer from-env");
}

TEST_F(RemoteCliTest, UnknownModelFailsBeforeContactingTheServer) {
  Result r = Run({"submit", "no_such_model", "--device", "h100"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("iosfarm: error: model 'no_such_model'"));
  EXPECT_TRUE(service_.submits_.empty());
}

TEST_F(RemoteCliTest, ServerErrorsExitOneWithTheServersMessage) {
  Result r = Run({"status", "404"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "iosfarm: error: job 404 not found\n");
  EXPECT_TRUE(r.out.empty());

  Result bad = Run({"submit", "resnet50", "--device", "no-such-gpu"});
  EXPECT_EQ(bad.code, kExitFailure);
  EXPECT_EQ(bad.err, "iosfarm: error: unknown device key 'no-such-gpu' (known: h100)\n");

  Result pending = Run({"result", "9"});
  EXPECT_EQ(pending.code, kExitFailure);
  EXPECT_EQ(pending.err, "iosfarm: error: job 9 has not succeeded\n");
}

TEST_F(RemoteCliTest, RejectedTokenHintsAtTokenFlag) {
  service_.required_token_ = "right";
  Result r = Run({"submit", "resnet50", "--device", "h100", "--token", "wrong"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("iosfarm: error: invalid bearer token"));
  EXPECT_THAT(r.err, HasSubstr("IOSFARM_TOKEN"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST_F(RemoteCliTest, UnreachableServerNamesTheAddress) {
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  const auto start = std::chrono::steady_clock::now();
  Result r = Run({"status", "1", "--server", "127.0.0.1:1"}, /*add_server=*/false);
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("iosfarm: error: cannot connect to the iosfarm server at "
                                "127.0.0.1:1"));
  EXPECT_THAT(r.err, HasSubstr("--server"));
  EXPECT_THAT(r.err, HasSubstr("IOSFARM_SERVER"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(RemoteCliTest, WatchPrintsPlainLinesOnStderrWhenNotATerminal) {
  Result r = Run({"watch", "7"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");  // progress is for people: stderr
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_EQ(r.err.find('\033'), std::string::npos);
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // Five events; the repeated "running 1/3" snapshot prints no second line.
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_THAT(lines[0], StartsWith("job 7 queued [....................] 0/3 blocks"));
  EXPECT_EQ(lines[1], "job 7 running [######..............] 1/3 blocks, 0ms, ETA ?, profile, "
                      "10 stages profiled, 0 cache hits");
  EXPECT_THAT(lines[3], StartsWith("job 7 succeeded [####################] 3/3 blocks"));
}

TEST_F(RemoteCliTest, WatchJsonPrintsOneDocumentPerEvent) {
  Result r = Run({"watch", "7", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::istringstream in(r.out);
  int events = 0;
  nlohmann::json last;
  for (std::string line; std::getline(in, line); ++events) last = nlohmann::json::parse(line);
  EXPECT_EQ(events, 5);
  EXPECT_EQ(last["job"]["state"], "succeeded");
  EXPECT_EQ(last["message"], "changed");
}

TEST_F(RemoteCliTest, WatchOfAFailedJobExitsOne) {
  Result r = Run({"watch", "8"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, EndsWith("\niosfarm: error: job 8 failed: out of GPU memory\n"));
  EXPECT_THAT(r.err, HasSubstr("job 8 failed [######"));  // the last progress line
}

TEST_F(RemoteCliTest, SubmitWaitFollowsTheJobAndPrintsTheResult) {
  const std::string schedule = TempPath("schedule.json");
  Result r = Run({"submit", "resnet50", "--device", "h100", "--wait", "-o", schedule});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("job 7 submitted: resnet50 on h100, batch 1\n"));
  EXPECT_THAT(r.err, HasSubstr("job 7 succeeded"));
  EXPECT_THAT(r.out, Not(HasSubstr("job 7 succeeded")));
  EXPECT_THAT(r.out, HasSubstr("1.500x vs sequential, 1.250x vs greedy"));
  EXPECT_THAT(r.out, HasSubstr("30 stages profiled, 12 cache hits"));
  std::ifstream in(schedule);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"format_version\":1,\"stages\":[]}\n");
  std::remove(schedule.c_str());

  Result json = Run({"submit", "resnet50", "--device", "h100", "--wait", "--format", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["job"]["state"], "succeeded");
  EXPECT_EQ(j["result"]["measured"][0]["median_ms"], 4.0);
}

TEST_F(RemoteCliTest, StatusListCancelWorkersTimeline) {
  Result status = Run({"status", "7", "--format", "json"});
  ASSERT_EQ(status.code, kExitOk) << status.err;
  EXPECT_EQ(nlohmann::json::parse(status.out)["job"]["state"], "succeeded");
  EXPECT_THAT(Run({"status", "7"}).out, HasSubstr("state      succeeded"));

  Result list = Run({"list", "--state", "running", "--device", "h100", "--format", "json"});
  ASSERT_EQ(list.code, kExitOk) << list.err;
  ASSERT_EQ(service_.list_requests_.size(), 1u);
  EXPECT_EQ(service_.list_requests_[0].state(), "running");
  EXPECT_EQ(service_.list_requests_[0].device_key(), "h100");
  EXPECT_EQ(nlohmann::json::parse(list.out)["jobs"].size(), 2u);
  Result list_text = Run({"list"});
  EXPECT_EQ(std::count(list_text.out.begin(), list_text.out.end(), '\n'), 3);

  Result cancel = Run({"cancel", "7"});
  ASSERT_EQ(cancel.code, kExitOk) << cancel.err;
  EXPECT_EQ(cancel.out, "job 7: cancelled\n");

  Result workers = Run({"workers"});
  ASSERT_EQ(workers.code, kExitOk) << workers.err;
  EXPECT_THAT(workers.out, HasSubstr("gpu-box-0"));
  Result workers_json = Run({"workers", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(workers_json.out)["workers"][0]["backend"], "cuda");

  Result timeline = Run({"timeline"});
  ASSERT_EQ(timeline.code, kExitOk) << timeline.err;
  EXPECT_THAT(timeline.out, HasSubstr("enumerate"));
  EXPECT_THAT(timeline.out, HasSubstr("server-cpu/0"));
  Result timeline_json = Run({"timeline", "5", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(timeline_json.out)["phases"][0]["job_id"], 5);
}

TEST_F(RemoteCliTest, ResultPrintsAndWritesTheSchedule) {
  const std::string schedule = TempPath("result.json");
  Result r = Run({"result", "7", "-o", schedule, "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["predicted_ms"], 3.9);
  EXPECT_EQ(j["result"]["schedule"]["format_version"], 1);
  EXPECT_TRUE(std::filesystem::exists(schedule));
  std::remove(schedule.c_str());
}

TEST_F(RemoteCliTest, RetuneWaitFollowsEveryJobOfTheBatch) {
  Result r = Run({"retune", "--device", "h200", "--from-device", "h100", "--models",
                  "resnet50,squeezenet", "--batch", "8", "--wait"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(service_.retunes_.size(), 1u);
  const v1::RetuneRequest& request = service_.retunes_[0];
  EXPECT_EQ(request.device_key(), "h200");
  EXPECT_EQ(request.from_device_key(), "h100");
  EXPECT_THAT(request.model_names(), ElementsAre("resnet50", "squeezenet"));
  EXPECT_EQ(request.batch(), 8);
  EXPECT_THAT(r.out, StartsWith("retune batch rb-1: 2 jobs for h200\n"));
  EXPECT_THAT(r.err, HasSubstr("job 21 succeeded"));
  EXPECT_THAT(r.err, HasSubstr("job 22 succeeded"));
  EXPECT_THAT(r.out, HasSubstr("all 2 jobs succeeded"));

  Result json = Run({"retune", "--device", "h200", "--format", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["retune_batch"], "rb-1");
  EXPECT_EQ(j["jobs"].size(), 2u);
}

TEST_F(RemoteCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Run({"submit", "resnet50"}).code, kExitUsage);  // no --device
  EXPECT_EQ(Run({"watch"}).code, kExitUsage);
  EXPECT_EQ(Run({"status", "abc"}).code, kExitUsage);
  EXPECT_EQ(Run({"list", "--state", "sleeping"}).code, kExitUsage);
  EXPECT_EQ(Run({"submit", "resnet50", "--device", "h100", "-o", "x.json"}).code,
            kExitUsage);  // -o needs --wait
  EXPECT_EQ(Run({"retune"}).code, kExitUsage);
  EXPECT_TRUE(service_.submits_.empty());
}

}  // namespace
}  // namespace iosfarm::client
