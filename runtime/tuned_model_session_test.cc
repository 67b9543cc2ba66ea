// A tuned model file (.iosfarm) as a user gets and runs it: written by the
// `iosfarm` binary (`tune --backend cpu --batch 1,2 --save`), opened through
// <iosfarm/runtime.h> only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "iosfarm/runtime.h"
#include "runtime/cli_path_testing.h"
#include "runtime/session_testing.h"

namespace iosfarm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

SessionOptions Cpu() {
  SessionOptions options;
  options.backend = "cpu";
  options.cpu_threads = 2;
  return options;
}

// The first input's values at `shape`.
std::vector<float> Ramp(const std::vector<int64_t>& shape) { return iosfarm::Ramp(Count(shape)); }

// The first input at `batch` (the model's other dimensions).
std::vector<int64_t> AtBatch(const Session& session, int64_t batch) {
  std::vector<int64_t> shape = session.inputs().at(0).shape;
  shape[0] = batch;
  return shape;
}

Tensor RunAt(Session& session, const std::vector<float>& data, const std::vector<int64_t>& shape) {
  return session.Run({{session.inputs().at(0).name, TensorView(data, shape)}})
      .at(session.outputs().at(0).name);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class TunedModelSessionTest : public ::testing::Test {
 protected:
  // squeezenet tuned on this machine's CPU at batches 1 and 2. CTest runs
  // each test as a process of its own: they share one latency database in
  // the build tree, so that only the first measures.
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::path(::testing::TempDir()) / ("tuned_" + std::to_string(getpid())))
            .string());
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    const char* build = std::getenv("IOSFARM_BINARY_DIR");
    const std::string db =
        build != nullptr ? std::string(build) + "/tuned_model_test.db" : *dir_ + "/latency.db";
    const std::string command = IosfarmCliForTests() +
                                " tune squeezenet --backend cpu --threads 2 --batch 1,2 --db '" +
                                db + "' --save '" + File() + "' > '" + *dir_ + "/tune.log' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << ReadBytes(*dir_ + "/tune.log");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string File() { return *dir_ + "/squeezenet.iosfarm"; }
  // What `iosfarm inspect --format json` says the file holds for `batch`.
  static nlohmann::json Held(int64_t batch) {
    const std::string report = *dir_ + "/inspect.json";
    const std::string command =
        IosfarmCliForTests() + " inspect '" + File() + "' --format json > '" + report + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    const nlohmann::json json = nlohmann::json::parse(ReadBytes(report), nullptr, false);
    for (const nlohmann::json& entry : json.value("batches", nlohmann::json::array())) {
      if (entry.value("batch", 0) == batch) return entry;
    }
    ADD_FAILURE() << "no batch " << batch << " in " << ReadBytes(report);
    return nlohmann::json::object();
  }
  static std::string* dir_;
};
std::string* TunedModelSessionTest::dir_ = nullptr;

TEST_F(TunedModelSessionTest, EachBatchRunsItsTunedSchedule) {
  EXPECT_THAT(ReadBytes(*dir_ + "/tune.log"),
              HasSubstr("saved " + File() + ": squeezenet, batches 1, 2, device key local-cpu"));
  Session session(File(), Cpu());
  EXPECT_EQ(session.model_name(), "squeezenet");
  EXPECT_THAT(session.batches(), ElementsAre(1, 2));
  // The schedule `tune` chose for the batch (the fastest measured: on a
  // small CPU the sequential one may win).
  EXPECT_EQ(session.schedule_kind(), Held(1)["schedule"]);
  EXPECT_EQ(session.num_stages(), Held(1)["stages"]);
  EXPECT_THAT(session.fallback(), IsEmpty());
  EXPECT_THAT(session.inputs().at(0).shape, ElementsAre(1, 3, 224, 224));

  SessionOptions sequential = Cpu();
  sequential.batch = 2;
  Session reference("squeezenet", sequential);
  const std::vector<float> image = Ramp(AtBatch(session, 2));
  const Tensor out = RunAt(session, image, AtBatch(session, 2));
  EXPECT_THAT(out.shape, ElementsAre(2, 1000));
  ExpectClose(out.data, RunAt(reference, image, AtBatch(session, 2)).data, 1e-4);
  // Batch 1 through the same session, then batch 2 as its default.
  EXPECT_THAT(RunAt(session, Ramp(AtBatch(session, 1)), AtBatch(session, 1)).shape,
              ElementsAre(1, 1000));
  SessionOptions two = Cpu();
  two.batch = 2;
  Session at_two(File(), two);
  EXPECT_THAT(at_two.inputs().at(0).shape, ElementsAre(2, 3, 224, 224));
  EXPECT_EQ(at_two.schedule_kind(), Held(2)["schedule"]);
  EXPECT_EQ(at_two.num_stages(), Held(2)["stages"]);
  EXPECT_GT(at_two.TimeSchedule(2, 0).median_ms, 0);
}

TEST_F(TunedModelSessionTest, ABatchTheFileLacksIsRefusedSayingHowToTuneIt) {
  Session session(File(), Cpu());
  const std::string message = ErrorOf(ErrorCode::kFailedPrecondition, [&] {
    RunAt(session, Ramp(AtBatch(session, 3)), AtBatch(session, 3));
  });
  EXPECT_THAT(message, HasSubstr("tuned model file '" + File() +
                                 "' holds schedules for batches 1, 2, not 3"));
  EXPECT_THAT(message, HasSubstr("iosfarm tune " + File() + " --batch 1,2,3 --save FILE"));
  EXPECT_THAT(message, HasSubstr("sequential_fallback"));
  SessionOptions three = Cpu();
  three.batch = 3;
  EXPECT_THAT(ErrorOf(ErrorCode::kFailedPrecondition, [&] { Session(File(), three); }),
              HasSubstr("not 3"));
  // A misshapen input is named as in any session, not taken for a batch.
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        RunAt(session, Ramp({3, 224, 224}), {3, 224, 224});
                      }),
              HasSubstr("input 'input' has shape [3,224,224], the model wants [1,3,224,224]"));
}

TEST_F(TunedModelSessionTest, SequentialFallbackRunsABatchTheFileLacks) {
  SessionOptions options = Cpu();
  options.sequential_fallback = true;
  Session session(File(), options);
  SessionOptions sequential = Cpu();
  sequential.batch = 3;
  Session reference("squeezenet", sequential);
  const std::vector<float> image = Ramp(AtBatch(session, 3));
  const Tensor out = RunAt(session, image, AtBatch(session, 3));
  EXPECT_THAT(out.shape, ElementsAre(3, 1000));
  ExpectClose(out.data, RunAt(reference, image, AtBatch(session, 3)).data, 1e-4);
  EXPECT_THAT(session.batches(), ElementsAre(1, 2));
  EXPECT_EQ(session.schedule_kind(), Held(1)["schedule"]);  // batch 1 still runs its own
}

TEST_F(TunedModelSessionTest, AnotherDeviceKeyIsRefusedOrRunsSequentially) {
  SessionOptions other = Cpu();
  other.device_key = "nvidia-h200";
  const std::string message =
      ErrorOf(ErrorCode::kFailedPrecondition, [&] { Session(File(), other); });
  EXPECT_THAT(message,
              HasSubstr("tuned model file '" + File() + "' was tuned for device key local-cpu"));
  EXPECT_THAT(message, HasSubstr("this session's is nvidia-h200"));
  EXPECT_THAT(message, HasSubstr("--batch 1,2 --save FILE"));

  other.sequential_fallback = true;
  Session session(File(), other);
  EXPECT_EQ(session.schedule_kind(), "sequential");
  EXPECT_EQ(session.num_stages(), Session("squeezenet", Cpu()).num_stages());
  EXPECT_THAT(session.fallback(), HasSubstr("tuned for device key local-cpu"));
  EXPECT_THAT(RunAt(session, Ramp(AtBatch(session, 2)), AtBatch(session, 2)).shape,
              ElementsAre(2, 1000));
}

TEST_F(TunedModelSessionTest, AChangedOrTruncatedFileIsRefusedByName) {
  const std::string bytes = ReadBytes(File());
  const std::string changed = *dir_ + "/changed.iosfarm";
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x01;
  WriteBytes(changed, flipped);
  const std::string message =
      ErrorOf(ErrorCode::kInvalidArgument, [&] { Session(changed, Cpu()); });
  EXPECT_THAT(message, HasSubstr("tuned model file '" + changed + "'"));
  EXPECT_THAT(message, HasSubstr("checksum"));

  const std::string truncated = *dir_ + "/truncated.iosfarm";
  WriteBytes(truncated, bytes.substr(0, bytes.size() / 3));
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { Session(truncated, Cpu()); }),
              HasSubstr("truncated"));
}

TEST_F(TunedModelSessionTest, ScheduleOptionsDoNotApplyToIt) {
  SessionOptions greedy = Cpu();
  greedy.schedule = "greedy";
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { Session(File(), greedy); }),
              HasSubstr("is a tuned model file, which holds its schedules"));
}

}  // namespace
}  // namespace iosfarm
