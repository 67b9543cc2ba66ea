// Helpers of the FarmServer tests over real gRPC (farm_server_test.cc,
// farm_server_workers_test.cc): requests, results, timelines, the fixture.
// Header-only, used only by *_test.cc files.
#ifndef IOSFARM_SERVER_FARM_SERVER_TEST_UTIL_H_
#define IOSFARM_SERVER_FARM_SERVER_TEST_UTIL_H_

#include <chrono>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_test_util.h"
#include "nlohmann/json.hpp"
#include "scheduler/ios/baselines.h"
#include "server/farm_database.h"
#include "server/server_test_util.h"

namespace iosfarm::server {

// The names both test files use.
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::BuiltAll;
using testing::Context;
using testing::FakeWorker;
using testing::LoopbackOptions;
using testing::SimWorker;
using testing::TestFarm;
using testing::WaitUntil;
using testing::ZooRequest;

// A small valid ONNX model: two 1x1 convolutions of one input, added, then
// ReLU (4 ops, well under 4 KiB).
inline std::string TwoBranchOnnx() {
  graph::onnx_import::testing::OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("Wa", {4, 3, 1, 1}).Weight("Wb", {4, 3, 1, 1});
  b.Node("Conv", {"x", "Wa"}, {"a"});
  b.Node("Conv", {"x", "Wb"}, {"b"});
  b.Node("Add", {"a", "b"}, {"s"});
  b.Node("Relu", {"s"}, {"y"});
  return b.Serialize();
}

inline v1::SubmitJobRequest OnnxRequest(const std::string& bytes, const std::string& device_key) {
  v1::SubmitJobRequest request;
  request.set_onnx(bytes);
  request.set_model_name("two_branch.onnx");
  request.set_device_key(device_key);
  return request;
}

inline v1::JobResult GetResult(testing::TestFarm& farm, int64_t id, grpc::Status* status_out = nullptr) {
  v1::JobRequest request;
  request.set_job_id(id);
  v1::JobResult result;
  grpc::Status status = farm.tuning->GetResult(testing::Context("").get(), request, &result);
  if (status_out != nullptr) {
    *status_out = status;
  } else {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  return result;
}

inline std::vector<v1::PhaseEntry> Timeline(testing::TestFarm& farm, int64_t job_id) {
  v1::TimelineRequest request;
  request.set_job_id(job_id);
  v1::TimelineResponse response;
  grpc::Status status = farm.tuning->GetTimeline(testing::Context("").get(), request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return {response.phases().begin(), response.phases().end()};
}

// Every event WatchJob streams for `id`, until the server ends the call.
inline std::vector<v1::JobEvent> Watch(testing::TestFarm& farm, int64_t id, grpc::Status& status) {
  grpc::ClientContext context;
  rpc::PrepareContext(context, "", std::chrono::milliseconds(std::chrono::seconds(120)));
  v1::JobRequest request;
  request.set_job_id(id);
  auto reader = farm.tuning->WatchJob(&context, request);
  std::vector<v1::JobEvent> events;
  v1::JobEvent event;
  while (reader->Read(&event)) events.push_back(event);
  status = reader->Finish();
  return events;
}

// The phases of one job: in order, one at a time, following
// enumerate (build profile update enumerate)* measure.
inline void ExpectWellFormedTimeline(const std::vector<v1::PhaseEntry>& phases,
                              const std::string& worker) {
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases.front().phase(), "enumerate");
  EXPECT_EQ(phases.back().phase(), "measure");
  const std::map<std::string, std::vector<std::string>> may_follow = {
      {"enumerate", {"build", "measure"}},
      {"build", {"profile"}},
      {"profile", {"update"}},
      {"update", {"enumerate"}},
  };
  for (size_t i = 0; i < phases.size(); ++i) {
    const v1::PhaseEntry& p = phases[i];
    SCOPED_TRACE("phase " + std::to_string(i) + ": " + p.ShortDebugString());
    EXPECT_EQ(p.outcome(), "ok");
    EXPECT_LE(p.queued_s(), p.start_s());
    EXPECT_LE(p.start_s(), p.end_s());
    const bool on_worker = p.phase() == "build" || p.phase() == "profile" || p.phase() == "measure";
    EXPECT_EQ(p.worker(), on_worker ? worker : "");
    if (i == 0) continue;
    const v1::PhaseEntry& previous = phases[i - 1];
    EXPECT_GE(p.start_s(), previous.end_s());  // one phase at a time, in order
    auto allowed = may_follow.find(previous.phase());
    ASSERT_NE(allowed, may_follow.end()) << "nothing may follow " << previous.phase();
    EXPECT_THAT(allowed->second, ::testing::Contains(p.phase()));
  }
}

class FarmServerTest : public TempDirTest {
 protected:
  std::string DbPath() const { return PathOf("farm.db"); }
  ServerOptions Options() const { return testing::LoopbackOptions(DbPath()); }
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_SERVER_TEST_UTIL_H_
