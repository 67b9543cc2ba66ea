#include "server/farm_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/sqlite_db.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FarmStoreTest : public TempDirTest {
 protected:
  std::unique_ptr<FarmStore> OpenStore(const std::string& name = "farm.db") {
    auto store = FarmStore::Open(PathOf(name));
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }
};

StoredLatency Latency(double median, const std::string& worker = "w1", int64_t when = 1000) {
  StoredLatency latency;
  latency.median_ms = median;
  latency.p10_ms = median * 0.9;
  latency.p90_ms = median * 1.2;
  latency.cv = 0.03;
  latency.repeats = 20;
  latency.worker = worker;
  latency.backend = "cuda";
  latency.measured_unix_ms = when;
  return latency;
}

ModelRow Model(const std::string& digest, const std::string& name, int64_t batch = 1) {
  ModelRow model;
  model.digest = digest;
  model.name = name;
  model.source = "zoo";
  model.batch = batch;
  model.ops = 42;
  model.created_unix_ms = 5;
  return model;
}

JobRow Job(const std::string& digest, const std::string& device, int64_t batch = 1) {
  JobRow job;
  job.model_digest = digest;
  job.device_key = device;
  job.owner = "alice";
  job.batch = batch;
  job.submitted_unix_ms = 100;
  return job;
}

std::vector<int64_t> Ids(const std::vector<JobRow>& jobs) {
  std::vector<int64_t> ids;
  for (const JobRow& job : jobs) ids.push_back(job.id);
  return ids;
}

// ------------------------------------------------------------------ devices

TEST_F(FarmStoreTest, DevicesRoundTrip) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(*store->HasDevice("h100-sxm"));
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "NVIDIA H100 SXM", "cuda", 1000).ok());
  ASSERT_TRUE(store->UpsertDevice("a100", "NVIDIA A100", "cuda", 1500).ok());
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "NVIDIA H100 80GB HBM3", "", 2000).ok());
  // An older clock does not move last_seen back.
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "", "", 1200).ok());
  EXPECT_TRUE(*store->HasDevice("h100-sxm"));
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].key, "a100");
  const DeviceRow& h100 = (*devices)[1];
  EXPECT_EQ(h100.key, "h100-sxm");
  EXPECT_EQ(h100.description, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.backend, "cuda");
  EXPECT_EQ(h100.first_seen_unix_ms, 1000);
  EXPECT_EQ(h100.last_seen_unix_ms, 2000);
  EXPECT_EQ(h100.latencies, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(store->UpsertDevice("", "x", "cuda", 1)));
}

// ------------------------------------------------------------------ latencies

TEST_F(FarmStoreTest, LatenciesRoundTripWithFullUint64Signatures) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const uint64_t high = std::numeric_limits<uint64_t>::max();
  const uint64_t mid = 0x8000000000000000ull;
  auto added = store->PutLatencies("h100", {{high, Latency(1.5)}, {mid, Latency(0.25)}, {0, Latency(0)}});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 3);
  auto found = store->LookupLatencies("h100", {high, mid, 0, 12345});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 3u);
  const StoredLatency& latency = found->at(high);
  EXPECT_DOUBLE_EQ(latency.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(latency.p10_ms, 1.35);
  EXPECT_DOUBLE_EQ(latency.p90_ms, 1.8);
  EXPECT_DOUBLE_EQ(latency.cv, 0.03);
  EXPECT_EQ(latency.repeats, 20);
  EXPECT_EQ(latency.worker, "w1");
  EXPECT_EQ(latency.backend, "cuda");
  EXPECT_EQ(latency.measured_unix_ms, 1000);
  EXPECT_DOUBLE_EQ(found->at(mid).median_ms, 0.25);
  EXPECT_FALSE(found->contains(12345));
  // Latencies are per device key.
  EXPECT_TRUE(store->LookupLatencies("a100", {high, mid})->empty());
  EXPECT_TRUE(store->LookupLatencies("h100", {})->empty());
  EXPECT_EQ(*store->CountLatencies("h100"), 3);
  EXPECT_EQ(*store->CountLatencies("a100"), 0);
}

TEST_F(FarmStoreTest, FirstMeasurementWins) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->PutLatencies("h100", {{7, Latency(1.0, "first")}, {8, Latency(2.0)}}), 2);
  // Re-measurements of 7 (also twice within one call) are ignored; 9 is new.
  auto added = store->PutLatencies(
      "h100", {{7, Latency(5.0, "second")}, {9, Latency(3.0, "w9")}, {9, Latency(4.0, "w9b")}});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 1);
  auto found = store->LookupLatencies("h100", {7, 9});
  ASSERT_TRUE(found.ok());
  EXPECT_DOUBLE_EQ(found->at(7).median_ms, 1.0);
  EXPECT_EQ(found->at(7).worker, "first");
  EXPECT_DOUBLE_EQ(found->at(9).median_ms, 3.0);
  EXPECT_EQ(found->at(9).worker, "w9");
  EXPECT_EQ(*store->CountLatencies("h100"), 3);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, 3);
  EXPECT_EQ((*devices)[0].ignored_measurements, 2);
}

TEST_F(FarmStoreTest, PutLatenciesRegistersAnUnknownDevice) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutLatencies("l4", {{1, Latency(0.5, "w", 777)}}).ok());
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key, "l4");
  EXPECT_EQ((*devices)[0].backend, "cuda");
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 777);
  EXPECT_EQ((*devices)[0].latencies, 1);
  // A later UpsertDevice keeps first_seen and the count.
  ASSERT_TRUE(store->UpsertDevice("l4", "NVIDIA L4", "cuda", 900).ok());
  devices = store->ListDevices();
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 777);
  EXPECT_EQ((*devices)[0].description, "NVIDIA L4");
  EXPECT_EQ((*devices)[0].latencies, 1);
}

TEST_F(FarmStoreTest, PutLatenciesRejectsBadValuesAndWritesNothing) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double median : {nan, inf, -inf, -0.5}) {
    auto added = store->PutLatencies("h100", {{1, Latency(1.0)}, {2, Latency(median)}});
    ASSERT_FALSE(added.ok()) << median;
    EXPECT_TRUE(absl::IsInvalidArgument(added.status()));
    EXPECT_THAT(std::string(added.status().message()), HasSubstr("median_ms"));
    EXPECT_THAT(std::string(added.status().message()), HasSubstr("h100"));
  }
  StoredLatency bad_p90 = Latency(1.0);
  bad_p90.p90_ms = nan;
  auto added = store->PutLatencies("h100", {{3, bad_p90}});
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(std::string(added.status().message()), HasSubstr("p90_ms"));
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutLatencies("", {{1, Latency(1)}}).status()));
  EXPECT_EQ(*store->CountLatencies("h100"), 0);
  EXPECT_FALSE(*store->HasDevice("h100"));
  EXPECT_EQ(*store->PutLatencies("h100", {}), 0);
  EXPECT_FALSE(*store->HasDevice("h100"));
}

TEST_F(FarmStoreTest, LooksUpTenThousandSignaturesInOneCall) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::pair<uint64_t, StoredLatency>> rows;
  std::vector<uint64_t> wanted;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t signature = i * 0x9E3779B97F4A7C15ull;
    rows.emplace_back(signature, Latency(0.001 * static_cast<double>(i + 1)));
    wanted.push_back(signature);
    wanted.push_back(signature + 1);  // never stored
  }
  EXPECT_EQ(*store->PutLatencies("h100", rows), 10000);
  auto found = store->LookupLatencies("h100", wanted);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->size(), 10000u);
  EXPECT_DOUBLE_EQ(found->at(rows[9999].first).median_ms, 10.0);
}

// ------------------------------------------------------------------ models

TEST_F(FarmStoreTest, ModelsRoundTripAndPutIsIdempotent) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ModelRow onnx = Model("sha256:bbb", "resnet50", 4);
  onnx.source = "onnx";
  onnx.bytes = std::string("\x08\x07\0onnx\xff", 8);
  ASSERT_TRUE(store->PutModel(onnx).ok());
  ASSERT_TRUE(store->PutModel(Model("sha256:aaa", "inception_v3")).ok());
  ModelRow again = onnx;
  again.name = "renamed";
  ASSERT_TRUE(store->PutModel(again).ok());  // no-op

  auto got = store->GetModel("sha256:bbb");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ((*got)->name, "resnet50");
  EXPECT_EQ((*got)->source, "onnx");
  EXPECT_EQ((*got)->batch, 4);
  EXPECT_EQ((*got)->bytes, onnx.bytes);
  EXPECT_EQ((*got)->ops, 42);
  EXPECT_EQ((*got)->created_unix_ms, 5);
  EXPECT_FALSE(store->GetModel("sha256:none")->has_value());

  auto models = store->ListModels();
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].name, "inception_v3");
  EXPECT_EQ((*models)[1].name, "resnet50");
  EXPECT_TRUE((*models)[1].bytes.empty());
  EXPECT_EQ((*models)[1].source, "onnx");

  ModelRow bad = Model("sha256:ccc", "x");
  bad.source = "pytorch";
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutModel(bad)));
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutModel(Model("", "x"))));
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutModel(Model("sha256:ddd", ""))));
  EXPECT_EQ(store->ListModels()->size(), 2u);
}

// ------------------------------------------------------------------ jobs

TEST_F(FarmStoreTest, JobsRoundTrip) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "squeezenet")).ok());
  JobRow job = Job("d1", "h100", 8);
  job.owner = "bob";
  job.retune_batch = "rt-1";
  job.options.r = 2;
  job.options.s = 6;
  job.options.block_size = 30;
  job.options.batch_size_limit = 128;
  job.options.priority = -3;
  job.id = 999;              // ignored
  job.blocks_done = 7;       // ignored
  job.started_unix_ms = 55;  // ignored
  auto id = store->CreateJob(job);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 1);
  auto got = store->GetJob(*id);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  const JobRow& row = **got;
  EXPECT_EQ(row.id, 1);
  EXPECT_EQ(row.model_digest, "d1");
  EXPECT_EQ(row.model_name, "squeezenet");  // filled from the model
  EXPECT_EQ(row.device_key, "h100");
  EXPECT_EQ(row.owner, "bob");
  EXPECT_EQ(row.retune_batch, "rt-1");
  EXPECT_EQ(row.batch, 8);
  EXPECT_EQ(row.options.r, 2);
  EXPECT_EQ(row.options.s, 6);
  EXPECT_EQ(row.options.block_size, 30);
  EXPECT_EQ(row.options.batch_size_limit, 128);
  EXPECT_EQ(row.options.priority, -3);
  EXPECT_EQ(row.state, JobState::kQueued);
  EXPECT_EQ(row.submitted_unix_ms, 100);
  EXPECT_EQ(row.started_unix_ms, 0);
  EXPECT_EQ(row.finished_unix_ms, 0);
  EXPECT_EQ(row.blocks_done, 0);
  EXPECT_FALSE(store->GetJob(2)->has_value());

  EXPECT_EQ(*store->CreateJob(Job("d1", "h100")), 2);
  auto missing_model = store->CreateJob(Job("nope", "h100"));
  EXPECT_TRUE(absl::IsNotFound(missing_model.status())) << missing_model.status();
  EXPECT_THAT(std::string(missing_model.status().message()), HasSubstr("nope"));
  EXPECT_TRUE(absl::IsInvalidArgument(store->CreateJob(Job("d1", "")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->CreateJob(Job("d1", "h100", 0)).status()));
  JobRow running = Job("d1", "h100");
  running.state = JobState::kRunning;
  EXPECT_TRUE(absl::IsInvalidArgument(store->CreateJob(running).status()));
  // Failed creations consume no id.
  EXPECT_EQ(*store->CreateJob(Job("d1", "h100")), 3);
}

TEST_F(FarmStoreTest, JobStateNamesRoundTrip) {
  for (JobState state : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                         JobState::kFailed, JobState::kCancelled}) {
    auto parsed = JobStateFromName(JobStateName(state));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, state);
  }
  EXPECT_EQ(JobStateName(JobState::kCancelled), "cancelled");
  auto bad = JobStateFromName("done");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("done"));
}

TEST_F(FarmStoreTest, ListJobsFilters) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  for (int i = 0; i < 6; ++i) {
    JobRow job = Job("d1", i % 2 == 0 ? "h100" : "a100");
    if (i >= 4) job.retune_batch = "rt";
    ASSERT_TRUE(store->CreateJob(job).ok());
  }
  ASSERT_TRUE(store->UpdateJobState(1, JobState::kRunning, "", 10).ok());
  ASSERT_TRUE(store->UpdateJobState(2, JobState::kRunning, "", 10).ok());
  ASSERT_TRUE(store->UpdateJobState(2, JobState::kSucceeded, "", 20).ok());
  ASSERT_TRUE(store->UpdateJobState(3, JobState::kCancelled, "user", 20).ok());

  EXPECT_THAT(Ids(*store->ListJobs({})), ElementsAre(1, 2, 3, 4, 5, 6));
  JobFilter filter;
  filter.state = JobState::kRunning;
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(1));
  filter = {};
  filter.device_key = "h100";
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(1, 3, 5));
  filter.unfinished_only = true;
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(1, 5));
  filter = {};
  filter.retune_batch = "rt";
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(5, 6));
  filter = {};
  filter.unfinished_only = true;
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(1, 4, 5, 6));
  filter.limit = 2;
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(1, 4));
  filter = {};
  filter.limit = 0;  // no limit
  EXPECT_EQ(store->ListJobs(filter)->size(), 6u);
  filter = {};
  filter.state = JobState::kQueued;
  filter.device_key = "a100";
  filter.retune_batch = "rt";
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(6));
  // Newest first: the limit keeps the most recent jobs.
  filter = {};
  filter.newest_first = true;
  filter.limit = 3;
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(6, 5, 4));
  filter.device_key = "h100";
  EXPECT_THAT(Ids(*store->ListJobs(filter)), ElementsAre(5, 3, 1));
}

TEST_F(FarmStoreTest, ResumesCountUpClearAndNeverGoNegative) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  auto id = store->CreateJob(Job("d1", "h100"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*store->AddResumes(*id, 1), 1);
  EXPECT_EQ(*store->AddResumes(*id, 1), 2);
  EXPECT_EQ(*store->AddResumes(*id, -5), 0);
  EXPECT_EQ(*store->AddResumes(*id, 3), 3);
  EXPECT_EQ((*store->GetJob(*id))->resumes, 3);
  // Progress writes leave the count alone.
  JobRow progress = **store->GetJob(*id);
  progress.blocks_done = 1;
  ASSERT_TRUE(store->UpdateJobProgress(progress).ok());
  EXPECT_EQ((*store->GetJob(*id))->resumes, 3);
  ASSERT_TRUE(store->ClearResumes(*id).ok());
  EXPECT_EQ((*store->GetJob(*id))->resumes, 0);
  EXPECT_TRUE(absl::IsNotFound(store->AddResumes(*id + 7, 1).status()));
  EXPECT_TRUE(absl::IsNotFound(store->ClearResumes(*id + 7)));
}

TEST_F(FarmStoreTest, DeleteLatenciesOfAWorkerOrOfAWholeKey) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutLatencies("h100", {{1, Latency(1.0, "good")},
                                           {2, Latency(2.0, "bad")},
                                           {3, Latency(3.0, "bad")}})
                  .ok());
  ASSERT_TRUE(store->PutLatencies("a100", {{1, Latency(1.5, "bad")}}).ok());
  auto deleted = store->DeleteLatencies("h100", "bad");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2);
  auto left = store->LookupLatencies("h100", {1, 2, 3});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 1u);
  EXPECT_EQ(left->at(1).worker, "good");
  EXPECT_EQ(*store->CountLatencies("a100"), 1) << "other keys keep theirs";
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  for (const DeviceRow& d : *devices) EXPECT_EQ(d.latencies, 1) << d.key;
  // The forgotten stages can be measured again (first measurement wins anew).
  EXPECT_EQ(*store->PutLatencies("h100", {{2, Latency(2.5, "good")}}), 1);
  deleted = store->DeleteLatencies("h100", "");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ(*store->CountLatencies("h100"), 0);
  EXPECT_EQ(*store->DeleteLatencies("h100", "nobody"), 0);
  auto unknown = store->DeleteLatencies("v100", "");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'v100'"));
}

TEST_F(FarmStoreTest, JobStateMachine) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  const int64_t id = *store->CreateJob(Job("d1", "h100"));

  // queued -> succeeded skips running.
  Status status = store->UpdateJobState(id, JobState::kSucceeded, "", 5);
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("queued"));

  ASSERT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 10).ok());
  EXPECT_EQ((*store->GetJob(id))->started_unix_ms, 10);
  // Re-queued after its worker was lost, then running again: started stays.
  ASSERT_TRUE(store->UpdateJobState(id, JobState::kQueued, "worker w1 lost", 20).ok());
  EXPECT_EQ((*store->GetJob(id))->error, "worker w1 lost");
  ASSERT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 30).ok());
  ASSERT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 35).ok());  // same state
  auto job = *store->GetJob(id);
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(job->started_unix_ms, 10);
  EXPECT_EQ(job->error, "");
  EXPECT_EQ(job->finished_unix_ms, 0);

  ASSERT_TRUE(store->UpdateJobState(id, JobState::kFailed, "out of memory", 40).ok());
  job = *store->GetJob(id);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error, "out of memory");
  EXPECT_EQ(job->finished_unix_ms, 40);
  // Final states never change, not even to themselves.
  for (JobState next : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                        JobState::kFailed, JobState::kCancelled}) {
    status = store->UpdateJobState(id, next, "", 50);
    EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  }
  job = *store->GetJob(id);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->finished_unix_ms, 40);

  // queued -> cancelled directly; running -> succeeded.
  const int64_t second = *store->CreateJob(Job("d1", "h100"));
  ASSERT_TRUE(store->UpdateJobState(second, JobState::kCancelled, "by alice", 60).ok());
  EXPECT_EQ((*store->GetJob(second))->started_unix_ms, 0);
  EXPECT_EQ((*store->GetJob(second))->finished_unix_ms, 60);
  const int64_t third = *store->CreateJob(Job("d1", "h100"));
  ASSERT_TRUE(store->UpdateJobState(third, JobState::kRunning, "", 70).ok());
  ASSERT_TRUE(store->UpdateJobState(third, JobState::kSucceeded, "", 80).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store->UpdateJobState(third, JobState::kCancelled, "", 90)));

  EXPECT_TRUE(absl::IsNotFound(store->UpdateJobState(12345, JobState::kRunning, "", 1)));
}

TEST_F(FarmStoreTest, UpdateJobProgressWritesOnlyProgress) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  const int64_t id = *store->CreateJob(Job("d1", "h100", 2));
  ASSERT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 10).ok());
  JobRow progress;
  progress.id = id;
  progress.blocks_total = 12;
  progress.blocks_done = 5;
  progress.stages_profiled = 1234;
  progress.cache_hits = 99;
  progress.candidates = 5000;
  progress.unique_signatures = 1333;
  progress.phase = "profile";
  // Non-progress fields in the argument are ignored.
  progress.device_key = "other";
  progress.batch = 64;
  progress.state = JobState::kCancelled;
  ASSERT_TRUE(store->UpdateJobProgress(progress).ok());
  const JobRow job = **store->GetJob(id);
  EXPECT_EQ(job.blocks_total, 12);
  EXPECT_EQ(job.blocks_done, 5);
  EXPECT_EQ(job.stages_profiled, 1234);
  EXPECT_EQ(job.cache_hits, 99);
  EXPECT_EQ(job.candidates, 5000);
  EXPECT_EQ(job.unique_signatures, 1333);
  EXPECT_EQ(job.phase, "profile");
  EXPECT_EQ(job.device_key, "h100");
  EXPECT_EQ(job.batch, 2);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.started_unix_ms, 10);
  progress.id = 777;
  EXPECT_TRUE(absl::IsNotFound(store->UpdateJobProgress(progress)));
}

// ------------------------------------------------------------------ results, phases

TEST_F(FarmStoreTest, ResultsReplace) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  const int64_t id = *store->CreateJob(Job("d1", "h100"));
  EXPECT_FALSE(store->GetResult(id)->has_value());
  ASSERT_TRUE(store->PutResult({id, "{\"stages\":[]}", "{\"latency_ms\":4.1}"}).ok());
  ASSERT_TRUE(store->PutResult({id, "{\"stages\":[1]}", "{\"latency_ms\":4.0}"}).ok());
  auto result = store->GetResult(id);
  ASSERT_TRUE(result.ok() && result->has_value());
  EXPECT_EQ((*result)->job_id, id);
  EXPECT_EQ((*result)->schedule_json, "{\"stages\":[1]}");
  EXPECT_EQ((*result)->result_json, "{\"latency_ms\":4.0}");
  EXPECT_TRUE(absl::IsNotFound(store->PutResult({id + 1, "{}", "{}"})));
}

TEST_F(FarmStoreTest, PhaseLogAppendsAndLists) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  const int64_t a = *store->CreateJob(Job("d1", "h100"));
  const int64_t b = *store->CreateJob(Job("d1", "h100"));
  PhaseLogRow row;
  row.job_id = a;
  row.phase = "enumerate";
  row.resource = "server-cpu-0";
  row.outcome = "ok";
  row.queued_s = 1700000000.25;
  row.start_s = 1700000000.5;
  row.end_s = 1700000001.75;
  row.stages = 40;
  row.detail = "block 0";
  EXPECT_EQ(*store->AppendPhase(row), 1);
  row.job_id = b;
  row.phase = "build";
  row.resource = "w1/cpu";
  row.worker = "w1";
  EXPECT_EQ(*store->AppendPhase(row), 2);
  row.job_id = a;
  row.phase = "profile";
  row.resource = "w1/gpu";
  EXPECT_EQ(*store->AppendPhase(row), 3);

  auto all = store->ListPhases(std::nullopt);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  auto of_a = store->ListPhases(a);
  ASSERT_TRUE(of_a.ok());
  ASSERT_EQ(of_a->size(), 2u);
  const PhaseLogRow& first = (*of_a)[0];
  EXPECT_EQ(first.id, 1);
  EXPECT_EQ(first.job_id, a);
  EXPECT_EQ(first.phase, "enumerate");
  EXPECT_EQ(first.resource, "server-cpu-0");
  EXPECT_EQ(first.worker, "");
  EXPECT_EQ(first.outcome, "ok");
  EXPECT_DOUBLE_EQ(first.queued_s, 1700000000.25);
  EXPECT_DOUBLE_EQ(first.start_s, 1700000000.5);
  EXPECT_DOUBLE_EQ(first.end_s, 1700000001.75);
  EXPECT_EQ(first.stages, 40);
  EXPECT_EQ(first.detail, "block 0");
  EXPECT_EQ((*of_a)[1].phase, "profile");

  row.phase = "compile";
  auto bad = store->AppendPhase(row);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("compile"));
  row.phase = "update";
  row.job_id = 404;
  EXPECT_TRUE(absl::IsNotFound(store->AppendPhase(row).status()));
  EXPECT_EQ(store->ListPhases(std::nullopt)->size(), 3u);
}

// ------------------------------------------------------------------ re-tuning

TEST_F(FarmStoreTest, RetuneTargetsFilters) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("dr", "resnet50")).ok());
  ASSERT_TRUE(store->PutModel(Model("di", "inception_v3")).ok());
  ASSERT_TRUE(store->PutModel(Model("ds", "squeezenet")).ok());
  auto create = [&](const std::string& digest, const std::string& device, int64_t batch, int r,
                    JobState final_state) {
    JobRow job = Job(digest, device, batch);
    job.options.r = r;
    const int64_t id = *store->CreateJob(job);
    if (final_state != JobState::kQueued) {
      if (final_state != JobState::kCancelled) {
        EXPECT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 1).ok());
      }
      EXPECT_TRUE(store->UpdateJobState(id, final_state, "", 2).ok());
    }
    return id;
  };
  create("dr", "v100", 1, 3, JobState::kSucceeded);
  create("dr", "v100", 1, 4, JobState::kSucceeded);  // latest succeeded for (dr, 1)
  create("dr", "v100", 1, 9, JobState::kFailed);     // later but failed
  create("dr", "v100", 8, 2, JobState::kSucceeded);
  create("di", "v100", 1, 5, JobState::kFailed);
  create("di", "v100", 1, 6, JobState::kCancelled);  // no success: latest any
  create("ds", "a100", 1, 7, JobState::kSucceeded);

  auto targets = store->RetuneTargets({});
  ASSERT_TRUE(targets.ok()) << targets.status();
  ASSERT_EQ(targets->size(), 4u);
  EXPECT_EQ((*targets)[0].model_name, "inception_v3");
  EXPECT_EQ((*targets)[0].model_digest, "di");
  EXPECT_EQ((*targets)[0].options.r, 6);
  EXPECT_EQ((*targets)[1].model_name, "resnet50");
  EXPECT_EQ((*targets)[1].batch, 1);
  EXPECT_EQ((*targets)[1].options.r, 4);
  EXPECT_EQ((*targets)[2].model_name, "resnet50");
  EXPECT_EQ((*targets)[2].batch, 8);
  EXPECT_EQ((*targets)[2].options.r, 2);
  EXPECT_EQ((*targets)[3].model_name, "squeezenet");

  RetuneFilter filter;
  filter.from_device_key = "v100";
  EXPECT_EQ(store->RetuneTargets(filter)->size(), 3u);
  filter.model_names = {"resnet50", "not_a_model"};
  targets = store->RetuneTargets(filter);
  ASSERT_EQ(targets->size(), 2u);
  EXPECT_EQ((*targets)[0].model_digest, "dr");
  filter.batch = 8;
  targets = store->RetuneTargets(filter);
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ((*targets)[0].batch, 8);
  filter = {};
  filter.from_device_key = "a100";
  targets = store->RetuneTargets(filter);
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ((*targets)[0].model_name, "squeezenet");
  EXPECT_EQ((*targets)[0].options.r, 7);
  filter.from_device_key = "h100";
  EXPECT_TRUE(store->RetuneTargets(filter)->empty());
}

// ------------------------------------------------------------------ durability

TEST_F(FarmStoreTest, ReopenKeepsEverything) {
  int64_t job_id = 0;
  {
    auto store = OpenStore("keep.db");
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->UpsertDevice("h100", "H100", "cuda", 1).ok());
    ASSERT_TRUE(store->PutLatencies("h100", {{11, Latency(0.7)}, {12, Latency(0.8)}}).ok());
    ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
    job_id = *store->CreateJob(Job("d1", "h100"));
    ASSERT_TRUE(store->UpdateJobState(job_id, JobState::kRunning, "", 3).ok());
    JobRow progress;
    progress.id = job_id;
    progress.blocks_done = 2;
    progress.phase = "update";
    ASSERT_TRUE(store->UpdateJobProgress(progress).ok());
    ASSERT_TRUE(store->PutResult({job_id, "{}", "{\"x\":1}"}).ok());
    PhaseLogRow phase;
    phase.job_id = job_id;
    phase.phase = "measure";
    ASSERT_TRUE(store->AppendPhase(phase).ok());
  }
  auto store = OpenStore("keep.db");
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(*store->HasDevice("h100"));
  EXPECT_EQ(*store->CountLatencies("h100"), 2);
  EXPECT_DOUBLE_EQ(store->LookupLatencies("h100", {12})->at(12).median_ms, 0.8);
  EXPECT_TRUE(store->GetModel("d1")->has_value());
  const JobRow job = **store->GetJob(job_id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.blocks_done, 2);
  EXPECT_EQ(job.phase, "update");
  EXPECT_EQ((*store->GetResult(job_id))->result_json, "{\"x\":1}");
  EXPECT_EQ(store->ListPhases(job_id)->size(), 1u);
  // Ids continue after the highest ever used.
  EXPECT_EQ(*store->CreateJob(Job("d1", "h100")), job_id + 1);
}

// A child process writes batches of latencies and reports each committed
// batch through a pipe; it is killed with SIGKILL mid-way. Every reported
// batch must be in the file, batches are all-or-nothing, and the file passes
// an integrity check.
TEST_F(FarmStoreTest, KilledWriterLeavesConsistentFile) {
  const std::string path = PathOf("killed.db");
  ASSERT_NE(OpenStore("killed.db"), nullptr);  // schema exists before the child starts
  constexpr int kBatch = 200;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    auto store = FarmStore::Open(path);
    if (!store.ok()) ::_exit(2);
    for (int32_t batch = 0;; ++batch) {
      std::vector<std::pair<uint64_t, StoredLatency>> rows;
      for (int i = 0; i < kBatch; ++i) {
        rows.emplace_back(static_cast<uint64_t>(batch) * kBatch + i, Latency(1.0 + i));
      }
      if (!(*store)->PutLatencies("h100", rows).ok()) ::_exit(3);
      if (::write(pipe_fds[1], &batch, sizeof(batch)) != sizeof(batch)) ::_exit(4);
    }
  }
  ::close(pipe_fds[1]);
  int32_t last_committed = -1;
  while (last_committed < 20) {
    ASSERT_EQ(::read(pipe_fds[0], &last_committed, sizeof(last_committed)),
              static_cast<ssize_t>(sizeof(last_committed)));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child exited with " << WEXITSTATUS(wait_status);
  // Batches committed after our last read may be in the pipe: drain it.
  int32_t reported = last_committed;
  while (::read(pipe_fds[0], &reported, sizeof(reported)) == sizeof(reported)) {
    last_committed = reported;
  }
  ::close(pipe_fds[0]);

  auto store = OpenStore("killed.db");
  ASSERT_NE(store, nullptr);
  const int64_t count = *store->CountLatencies("h100");
  EXPECT_GE(count, int64_t{last_committed + 1} * kBatch);
  EXPECT_EQ(count % kBatch, 0) << "a batch was partly written";
  std::vector<uint64_t> committed;
  for (int64_t i = 0; i < int64_t{last_committed + 1} * kBatch; ++i) committed.push_back(i);
  EXPECT_EQ(static_cast<int64_t>(store->LookupLatencies("h100", committed)->size()),
            int64_t{last_committed + 1} * kBatch);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, count);  // counter and rows move together
  store.reset();
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  auto check = (*db)->Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok() && *check->Step());
  EXPECT_EQ(check->ColumnText(0), "ok");
}

// ------------------------------------------------------------------ threads

TEST_F(FarmStoreTest, ConcurrentUseFromSeveralThreads) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("d1", "m1")).ok());
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        // Overlapping signatures across threads: first measurement wins.
        std::vector<std::pair<uint64_t, StoredLatency>> rows;
        for (int i = 0; i < 10; ++i) {
          rows.emplace_back(static_cast<uint64_t>(round * 10 + i), Latency(t + 1.0));
        }
        if (!store->PutLatencies("h100", rows).ok()) ++failures;
        auto id = store->CreateJob(Job("d1", "h100"));
        if (!id.ok()) {
          ++failures;
          continue;
        }
        JobRow progress;
        progress.id = *id;
        progress.blocks_done = round;
        if (!store->UpdateJobProgress(progress).ok()) ++failures;
        if (!store->UpdateJobState(*id, JobState::kRunning, "", round).ok()) ++failures;
        if (!store->LookupLatencies("h100", {0, 1, 2}).ok()) ++failures;
        if (!store->ListJobs({}).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*store->CountLatencies("h100"), kRounds * 10);
  JobFilter filter;
  filter.limit = 0;
  auto jobs = store->ListJobs(filter);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), static_cast<size_t>(kThreads * kRounds));
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*jobs)[i].id, static_cast<int64_t>(i) + 1);
    EXPECT_EQ((*jobs)[i].state, JobState::kRunning);
  }
  auto devices = store->ListDevices();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, kRounds * 10);
  EXPECT_EQ((*devices)[0].ignored_measurements, (kThreads - 1) * kRounds * 10);
}

// Two stores on one file (as two server processes would be) see each other's
// commits.
TEST_F(FarmStoreTest, TwoConnectionsShareOneFile) {
  auto first = OpenStore("shared.db");
  auto second = OpenStore("shared.db");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->PutLatencies("h100", {{1, Latency(1.0, "a")}}).ok());
  EXPECT_EQ(*second->PutLatencies("h100", {{1, Latency(2.0, "b")}, {2, Latency(3.0)}}), 1);
  EXPECT_EQ(first->LookupLatencies("h100", {1})->at(1).worker, "a");
  EXPECT_EQ(*first->CountLatencies("h100"), 2);
}

}  // namespace
}  // namespace iosfarm::server
