#include "tuned_model/tuned_model_file.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::tuned_model {
namespace {

using ::testing::HasSubstr;

std::string ScheduleFor(int64_t batch) {
  return StrCat(R"({"format": "iosfarm.schedule", "version": 1, "model": {"batch": )", batch,
                "}}");
}

v1::TunedModel SampleModel() {
  v1::TunedModel model;
  model.set_model_name("squeezenet");
  model.set_onnx(std::string("\x08\x07onnx bytes\0with a zero", 24));
  model.set_device_key("local-cpu");
  model.set_backend("cpu");
  model.set_tuned_on("CPU (oneDNN 3.0, avx2, 2 threads, nChw8c activations)");
  model.set_iosfarm_version("0.1.0");
  model.set_created_unix_s(1'796'000'000);
  for (int64_t batch : {1, 8, 32}) {
    v1::TunedBatch* entry = model.add_batches();
    entry->set_batch(batch);
    entry->set_schedule_json(ScheduleFor(batch));
    entry->set_predicted_ms(1.5 * static_cast<double>(batch));
    v1::MeasuredSchedule* measured = entry->add_measured();
    measured->set_schedule("ios");
    measured->set_median_ms(1.25 * static_cast<double>(batch));
    measured->set_runs(20);
  }
  return model;
}

// A file of format `version` around `payload` with a correct checksum: what
// a buggy or hostile writer could make.
std::string Frame(uint32_t version, const std::string& payload) {
  std::string bytes(kTunedModelMagic);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((version >> (8 * i)) & 0xff));
  const uint64_t size = payload.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
  bytes += payload;
  return bytes + scheduler::ios::Sha256Hex(bytes);
}

std::string Encoded(const v1::TunedModel& model) {
  StatusOr<std::string> bytes = EncodeTunedModel(model);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

void ExpectRefused(const std::string& bytes, absl::StatusCode code, const std::string& reason) {
  StatusOr<v1::TunedModel> decoded = DecodeTunedModel(bytes, "model.iosfarm");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), code) << decoded.status();
  EXPECT_THAT(decoded.status().message(), HasSubstr("tuned model file 'model.iosfarm': "));
  EXPECT_THAT(decoded.status().message(), HasSubstr(reason));
}

TEST(TunedModelFile, RoundTripsEveryField) {
  const v1::TunedModel model = SampleModel();
  const std::string bytes = Encoded(model);
  EXPECT_TRUE(HasTunedModelMagic(bytes));
  StatusOr<v1::TunedModel> decoded = DecodeTunedModel(bytes, "model.iosfarm");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->SerializeAsString(), model.SerializeAsString());
  EXPECT_EQ(ListBatches(*decoded), "1, 8, 32");
  ASSERT_NE(FindBatch(*decoded, 8), nullptr);
  EXPECT_EQ(FindBatch(*decoded, 8)->schedule_json(), ScheduleFor(8));
  EXPECT_EQ(FindBatch(*decoded, 4), nullptr);
}

TEST(TunedModelFile, ZooModelsNeedNoOnnxBytes) {
  v1::TunedModel model = SampleModel();
  model.set_zoo_name("squeezenet");
  StatusOr<v1::TunedModel> decoded = DecodeTunedModel(Encoded(model), "zoo.iosfarm");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->zoo_name(), "squeezenet");
  EXPECT_FALSE(decoded->has_onnx());
}

TEST(TunedModelFile, RefusesAnotherKindOfFile) {
  ExpectRefused("\x08\x07\x12\x07pytorch", absl::StatusCode::kInvalidArgument,
                "not a tuned model file");
  ExpectRefused("", absl::StatusCode::kInvalidArgument, "not a tuned model file");
  // Text-mode transfers turn \r\n into \n: the magic is no longer there.
  std::string mangled = Encoded(SampleModel());
  mangled.erase(9, 1);
  ExpectRefused(mangled, absl::StatusCode::kInvalidArgument, "not a tuned model file");
}

TEST(TunedModelFile, RefusesEveryTruncation) {
  const std::string bytes = Encoded(SampleModel());
  for (size_t length : {kTunedModelMagic.size(), kTunedModelMagic.size() + 3, size_t{24},
                        size_t{40}, bytes.size() / 2, bytes.size() - 64, bytes.size() - 1}) {
    SCOPED_TRACE(length);
    ExpectRefused(bytes.substr(0, length), absl::StatusCode::kInvalidArgument, "truncated");
  }
}

TEST(TunedModelFile, RefusesBytesAfterItsEnd) {
  ExpectRefused(Encoded(SampleModel()) + "\n", absl::StatusCode::kInvalidArgument,
                "bytes after its end");
}

TEST(TunedModelFile, RefusesAnyChangedByte) {
  const std::string bytes = Encoded(SampleModel());
  // In the model bytes, a schedule, the device key and the checksum itself.
  for (size_t at : {size_t{30}, bytes.find("local-cpu"), bytes.find("\"batch\": 8"),
                    bytes.size() - 10}) {
    SCOPED_TRACE(at);
    ASSERT_NE(at, std::string::npos);
    std::string edited = bytes;
    edited[at] = edited[at] == 'x' ? 'y' : 'x';
    ExpectRefused(edited, absl::StatusCode::kInvalidArgument, "checksum does not match");
  }
}

TEST(TunedModelFile, RefusesOtherFormatVersions) {
  const std::string payload = SampleModel().SerializeAsString();
  ExpectRefused(Frame(2, payload), absl::StatusCode::kFailedPrecondition,
                "format version 2; this iosfarm reads version 1 (a newer iosfarm wrote it: "
                "upgrade)");
  ExpectRefused(Frame(0, payload), absl::StatusCode::kInvalidArgument, "format version 0");
}

TEST(TunedModelFile, RefusesAPayloadThatBreaksTheContract) {
  ExpectRefused(Frame(1, "\xff\xff\xff"), absl::StatusCode::kInvalidArgument,
                "payload is not a TunedModel");
  struct Case {
    std::function<void(v1::TunedModel&)> edit;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {[](v1::TunedModel& m) { m.clear_model_name(); }, "names no model"},
      {[](v1::TunedModel& m) { m.clear_onnx(); }, "neither ONNX bytes nor a zoo model name"},
      {[](v1::TunedModel& m) { m.clear_device_key(); }, "names no device key"},
      {[](v1::TunedModel& m) { m.clear_batches(); }, "holds no schedule"},
      {[](v1::TunedModel& m) { m.mutable_batches(0)->set_batch(0); }, "batch 0 is not positive"},
      {[](v1::TunedModel& m) { m.mutable_batches(1)->set_batch(1); },
       "not ascending and distinct (1 after 1)"},
      {[](v1::TunedModel& m) { m.mutable_batches(2)->set_schedule_json(ScheduleFor(16)); },
       "the schedule filed under batch 32 is for batch 16"},
      {[](v1::TunedModel& m) { m.mutable_batches(0)->set_schedule_json("{\"format\": 3}"); },
       "the schedule of batch 1 is not an iosfarm.schedule document"},
      {[](v1::TunedModel& m) { m.mutable_batches(0)->set_schedule_json("{not json"); },
       "the schedule of batch 1 is not an iosfarm.schedule document"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    v1::TunedModel model = SampleModel();
    c.edit(model);
    ExpectRefused(Frame(1, model.SerializeAsString()), absl::StatusCode::kInvalidArgument,
                  c.reason);
    StatusOr<std::string> encoded = EncodeTunedModel(model);
    ASSERT_FALSE(encoded.ok());
    EXPECT_THAT(encoded.status().message(), HasSubstr(c.reason));
  }
}

class TunedModelFileOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           StrCat("tuned_model_file_test_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TunedModelFileOnDisk, WritesAtomicallyAndReadsBack) {
  const std::string path = (dir_ / "squeezenet.iosfarm").string();
  ASSERT_TRUE(WriteTunedModelFile(path, SampleModel()).ok());
  EXPECT_TRUE(IsTunedModelFile(path));
  StatusOr<v1::TunedModel> read = ReadTunedModelFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->SerializeAsString(), SampleModel().SerializeAsString());
  // Only the file itself is left: no temporary beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(TunedModelFileOnDisk, NamesWhatCannotBeReadOrWritten) {
  const std::string missing = (dir_ / "missing.iosfarm").string();
  EXPECT_FALSE(IsTunedModelFile(missing));
  EXPECT_EQ(ReadTunedModelFile(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ReadTunedModelFile(missing).status().message(), HasSubstr(missing));
  const std::string unwritable = (dir_ / "no" / "such" / "dir.iosfarm").string();
  Status written = WriteTunedModelFile(unwritable, SampleModel());
  EXPECT_EQ(written.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(written.message(), HasSubstr("cannot write tuned model file '" + unwritable));
  const std::string onnx = (dir_ / "model.onnx").string();
  std::ofstream(onnx) << "\x08\x07 an onnx file";
  EXPECT_FALSE(IsTunedModelFile(onnx));
  EXPECT_THAT(ReadTunedModelFile(onnx).status().message(), HasSubstr("not a tuned model file"));
}

TEST(TunedModelCompatibility, VersionsShareMajorAndBeforeOneMinor) {
  EXPECT_TRUE(CompatibleVersions("0.1.0", "0.1.0"));
  EXPECT_TRUE(CompatibleVersions("0.1.0", "0.1.7"));
  EXPECT_FALSE(CompatibleVersions("0.1.0", "0.2.0"));
  EXPECT_TRUE(CompatibleVersions("1.2.0", "1.4.1"));
  EXPECT_FALSE(CompatibleVersions("1.2.0", "2.0.0"));
  EXPECT_FALSE(CompatibleVersions("", "0.1.0"));
  EXPECT_FALSE(CompatibleVersions("dev", "0.1.0"));
}

TEST(TunedModelCompatibility, DeviceKeysMatchWithOrWithoutGraphStages) {
  EXPECT_TRUE(CompatibleDeviceKeys("local-cpu", "local-cpu"));
  EXPECT_TRUE(CompatibleDeviceKeys("nvidia-h100-80gb-hbm3", "nvidia-h100-80gb-hbm3-graph-stages"));
  EXPECT_TRUE(CompatibleDeviceKeys("nvidia-h100-80gb-hbm3-graph-stages", "nvidia-h100-80gb-hbm3"));
  EXPECT_FALSE(CompatibleDeviceKeys("nvidia-h100-80gb-hbm3", "nvidia-h200"));
  EXPECT_FALSE(CompatibleDeviceKeys("nvidia-h200", "local-cpu"));
}

}  // namespace
}  // namespace iosfarm::tuned_model
