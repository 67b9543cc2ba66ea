// The public runtime API as a user calls it: only <iosfarm/runtime.h>.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include "graph/onnx/torchvision_export.h"
#include "iosfarm/runtime.h"
#include "runtime/cli_path_testing.h"
#include "runtime/session_testing.h"

namespace iosfarm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

SessionOptions Cpu(std::string schedule = "") {
  SessionOptions options;
  options.backend = "cpu";
  options.cpu_threads = 2;
  options.schedule = std::move(schedule);
  return options;
}

std::map<std::string, TensorView> Feed(const Session& session, const std::vector<float>& data) {
  const TensorInfo& in = session.inputs().at(0);
  return {{in.name, TensorView(data, in.shape)}};
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

TEST(SessionTest, DescribesTheModelAndRunsIt) {
  Session session("squeezenet", Cpu());
  EXPECT_EQ(session.model_name(), "squeezenet");
  EXPECT_EQ(session.schedule_kind(), "sequential");
  EXPECT_GT(session.num_stages(), 20);
  EXPECT_THAT(session.device(), HasSubstr("cpu: CPU (oneDNN"));
  ASSERT_THAT(session.inputs(), SizeIs(1));
  EXPECT_EQ(session.inputs()[0].name, "input");
  EXPECT_THAT(session.inputs()[0].shape, ElementsAre(1, 3, 224, 224));
  ASSERT_THAT(session.outputs(), SizeIs(1));
  EXPECT_THAT(session.outputs()[0].shape, ElementsAre(1, 1000));

  const std::vector<float> image = Ramp(Count(session.inputs()[0].shape));
  auto first = session.Run(Feed(session, image));
  ASSERT_THAT(first, SizeIs(1));
  const Tensor& logits = first.at(session.outputs()[0].name);
  EXPECT_THAT(logits.shape, ElementsAre(1, 1000));
  ASSERT_THAT(logits.data, SizeIs(1000));
  EXPECT_TRUE(std::all_of(logits.data.begin(), logits.data.end(),
                          [](float x) { return std::isfinite(x); }));
  EXPECT_GT(*std::max_element(logits.data.begin(), logits.data.end()),
            *std::min_element(logits.data.begin(), logits.data.end()));

  // Deterministic, and the output depends on the input.
  EXPECT_EQ(session.Run(Feed(session, image)).at(session.outputs()[0].name).data, logits.data);
  std::vector<float> other = image;
  for (float& x : other) x = -x;
  EXPECT_NE(session.Run(Feed(session, other)).at(session.outputs()[0].name).data, logits.data);
}

TEST(SessionTest, EveryScheduleComputesTheSameOutputs) {
  Session sequential("inception_v3", Cpu("sequential"));
  Session greedy("inception_v3", Cpu("greedy"));
  EXPECT_EQ(greedy.schedule_kind(), "greedy");
  EXPECT_LT(greedy.num_stages(), sequential.num_stages());
  const std::vector<float> image = Ramp(Count(sequential.inputs()[0].shape));
  const std::string out = sequential.outputs()[0].name;
  ExpectClose(greedy.Run(Feed(greedy, image)).at(out).data,
              sequential.Run(Feed(sequential, image)).at(out).data, 1e-4);
}

TEST(SessionTest, RunIntoCallerBuffers) {
  Session session("squeezenet", Cpu());
  const std::vector<float> image = Ramp(Count(session.inputs()[0].shape));
  const std::string out = session.outputs()[0].name;
  std::vector<float> buffer(1000, -1);
  session.Run(Feed(session, image), {{out, std::span<float>(buffer)}});
  EXPECT_EQ(buffer, session.Run(Feed(session, image)).at(out).data);

  std::vector<float> small(10);
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run(Feed(session, image), {{out, std::span<float>(small)}});
                      }),
              HasSubstr("needs 1000 values, its buffer has 10"));
  EXPECT_THAT(
      ErrorOf(
          ErrorCode::kInvalidArgument,
          [&] { session.Run(Feed(session, image), std::map<std::string, std::span<float>>{}); }),
      HasSubstr("output '" + out + "' [1,1000] is missing"));
}

TEST(SessionTest, OutputBuffersInHostMemory) {
  Session session("squeezenet", Cpu());
  const std::vector<float> image = Ramp(Count(session.inputs()[0].shape));
  const std::string out = session.outputs()[0].name;
  std::vector<float> buffer(1000, -1);
  session.Run(Feed(session, image),
              std::map<std::string, OutputBuffer>{{out, OutputBuffer(buffer, Memory::kHost)}});
  EXPECT_EQ(buffer, session.Run(Feed(session, image)).at(out).data);
}

// Device memory needs a cuda session; a cpu session names the buffer instead
// of reading a device pointer (runtime/device_buffers_test.cc: on a GPU).
TEST(SessionTest, CpuSessionRefusesDeviceMemory) {
  Session session("squeezenet", Cpu());
  const TensorInfo& in = session.inputs()[0];
  const std::string out = session.outputs()[0].name;
  const std::vector<float> image = Ramp(Count(in.shape));
  std::vector<float> buffer(1000, -1);
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run({{in.name, TensorView(image, in.shape, Memory::kCuda)}});
                      }),
              HasSubstr("input '" + in.name +
                        "' is device memory, but the cpu backend reads and writes host memory "
                        "only"));
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run(Feed(session, image),
                                    std::map<std::string, OutputBuffer>{
                                        {out, OutputBuffer(buffer, Memory::kCuda)}});
                      }),
              HasSubstr("output '" + out + "' is device memory"));
  EXPECT_EQ(buffer, std::vector<float>(1000, -1)) << "nothing was written";
}

TEST(SessionTest, BadInputsAreNamed) {
  Session session("squeezenet", Cpu());
  const std::vector<float> image = Ramp(3 * 224 * 224);
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { session.Run({}); }),
              HasSubstr("input 'input' [1,3,224,224] is missing; the model's inputs: 'input' "
                        "[1,3,224,224]"));
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run({{"input", TensorView(image, {1, 3, 224, 224})},
                                     {"mask", TensorView(image, {1})}});
                      }),
              HasSubstr("the model has no input 'mask'"));
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run({{"input", TensorView(image, {1, 3, 112, 448})}});
                      }),
              HasSubstr("input 'input' has shape [1,3,112,448], the model wants [1,3,224,224]"));
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [&] {
                        session.Run({{"input", TensorView(std::span<const float>(image).first(9),
                                                          {1, 3, 224, 224})}});
                      }),
              HasSubstr("has 9 values, its shape holds 150528"));
  // Nothing broke: the session still runs.
  EXPECT_NO_THROW(session.Run({{"input", TensorView(image, {1, 3, 224, 224})}}));
}

TEST(SessionTest, BadOptionsAndModelsAreNamed) {
  EXPECT_THAT(ErrorOf(ErrorCode::kNotFound, [] { Session("no_such_model", Cpu()); }),
              HasSubstr("model 'no_such_model' is neither a zoo model"));
  SessionOptions sim = Cpu();
  sim.backend = "sim";
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { Session("squeezenet", sim); }),
              HasSubstr("backend 'sim': the runtime runs on cpu, cuda or cuda:N"));
  SessionOptions bad_device = Cpu();
  bad_device.backend = "cuda:x";
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { Session("squeezenet", bad_device); }),
              HasSubstr("cuda:0"));
  SessionOptions batch = Cpu();
  batch.batch = -2;
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [&] { Session("squeezenet", batch); }),
              HasSubstr("batch -2 is negative"));
  EXPECT_THAT(ErrorOf(ErrorCode::kNotFound,
                      [] { Session("squeezenet", Cpu(TempPath("absent.schedule.json"))); }),
              HasSubstr("absent.schedule.json' does not exist (set tune_if_missing"));
}

TEST(SessionTest, BatchOverrideChangesTheShapes) {
  SessionOptions options = Cpu();
  options.batch = 2;
  Session session("squeezenet", options);
  EXPECT_THAT(session.inputs()[0].shape, ElementsAre(2, 3, 224, 224));
  EXPECT_THAT(session.outputs()[0].shape, ElementsAre(2, 1000));
}

// Options that tune into a fresh schedule file `name`, with a fresh latency
// database beside it (both removed first).
SessionOptions TuneInto(const std::string& name) {
  const std::string path = TempPath(name);
  std::filesystem::remove(path);
  SessionOptions options = Cpu(path);
  options.tune_if_missing = true;
  options.latency_db = path + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(options.latency_db + suffix);
  }
  return options;
}

TEST(SessionTest, TunesOnFirstUseThenReusesTheSchedule) {
  const SessionOptions options = TuneInto("squeezenet.tuned.schedule.json");
  const std::string& path = options.schedule;
  Session tuned("squeezenet", options);
  EXPECT_EQ(tuned.schedule_kind(), "ios");
  ASSERT_TRUE(std::filesystem::exists(path));
  const auto written = std::filesystem::last_write_time(path);

  Session reused("squeezenet", options);  // no tuning: the file is read
  EXPECT_EQ(reused.schedule_kind(), "ios");
  EXPECT_EQ(reused.num_stages(), tuned.num_stages());
  EXPECT_EQ(std::filesystem::last_write_time(path), written);

  Session sequential("squeezenet", Cpu());
  const std::vector<float> image = Ramp(Count(tuned.inputs()[0].shape));
  const std::string out = tuned.outputs()[0].name;
  ExpectClose(reused.Run(Feed(reused, image)).at(out).data,
              sequential.Run(Feed(sequential, image)).at(out).data, 1e-4);

  // The schedule of another model is refused in words, whatever the option.
  EXPECT_THAT(ErrorOf(ErrorCode::kFailedPrecondition, [&] { Session("resnet50", options); }),
              HasSubstr("schedule is for squeezenet, batch 1; this model is resnet50, batch 1"));
}

std::string ReadText(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Tuning stores what it measures; the next tuning with the same database and
// device key measures nothing and finds the same schedule; another key or
// no database ("none") measures again.
TEST(SessionTest, TuningMeasuresOnlyWhatTheLatencyDatabaseLacks) {
  const SessionOptions options = TuneInto("squeezenet.db.schedule.json");
  Session first("squeezenet", options);
  const TuningReport report = first.tuning();
  EXPECT_TRUE(report.tuned);
  EXPECT_GT(report.stages_measured, 40);
  EXPECT_EQ(report.stages_from_database, 0);
  EXPECT_EQ(report.latency_db, options.latency_db);
  EXPECT_EQ(report.device_key, "local-cpu");
  const std::string schedule = ReadText(options.schedule);

  std::filesystem::remove(options.schedule);
  Session again("squeezenet", options);
  EXPECT_EQ(again.tuning().stages_measured, 0);
  EXPECT_EQ(again.tuning().stages_from_database, report.stages_measured);
  EXPECT_EQ(ReadText(options.schedule), schedule);  // the same latencies, the same schedule

  Session read("squeezenet", options);  // the file exists: no tuning at all
  EXPECT_FALSE(read.tuning().tuned);

  // Measured afresh (real timings: the bounded search's path, and so its
  // count, may differ a little).
  auto afresh = [&](const SessionOptions& changed) {
    std::filesystem::remove(options.schedule);
    Session session("squeezenet", changed);
    EXPECT_GT(session.tuning().stages_measured, 40);
    EXPECT_EQ(session.tuning().stages_from_database, 0);
    return session.tuning();
  };
  SessionOptions other_key = options;
  other_key.device_key = "another-machine";
  EXPECT_EQ(afresh(other_key).device_key, "another-machine");
  SessionOptions none = options;
  none.latency_db = "none";
  EXPECT_EQ(afresh(none).latency_db, "");
}

// `iosfarm tune` and the runtime share the database: a model tuned by the
// command is tuned by a session without a single measurement.
TEST(SessionTest, TuningReusesWhatIosfarmTuneMeasured) {
  const SessionOptions options = TuneInto("squeezenet.cli.schedule.json");
  const std::string command =
      IosfarmCliForTests() + " tune squeezenet --backend cpu --threads 2 --db '" +
      options.latency_db + "' -o '" + TempPath("cli.schedule.json") + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Session session("squeezenet", options);
  EXPECT_TRUE(session.tuning().tuned);
  EXPECT_EQ(session.tuning().stages_measured, 0);
  EXPECT_GT(session.tuning().stages_from_database, 40);
}

TEST(SessionTest, ABadLatencyDatabaseIsNamed) {
  SessionOptions options = TuneInto("squeezenet.baddb.schedule.json");
  {
    std::ofstream junk(options.latency_db);
    junk << "not a database, just text that is long enough to be looked at by SQLite";
  }
  const std::string message =
      ErrorOf(ErrorCode::kInvalidArgument, [&] { Session("squeezenet", options); });
  EXPECT_THAT(message, HasSubstr(options.latency_db));
  EXPECT_FALSE(std::filesystem::exists(options.schedule));
}

TEST(SessionTest, ASchedulesJsonTextWorksLikeItsFile) {
  const SessionOptions tune = TuneInto("squeezenet.text.schedule.json");
  Session from_file("squeezenet", tune);
  std::ifstream file(tune.schedule);
  std::stringstream text;
  text << file.rdbuf();
  Session from_text("squeezenet", Cpu(text.str()));
  EXPECT_EQ(from_text.schedule_kind(), "ios");
  EXPECT_EQ(from_text.num_stages(), from_file.num_stages());
  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument, [] { Session("squeezenet", Cpu("{oops")); }),
              HasSubstr("JSON"));
}

TEST(SessionTest, OnnxBytesRunLikeTheirFile) {
  auto exported = graph::onnx_import::testing::ExportTorchvisionModel("squeezenet1_1", {});
  if (!exported.ok() && exported.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << exported.status().message();
  }
  ASSERT_TRUE(exported.ok()) << exported.status();
  std::ifstream file(*exported, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  Session from_file(*exported, Cpu());
  Session from_bytes = Session::FromOnnxBytes(bytes.str(), "my_squeezenet", Cpu());
  EXPECT_EQ(from_bytes.model_name(), "my_squeezenet");
  EXPECT_EQ(from_bytes.inputs()[0].shape, from_file.inputs()[0].shape);
  const std::vector<float> image = Ramp(Count(from_file.inputs()[0].shape));
  const std::string out = from_file.outputs()[0].name;
  EXPECT_EQ(from_bytes.Run(Feed(from_bytes, image)).at(out).data,
            from_file.Run(Feed(from_file, image)).at(out).data);

  EXPECT_THAT(ErrorOf(ErrorCode::kInvalidArgument,
                      [] { Session::FromOnnxBytes("not a model", "junk", Cpu()); }),
              HasSubstr("ONNX model 'junk': is not a valid ONNX model"));
  SessionOptions batch = Cpu();
  batch.batch = 3;
  EXPECT_THAT(Session::FromOnnxBytes(bytes.str(), "b", batch).inputs()[0].shape,
              ElementsAre(3, 3, 224, 224));
}

TEST(SessionTest, ConcurrentRunsOnOneSessionAreSerialisedAndCorrect) {
  Session session("squeezenet", Cpu());
  const std::vector<float> image = Ramp(Count(session.inputs()[0].shape));
  const std::string out = session.outputs()[0].name;
  const std::vector<float> expected = session.Run(Feed(session, image)).at(out).data;
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        if (session.Run(Feed(session, image)).at(out).data != expected) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ElementsAre(0, 0, 0, 0));
}

TEST(SessionTest, MovesKeepTheSession) {
  Session first("squeezenet", Cpu());
  Session moved = std::move(first);
  const std::vector<float> image = Ramp(Count(moved.inputs()[0].shape));
  EXPECT_THAT(moved.Run(Feed(moved, image)), SizeIs(1));
}

TEST(SessionTest, VersionIsTheProjects) {
  EXPECT_THAT(Version(), testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
}

}  // namespace
}  // namespace iosfarm
