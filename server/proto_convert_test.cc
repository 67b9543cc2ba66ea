#include "server/proto_convert.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/store_test_rows.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

JobRow SampleJob() {
  JobRow job;
  job.id = 42;
  job.model_digest = "abc123";
  job.model_name = "squeezenet";
  job.device_key = "h100-sxm";
  job.owner = "alice";
  job.retune_batch = "retune-1";
  job.batch = 8;
  job.options.r = 2;
  job.options.s = 4;
  job.options.block_size = 30;
  job.options.batch_size_limit = 16;
  job.options.priority = 5;
  job.state = JobState::kRunning;
  job.error = "";
  job.submitted_unix_ms = 1'000'000;
  job.started_unix_ms = 1'001'000;
  job.blocks_total = 4;
  job.blocks_done = 1;
  job.stages_profiled = 12;
  job.cache_hits = 7;
  job.candidates = 100;
  job.unique_signatures = 19;
  job.stages_measured = 17;
  job.phase = "profile";
  return job;
}

TEST(ProtoConvertTest, JobCarriesEveryFieldAndEstimatesTheRest) {
  const v1::Job job = JobToProto(SampleJob(), /*now_s=*/1'010.0);
  EXPECT_EQ(job.id(), 42);
  EXPECT_EQ(job.model_name(), "squeezenet");
  EXPECT_EQ(job.model_digest(), "abc123");
  EXPECT_EQ(job.device_key(), "h100-sxm");
  EXPECT_EQ(job.batch(), 8);
  EXPECT_EQ(job.options().r(), 2);
  EXPECT_EQ(job.options().s(), 4);
  EXPECT_EQ(job.options().block_size(), 30);
  EXPECT_EQ(job.options().batch_size(), 16);
  EXPECT_EQ(job.priority(), 5);
  EXPECT_EQ(job.owner(), "alice");
  EXPECT_EQ(job.retune_batch(), "retune-1");
  EXPECT_EQ(job.state(), v1::RUNNING);
  EXPECT_EQ(job.submitted_unix_ms(), 1'000'000);
  EXPECT_EQ(job.started_unix_ms(), 1'001'000);
  EXPECT_EQ(job.finished_unix_ms(), 0);
  const v1::JobProgress& p = job.progress();
  EXPECT_EQ(p.phase(), "profile");
  EXPECT_EQ(p.blocks_total(), 4);
  EXPECT_EQ(p.blocks_done(), 1);
  EXPECT_EQ(p.stages_profiled(), 12);
  EXPECT_EQ(p.cache_hits(), 7);
  EXPECT_EQ(p.candidates(), 100);
  EXPECT_EQ(p.unique_signatures(), 19);
  EXPECT_EQ(p.stages_measured(), 17);
  EXPECT_DOUBLE_EQ(p.elapsed_s(), 10.0);
  EXPECT_DOUBLE_EQ(p.eta_s(), 30.0);  // 10 s per block, 3 blocks to go
}

TEST(ProtoConvertTest, EtaIsUnknownBeforeTheFirstBlockAndZeroAtTheEnd) {
  JobRow job = SampleJob();
  job.blocks_done = 0;
  EXPECT_LT(JobToProto(job, 1'010.0).progress().eta_s(), 0);

  job.state = JobState::kSucceeded;
  job.finished_unix_ms = 1'004'000;
  const v1::Job done = JobToProto(job, 5'000.0);
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_DOUBLE_EQ(done.progress().elapsed_s(), 4.0);  // up to the finish, not now
  EXPECT_DOUBLE_EQ(done.progress().eta_s(), 0);
}

TEST(ProtoConvertTest, JobStates) {
  EXPECT_EQ(JobStateToProto(JobState::kQueued), v1::QUEUED);
  EXPECT_EQ(JobStateToProto(JobState::kRunning), v1::RUNNING);
  EXPECT_EQ(JobStateToProto(JobState::kSucceeded), v1::SUCCEEDED);
  EXPECT_EQ(JobStateToProto(JobState::kFailed), v1::FAILED);
  EXPECT_EQ(JobStateToProto(JobState::kCancelled), v1::CANCELLED);

  auto any = JobStateFromText("");
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(any->has_value());
  for (const char* name : {"queued", "running", "succeeded", "failed", "cancelled"}) {
    auto state = JobStateFromText(name);
    ASSERT_TRUE(state.ok()) << name;
    ASSERT_TRUE(state->has_value());
    EXPECT_EQ(JobStateName(**state), name);
  }
  auto bad = JobStateFromText("finished");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("finished"));
}

TEST(ProtoConvertTest, PhaseAndWorkerEntries) {
  PhaseLogRow row;
  row.id = 3;
  row.job_id = 9;
  row.phase = "profile";
  row.resource = "w1/gpu";
  row.worker = "w1";
  row.outcome = "worker_lost";
  row.queued_s = 1.5;
  row.start_s = 2.5;
  row.end_s = 3.5;
  row.stages = 17;
  row.detail = "lost";
  const v1::PhaseEntry entry = PhaseToProto(row);
  EXPECT_EQ(entry.job_id(), 9);
  EXPECT_EQ(entry.phase(), "profile");
  EXPECT_EQ(entry.resource(), "w1/gpu");
  EXPECT_EQ(entry.worker(), "w1");
  EXPECT_EQ(entry.outcome(), "worker_lost");
  EXPECT_DOUBLE_EQ(entry.queued_s(), 1.5);
  EXPECT_DOUBLE_EQ(entry.start_s(), 2.5);
  EXPECT_DOUBLE_EQ(entry.end_s(), 3.5);
  EXPECT_EQ(entry.stages(), 17);
  EXPECT_EQ(entry.detail(), "lost");

  WorkerSnapshot worker;
  worker.id = "w1";
  worker.device_key = "h100-sxm";
  worker.backend = "cuda";
  worker.description = "NVIDIA H100";
  worker.state = "profile";
  worker.job_id = 9;
  worker.connected_unix_ms = 10;
  worker.last_heartbeat_unix_ms = 20;
  worker.phases_done = 30;
  const v1::WorkerInfo info = WorkerToProto(worker);
  EXPECT_EQ(info.id(), "w1");
  EXPECT_EQ(info.device_key(), "h100-sxm");
  EXPECT_EQ(info.backend(), "cuda");
  EXPECT_EQ(info.description(), "NVIDIA H100");
  EXPECT_EQ(info.state(), "profile");
  EXPECT_EQ(info.job_id(), 9);
  EXPECT_EQ(info.connected_unix_ms(), 10);
  EXPECT_EQ(info.last_heartbeat_unix_ms(), 20);
  EXPECT_EQ(info.phases_done(), 30);
}

// The JSON reading these figures once needed is the version-3 upgrade's now
// (job_store_results_test.cc, Version2ResultsTest).
TEST(ProtoConvertTest, ResultFiguresFromTheTypedRow) {
  const ResultRow row = FullResult(5);
  auto result = ResultToProto(row);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->job_id(), 5);
  EXPECT_EQ(result->schedule_json(), row.schedule_json);
  // In the row's order (ios, sequential, greedy as measured).
  ASSERT_EQ(result->measured_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const MeasuredSchedule& m = row.measured[i];
    EXPECT_EQ(result->measured(i).name(), m.name);
    EXPECT_DOUBLE_EQ(result->measured(i).median_ms(), m.median_ms) << m.name;
    EXPECT_DOUBLE_EQ(result->measured(i).p10_ms(), m.p10_ms) << m.name;
    EXPECT_DOUBLE_EQ(result->measured(i).p90_ms(), m.p90_ms) << m.name;
    EXPECT_DOUBLE_EQ(result->measured(i).cv(), m.cv) << m.name;
    EXPECT_EQ(result->measured(i).repeats(), m.repeats) << m.name;
  }
  EXPECT_EQ(result->measured(0).name(), "ios");
  EXPECT_DOUBLE_EQ(result->predicted_ms(), 0.65);
  EXPECT_DOUBLE_EQ(result->search_s(), 1.25);
  EXPECT_EQ(result->stages_profiled(), 120);
  EXPECT_EQ(result->cache_hits(), 30);
  EXPECT_EQ(result->candidates(), 900);
  EXPECT_EQ(result->unique_signatures(), 150);
  EXPECT_EQ(result->stages_measured(), 140);
  EXPECT_EQ(result->stages(), 11);
  EXPECT_EQ(result->worker(), "w1");
  EXPECT_EQ(result->backend(), "sim");
  EXPECT_EQ(result->device_key(), "sim-test");
  EXPECT_EQ(result->chosen(), "sequential");
}

// A row the store would refuse is never passed on (the coordinator checks
// ApplyMeasure's row with it before storing).
TEST(ProtoConvertTest, ResultsThatCannotBeStoredAreInvalidArgument) {
  ResultRow nan_figure;
  nan_figure.job_id = 5;
  nan_figure.search_s = std::numeric_limits<double>::quiet_NaN();
  ResultRow twice;
  twice.job_id = 5;
  twice.measured = {{"ios", 1, 1, 1, 0, 1}, {"ios", 2, 2, 2, 0, 1}};
  for (const ResultRow& row : {nan_figure, twice}) {
    auto result = ResultToProto(row);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(), HasSubstr("job 5"));
  }
}

TEST(ProtoConvertTest, OptionsDefaultsAndRanges) {
  auto defaults = OptionsFromProto(v1::SearchOptions(), 7);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->r, 3);
  EXPECT_EQ(defaults->s, 8);
  EXPECT_EQ(defaults->block_size, 50);
  EXPECT_EQ(defaults->batch_size_limit, 64);
  EXPECT_EQ(defaults->priority, 7);

  v1::SearchOptions set;
  set.set_r(1);
  set.set_s(64);
  set.set_block_size(1024);
  set.set_batch_size(1);
  auto explicit_options = OptionsFromProto(set, 0);
  ASSERT_TRUE(explicit_options.ok()) << explicit_options.status();
  EXPECT_EQ(explicit_options->r, 1);
  EXPECT_EQ(explicit_options->s, 64);
  EXPECT_EQ(explicit_options->block_size, 1024);
  EXPECT_EQ(explicit_options->batch_size_limit, 1);

  struct Bad {
    const char* field;
    void (*set)(v1::SearchOptions&);
  };
  const Bad bad[] = {
      {"options.r", [](v1::SearchOptions& o) { o.set_r(100); }},
      {"options.r", [](v1::SearchOptions& o) { o.set_r(-1); }},
      {"options.s", [](v1::SearchOptions& o) { o.set_s(65); }},
      {"options.block_size", [](v1::SearchOptions& o) { o.set_block_size(-5); }},
      {"options.batch_size", [](v1::SearchOptions& o) { o.set_batch_size(5000); }},
  };
  for (const Bad& b : bad) {
    v1::SearchOptions options;
    b.set(options);
    auto result = OptionsFromProto(options, 0);
    ASSERT_FALSE(result.ok()) << options.ShortDebugString();
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(), HasSubstr(b.field));
  }
}

TEST(ProtoConvertTest, WorkerReportsAndRegistrationsKeepEveryField) {
  v1::RegisterWorker registration;
  registration.set_worker_id("w1");
  registration.set_device_key("h100");
  registration.set_backend("cuda");
  registration.set_device_description("NVIDIA H100");
  registration.set_version("0.1");
  registration.set_max_built_batches(4);
  const WorkerRegistration r = RegistrationFromProto(registration);
  EXPECT_EQ(r.worker_id, "w1");
  EXPECT_EQ(r.device_key, "h100");
  EXPECT_EQ(r.backend, "cuda");
  EXPECT_EQ(r.device_description, "NVIDIA H100");
  EXPECT_EQ(r.version, "0.1");
  EXPECT_EQ(r.max_built_batches, 4);
  EXPECT_FALSE(r.device_floor.bounds_anything());  // a worker from before the field
  v1::DeviceFloor* floor = registration.mutable_device_floor();
  floor->set_stage_ms(0.002);
  floor->set_launch_ms(0.001);
  floor->set_peak_gflops(14000);
  floor->set_bandwidth_gbps(800);
  floor->set_issue_adds_to_work(true);
  const WorkerRegistration floored = RegistrationFromProto(registration);
  EXPECT_DOUBLE_EQ(floored.device_floor.stage_ms, 0.002);
  EXPECT_DOUBLE_EQ(floored.device_floor.launch_ms, 0.001);
  EXPECT_DOUBLE_EQ(floored.device_floor.peak_gflops, 14000);
  EXPECT_DOUBLE_EQ(floored.device_floor.bandwidth_gbps, 800);
  EXPECT_FALSE(floored.device_floor.issue_overlaps_work);
  EXPECT_EQ(floored.device_floor.issue_order, scheduler::ios::DeviceFloor::IssueOrder::kUnknown);
  floor->set_issue_order(v1::DeviceFloor::ISSUE_ORDER_ROUND_ROBIN);
  EXPECT_EQ(RegistrationFromProto(registration).device_floor.issue_order,
            scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin);
  floor->set_issue_order(v1::DeviceFloor::ISSUE_ORDER_GROUP_BY_GROUP);
  EXPECT_EQ(RegistrationFromProto(registration).device_floor.issue_order,
            scheduler::ios::DeviceFloor::IssueOrder::kGroupByGroup);
  // A newer worker's order this server does not know: none.
  floor->set_issue_order(static_cast<v1::DeviceFloor::IssueOrder>(7));
  EXPECT_EQ(RegistrationFromProto(registration).device_floor.issue_order,
            scheduler::ios::DeviceFloor::IssueOrder::kUnknown);
  EXPECT_FALSE(RegistrationFromProto(registration).device_floor.back_to_back);
  floor->set_timed_back_to_back(true);
  EXPECT_TRUE(RegistrationFromProto(registration).device_floor.back_to_back);
  EXPECT_EQ(RegistrationFromProto(registration).device_floor.free_ops,
            scheduler::ios::DeviceFloor::FreeOps::kViews);
  floor->set_free_ops(v1::DeviceFloor::FREE_OPS_VIEWS_AND_FUSABLE);
  EXPECT_EQ(RegistrationFromProto(registration).device_floor.free_ops,
            scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_DOUBLE_EQ(RegistrationFromProto(registration).device_floor.contention, 0);
  floor->set_contention(0.05);
  EXPECT_DOUBLE_EQ(RegistrationFromProto(registration).device_floor.contention, 0.05);
  // A floor an older server would misread comes in device_floor_v10, which
  // is read where it is set.
  v1::RegisterWorker v10;
  v10.set_worker_id("w2");
  v1::DeviceFloor* timed = v10.mutable_device_floor_v10();
  timed->set_launch_ms(0.0015);
  timed->set_timed_back_to_back(true);
  timed->set_free_ops(v1::DeviceFloor::FREE_OPS_VIEWS_AND_FUSABLE);
  const WorkerRegistration from_v10 = RegistrationFromProto(v10);
  EXPECT_DOUBLE_EQ(from_v10.device_floor.launch_ms, 0.0015);
  EXPECT_TRUE(from_v10.device_floor.back_to_back);
  EXPECT_TRUE(from_v10.device_floor.issue_overlaps_work);
  EXPECT_EQ(from_v10.device_floor.free_ops, scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
  v10.mutable_device_floor()->set_launch_ms(0.5);  // never both; the v10 one wins
  EXPECT_DOUBLE_EQ(RegistrationFromProto(v10).device_floor.launch_ms, 0.0015);

  v1::PhaseResult result;
  result.set_phase_id(12);
  result.set_ok(true);
  result.set_plans_built(2);
  v1::StageLatency* l = result.add_latencies();
  l->set_signature(0xfedcba9876543210ULL);
  l->set_median_ms(1.5);
  l->set_p10_ms(1.25);
  l->set_p90_ms(2);
  l->set_cv(0.1);
  l->set_repeats(30);
  v1::ScheduleLatency* m = result.add_schedules();
  m->set_name("greedy");
  m->set_median_ms(7);
  m->set_repeats(9);
  const PhaseReport report = PhaseReportFromProto(result);
  EXPECT_EQ(report.phase_id, 12);
  EXPECT_TRUE(report.ok);
  EXPECT_EQ(report.plans_built, 2);
  ASSERT_EQ(report.latencies.size(), 1u);
  EXPECT_EQ(report.latencies[0].signature, 0xfedcba9876543210ULL);
  EXPECT_DOUBLE_EQ(report.latencies[0].figures.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(report.latencies[0].figures.p10_ms, 1.25);
  EXPECT_DOUBLE_EQ(report.latencies[0].figures.p90_ms, 2);
  EXPECT_DOUBLE_EQ(report.latencies[0].figures.cv, 0.1);
  EXPECT_EQ(report.latencies[0].figures.repeats, 30);
  ASSERT_EQ(report.schedules.size(), 1u);
  EXPECT_EQ(report.schedules[0].name, "greedy");
  EXPECT_DOUBLE_EQ(report.schedules[0].figures.median_ms, 7);
  EXPECT_EQ(report.schedules[0].figures.repeats, 9);
}

TEST(ProtoConvertTest, CommandsBecomeTheAssignmentsWorkersRead) {
  EXPECT_EQ(WorkerCommandToProto(WorkerCommand::Cancel(5)).cancel().phase_id(), 5);

  PhaseOrder build;
  build.phase_id = 3;
  build.job_id = 4;
  build.batch_id = "4/0";
  build.kind = scheduler::farm::PhaseKind::kBuild;
  build.build.graph = std::make_shared<const std::string>("graph bytes");
  scheduler::ios::StageRequest request;
  request.signature = 99;
  request.stage.strategy = scheduler::ios::Strategy::kMerge;
  request.stage.groups = {{1, 2}, {3}};
  build.build.stages.push_back(request);
  const v1::ServerMessage message = WorkerCommandToProto(WorkerCommand::Assign(build));
  ASSERT_TRUE(message.has_assign());
  EXPECT_EQ(message.assign().phase_id(), 3);
  EXPECT_EQ(message.assign().job_id(), 4);
  EXPECT_EQ(message.assign().batch_id(), "4/0");
  ASSERT_TRUE(message.assign().has_build());
  EXPECT_EQ(message.assign().build().graph(), "graph bytes");
  ASSERT_EQ(message.assign().build().stages_size(), 1);
  const v1::StageSpec& spec = message.assign().build().stages(0);
  EXPECT_EQ(spec.signature(), 99u);
  EXPECT_EQ(spec.strategy(), "merge");
  ASSERT_EQ(spec.groups_size(), 2);
  EXPECT_THAT(spec.groups(0).ops(), ::testing::ElementsAre(1, 2));

  PhaseOrder measure;
  measure.kind = scheduler::farm::PhaseKind::kMeasure;
  measure.measure.graph = build.build.graph;
  measure.measure.schedules = {{"ios", "{}"}, {"sequential", "[]"}};
  measure.measure.options.max_repeats = 7;
  const v1::ServerMessage measured = WorkerCommandToProto(WorkerCommand::Assign(measure));
  ASSERT_TRUE(measured.assign().has_measure());
  EXPECT_EQ(measured.assign().measure().schedules_size(), 2);
  EXPECT_EQ(measured.assign().measure().schedules(1).name(), "sequential");
  EXPECT_EQ(measured.assign().measure().options().max_repeats(), 7);

  PhaseOrder profile;
  profile.kind = scheduler::farm::PhaseKind::kProfile;
  profile.profile.stable_fraction = 0.02;
  EXPECT_DOUBLE_EQ(
      WorkerCommandToProto(WorkerCommand::Assign(profile)).assign().profile().options().stable_fraction(),
      0.02);
}

}  // namespace
}  // namespace iosfarm::server
