#include "server/job_store.h"

#include <cstdint>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/farm_database.h"
#include "server/store_test_rows.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using JobStoreTest = StoreTest<&FarmDatabase::jobs>;

TEST_F(JobStoreTest, ModelsRoundTripAndPutIsIdempotent) {
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

TEST_F(JobStoreTest, JobsRoundTrip) {
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

TEST_F(JobStoreTest, JobStateNamesRoundTrip) {
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

TEST_F(JobStoreTest, ListJobsFilters) {
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

TEST_F(JobStoreTest, ResumesCountUpClearAndNeverGoNegative) {
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

TEST_F(JobStoreTest, JobStateMachine) {
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

TEST_F(JobStoreTest, UpdateJobProgressWritesOnlyProgress) {
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
  progress.stages_measured = 1300;
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
  EXPECT_EQ(job.stages_measured, 1300);
  EXPECT_EQ(job.phase, "profile");
  EXPECT_EQ(job.device_key, "h100");
  EXPECT_EQ(job.batch, 2);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.started_unix_ms, 10);
  progress.id = 777;
  EXPECT_TRUE(absl::IsNotFound(store->UpdateJobProgress(progress)));
}

TEST_F(JobStoreTest, PhaseLogAppendsAndLists) {
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

TEST_F(JobStoreTest, SearchHistoryFindsTheSameSearchOnThisKeyOrAnotherAndTheStagesPerOp) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutModel(Model("dr", "resnet50")).ok());  // 42 ops
  ASSERT_TRUE(store->PutModel(Model("ds", "squeezenet")).ok());
  auto finish = [&](JobRow job, JobState state, int64_t stages_measured) {
    const int64_t id = *store->CreateJob(job);
    EXPECT_TRUE(store->UpdateJobState(id, JobState::kRunning, "", 1).ok());
    JobRow progress = job;
    progress.id = id;
    progress.stages_measured = stages_measured;
    EXPECT_TRUE(store->UpdateJobProgress(progress).ok());
    EXPECT_TRUE(store->UpdateJobState(id, state, "", 2 + id).ok());
  };
  JobRow resnet = Job("dr", "v100");
  auto empty = store->SearchHistoryOf(resnet);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_FALSE(empty->done_on_this_key);
  EXPECT_EQ(empty->stages_elsewhere, -1);
  EXPECT_EQ(empty->searched_stages, 0);

  finish(Job("ds", "v100"), JobState::kSucceeded, 420);
  finish(Job("dr", "a100"), JobState::kSucceeded, 900);
  finish(Job("dr", "h100"), JobState::kSucceeded, 1000);  // the latest elsewhere
  finish(Job("dr", "v100"), JobState::kFailed, 5);        // failed: not a search done
  JobRow other_options = Job("dr", "v100");
  other_options.options.r = 2;
  finish(other_options, JobState::kSucceeded, 77);
  auto elsewhere = store->SearchHistoryOf(resnet);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_FALSE(elsewhere->done_on_this_key);
  EXPECT_EQ(elsewhere->stages_elsewhere, 1000);
  EXPECT_EQ(elsewhere->searched_stages, 420 + 900 + 1000 + 77);
  EXPECT_EQ(elsewhere->searched_ops, 4 * 42);

  finish(Job("dr", "v100"), JobState::kSucceeded, 950);
  auto here = store->SearchHistoryOf(resnet);
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_TRUE(here->done_on_this_key);
  // The estimate is stored with the job and read back.
  JobRow estimated = Job("ds", "v100");
  estimated.estimated_stages = 1234;
  auto id = store->CreateJob(estimated);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ((*store->GetJob(*id))->estimated_stages, 1234);
  EXPECT_EQ((*store->GetJob(*store->CreateJob(Job("ds", "v100"))))->estimated_stages, -1);
}

TEST_F(JobStoreTest, RetuneTargetsFilters) {
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

}  // namespace
}  // namespace iosfarm::server
