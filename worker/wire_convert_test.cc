#include "worker/wire_convert.h"

#include <memory>
#include <variant>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "graph/models/zoo.h"
#include "graph/serialize.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/backends/sim/sim_test_graphs.h"
#include "worker/phase_executor.h"
#include "worker/wire_testing.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;
using scheduler::ios::Stage;
using testing::BaselineJson;
using testing::BuildAssignment;
using testing::GreedyStages;
using testing::ProfileAssignment;

// Assignments as the daemon answers them (testing::AnswerAssignment), on a
// real executor over the sim backend.
class WireConvertTest : public testing::SimExecutorTest {
 protected:
  v1::PhaseResult Answer(const v1::PhaseAssignment& assignment) {
    return testing::AnswerAssignment(*executor_, assignment);
  }
};

TEST(PhaseOrderFromProtoTest, ABuildDecodesToCheckedCanonicalStages) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  ASSERT_GE(stages.size(), 2u);
  const v1::PhaseAssignment assignment = BuildAssignment(4, 9, "job9-b2", graph, stages);
  StatusOr<PhaseOrder> order = PhaseOrderFromProto(assignment);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(order->phase_id, 4);
  EXPECT_EQ(order->job_id, 9);
  EXPECT_EQ(order->batch_id, "job9-b2");
  EXPECT_EQ(PhaseName(*order), "build");
  const BuildOrder& build = std::get<BuildOrder>(order->work);
  ASSERT_NE(build.graph, nullptr);
  EXPECT_EQ(graph::SerializeGraph(*build.graph), assignment.build().graph());
  ASSERT_EQ(build.stages.size(), stages.size());
  ASSERT_EQ(build.signatures.size(), stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    Stage canonical = stages[i];
    ASSERT_TRUE(scheduler::ios::CanonicalizeStage(graph, canonical).ok());
    EXPECT_EQ(build.stages[i].groups, canonical.groups) << "stage " << i;
    EXPECT_EQ(build.signatures[i], assignment.build().stages(static_cast<int>(i)).signature());
    // Encoded again, the stage is what the server sent.
    EXPECT_EQ(proto::EncodeStage(build.stages[i], build.signatures[i]).SerializeAsString(),
              testing::SpecOf(graph, canonical).SerializeAsString());
  }
}

TEST(PhaseOrderFromProtoTest, ProfileAndMeasureCarryTheirOptionsAndSchedules) {
  StatusOr<PhaseOrder> profile = PhaseOrderFromProto(ProfileAssignment(5, 2, "b"));
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->batch_id, "b");
  EXPECT_EQ(PhaseName(*profile), "profile");
  const ProfileOptions& options = std::get<ProfileOrder>(profile->work).options;
  EXPECT_EQ(options.warmup, 1);
  EXPECT_EQ(options.min_repeats, 3);
  EXPECT_EQ(options.max_repeats, 3);

  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(6);
  assignment.set_job_id(3);
  v1::MeasureAssignment* measure = assignment.mutable_measure();
  measure->set_graph(graph::SerializeGraph(graph));
  measure->mutable_options()->set_max_seconds(0.5);
  for (const char* kind : {"sequential", "greedy"}) {
    v1::NamedSchedule* named = measure->add_schedules();
    named->set_name(kind);
    named->set_schedule_json(StrCat("{\"", kind, "\": 1}"));
  }
  StatusOr<PhaseOrder> order = PhaseOrderFromProto(assignment);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(order->phase_id, 6);
  EXPECT_EQ(order->job_id, 3);
  EXPECT_EQ(PhaseName(*order), "measure");
  const MeasureOrder& decoded = std::get<MeasureOrder>(order->work);
  ASSERT_NE(decoded.graph, nullptr);
  EXPECT_EQ(decoded.graph->num_nodes(), graph.num_nodes());
  ASSERT_EQ(decoded.schedules.size(), 2u);
  EXPECT_EQ(decoded.schedules[0].name, "sequential");
  EXPECT_EQ(decoded.schedules[0].schedule_json, "{\"sequential\": 1}");
  EXPECT_EQ(decoded.schedules[1].name, "greedy");
  EXPECT_EQ(decoded.options.max_seconds, 0.5);
  EXPECT_EQ(decoded.options.warmup, ProfileOptions().warmup);
}

TEST(PhaseOrderFromProtoTest, BadAssignmentsAreRefusedNamingWhat) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  v1::PhaseAssignment build = BuildAssignment(1, 1, "", graph, GreedyStages(graph));
  StatusOr<PhaseOrder> order = PhaseOrderFromProto(build);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RefusedAssignment(build, order.status()).error, "build: INVALID_ARGUMENT: no batch_id");

  v1::PhaseAssignment empty;
  empty.set_phase_id(4);
  order = PhaseOrderFromProto(empty);
  const PhaseReport refused = RefusedAssignment(empty, order.status());
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.phase_id, 4);
  EXPECT_EQ(refused.error,
            "assignment: INVALID_ARGUMENT: no build, profile or measure in the assignment");

  EXPECT_EQ(RefusedAssignment(ProfileAssignment(2, 1, "b"), absl::InternalError("x")).error,
            "profile: INTERNAL: x");
}

TEST_F(WireConvertTest, BuildsMergeAndConcurrentStagesOverTheWire) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(16, 14, 3);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  std::vector<Stage> stages = {*merge,
                               scheduler::ios::testing::ConcurrentStage({{two.b}, {two.a}})};
  v1::PhaseAssignment build = BuildAssignment(1, 1, "b", two.graph, stages);
  // The merged description is the worker's to compute; the wire has none.
  ASSERT_EQ(build.build().stages(0).strategy(), "merge");
  v1::PhaseResult built = Answer(build);
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(built.phase_id(), 1);
  EXPECT_EQ(built.plans_built(), 2);
  v1::PhaseResult profiled = Answer(ProfileAssignment(2, 1, "b"));
  ASSERT_TRUE(profiled.ok()) << profiled.error();
  ASSERT_EQ(profiled.latencies_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(profiled.latencies(i).signature(), build.build().stages(i).signature());
    EXPECT_EQ(profiled.latencies(i).repeats(), 3);
  }
  EXPECT_NE(profiled.latencies(0).signature(), profiled.latencies(1).signature());
}

TEST_F(WireConvertTest, SignatureMismatchFailsNamingTheStage) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  v1::PhaseAssignment build = BuildAssignment(3, 1, "b", graph, GreedyStages(graph));
  auto* stage = build.mutable_build()->mutable_stages(2);
  stage->set_signature(stage->signature() ^ 1);
  v1::PhaseResult result = Answer(build);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.phase_id(), 3);
  EXPECT_THAT(result.error(), HasSubstr("stage 2: signature mismatch"));
  EXPECT_THAT(result.error(), HasSubstr("build"));
  EXPECT_EQ(result.error().find('\n'), std::string::npos);
  EXPECT_FALSE(executor_->HasBatch("b"));
}

TEST_F(WireConvertTest, InvalidStagesFailWithTheirIndex) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  {
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    build.mutable_build()->mutable_stages(1)->mutable_groups(0)->add_ops(999);
    v1::PhaseResult result = Answer(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 1: group 0: node id 999 out of range"));
  }
  {
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    build.mutable_build()->mutable_stages(0)->set_strategy("parallel");
    v1::PhaseResult result = Answer(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 0: unknown strategy 'parallel'"));
  }
  {
    // Two ops that cannot merge (the first stage of the graph is one conv).
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    v1::StageSpec* spec = build.mutable_build()->mutable_stages(0);
    spec->set_strategy("merge");
    spec->add_groups()->add_ops(stages[1].groups[0][0]);
    v1::PhaseResult result = Answer(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 0: "));
  }
  EXPECT_EQ(executor_->num_batches(), 0);
}

TEST_F(WireConvertTest, MalformedGraphBytesFail) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, GreedyStages(graph));
  build.mutable_build()->set_graph("\x08\xff\xff garbage");
  v1::PhaseResult result = Answer(build);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("build: INVALID_ARGUMENT: graph: "));

  build.mutable_build()->clear_graph();
  result = Answer(build);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("no graph"));

  v1::PhaseAssignment measure;
  measure.set_phase_id(2);
  measure.mutable_measure()->set_graph("not a graph");
  result = Answer(measure);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("measure: "));
}

TEST_F(WireConvertTest, AnEmptyAssignmentFails) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(4);
  v1::PhaseResult result = Answer(assignment);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.phase_id(), 4);
  EXPECT_THAT(result.error(), HasSubstr("no build, profile or measure"));
}

TEST_F(WireConvertTest, MeasuresSchedulesOverTheWire) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(5);
  v1::MeasureAssignment* measure = assignment.mutable_measure();
  measure->set_graph(graph::SerializeGraph(graph));
  *measure->mutable_options() = testing::QuickProfileProto();
  for (const char* kind : {"sequential", "greedy"}) {
    v1::NamedSchedule* named = measure->add_schedules();
    named->set_name(kind);
    named->set_schedule_json(BaselineJson(graph, kind));
  }
  v1::PhaseResult result = Answer(assignment);
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result.schedules_size(), 2);
  EXPECT_EQ(result.schedules(0).name(), "sequential");
  EXPECT_EQ(result.schedules(1).name(), "greedy");
  for (const v1::ScheduleLatency& latency : result.schedules()) {
    EXPECT_GT(latency.median_ms(), 0) << latency.name();
    EXPECT_EQ(latency.repeats(), 3) << latency.name();
  }
  EXPECT_EQ(result.latencies_size(), 0);
}

TEST(PhaseResultToProtoTest, EveryFieldInOrder) {
  PhaseReport report;
  report.phase_id = 8;
  report.ok = true;
  report.plans_built = 2;
  report.stages.push_back(MeasuredStage{0xfeedull, LatencyStats{1.5, 1.25, 2.0, 0.1, 12}});
  report.stages.push_back(MeasuredStage{0x1ull, LatencyStats{0.5, 0.25, 0.75, 0.2, 10}});
  report.schedules.push_back(MeasuredSchedule{"ios", LatencyStats{3.0, 2.5, 3.5, 0.05, 20}});
  const v1::PhaseResult result = PhaseResultToProto(report);
  EXPECT_EQ(result.phase_id(), 8);
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(result.error().empty());
  EXPECT_EQ(result.plans_built(), 2);
  ASSERT_EQ(result.latencies_size(), 2);
  EXPECT_EQ(result.latencies(0).signature(), 0xfeedull);
  EXPECT_EQ(result.latencies(0).median_ms(), 1.5);
  EXPECT_EQ(result.latencies(0).p10_ms(), 1.25);
  EXPECT_EQ(result.latencies(0).p90_ms(), 2.0);
  EXPECT_EQ(result.latencies(0).cv(), 0.1);
  EXPECT_EQ(result.latencies(0).repeats(), 12);
  EXPECT_EQ(result.latencies(1).signature(), 0x1ull);
  ASSERT_EQ(result.schedules_size(), 1);
  EXPECT_EQ(result.schedules(0).name(), "ios");
  EXPECT_EQ(result.schedules(0).median_ms(), 3.0);
  EXPECT_EQ(result.schedules(0).p10_ms(), 2.5);
  EXPECT_EQ(result.schedules(0).p90_ms(), 3.5);
  EXPECT_EQ(result.schedules(0).cv(), 0.05);
  EXPECT_EQ(result.schedules(0).repeats(), 20);

  const v1::WorkerMessage message =
      ResultMessage(FailedReport(9, "profile", absl::NotFoundError("gone")));
  ASSERT_TRUE(message.has_result());
  EXPECT_EQ(message.result().phase_id(), 9);
  EXPECT_FALSE(message.result().ok());
  EXPECT_EQ(message.result().error(), "profile: NOT_FOUND: gone");
}

TEST(WorkerMessagesTest, RegistrationAndHeartbeat) {
  WorkerRegistration registration;
  registration.worker_id = "w1";
  registration.device_key = "sim-v100";
  registration.backend = "sim";
  registration.device_description = "simulated V100";
  registration.version = "1.2.3";
  registration.max_built_batches = PhaseExecutor::kMaxBatches;
  const v1::WorkerMessage hello = RegisterMessage(registration);
  ASSERT_TRUE(hello.has_register_());
  EXPECT_EQ(hello.register_().worker_id(), "w1");
  EXPECT_EQ(hello.register_().device_key(), "sim-v100");
  EXPECT_EQ(hello.register_().backend(), "sim");
  EXPECT_EQ(hello.register_().device_description(), "simulated V100");
  EXPECT_EQ(hello.register_().version(), "1.2.3");
  EXPECT_EQ(hello.register_().max_built_batches(), PhaseExecutor::kMaxBatches);
  EXPECT_FALSE(hello.register_().has_device_floor());  // none declared: none sent

  registration.device_floor.stage_ms = 0.0025;
  registration.device_floor.launch_ms = 0.003;
  registration.device_floor.peak_gflops = 26800;
  registration.device_floor.bandwidth_gbps = 1340;
  registration.device_floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin;
  const v1::WorkerMessage floored = RegisterMessage(registration);
  ASSERT_TRUE(floored.register_().has_device_floor());
  const v1::DeviceFloor& floor = floored.register_().device_floor();
  EXPECT_DOUBLE_EQ(floor.stage_ms(), 0.0025);
  EXPECT_DOUBLE_EQ(floor.launch_ms(), 0.003);
  EXPECT_DOUBLE_EQ(floor.peak_gflops(), 26800);
  EXPECT_DOUBLE_EQ(floor.bandwidth_gbps(), 1340);
  EXPECT_FALSE(floor.issue_adds_to_work());
  EXPECT_EQ(floor.issue_order(), v1::DeviceFloor::ISSUE_ORDER_ROUND_ROBIN);
  EXPECT_FALSE(floor.timed_back_to_back());
  EXPECT_DOUBLE_EQ(floor.contention(), 0);
  EXPECT_FALSE(floored.register_().has_device_floor_v10());
  // Contention goes in the field a server before it does not read: such a
  // server searches with a looser floor, still a valid one.
  registration.device_floor.contention = 0.05;
  const v1::WorkerMessage contended = RegisterMessage(registration);
  ASSERT_TRUE(contended.register_().has_device_floor());
  EXPECT_DOUBLE_EQ(contended.register_().device_floor().contention(), 0.05);
  registration.device_floor.contention = 0;
  // A floor timed back to back, or one with fusable free ops, goes in the
  // field a server from before schema v10 does not read: such a server
  // would take it for one timed from idle that counts every op's kernel.
  registration.device_floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kUnknown;
  registration.device_floor.back_to_back = true;
  registration.device_floor.free_ops = scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable;
  const v1::WorkerMessage timed_hello = RegisterMessage(registration);
  EXPECT_FALSE(timed_hello.register_().has_device_floor());
  ASSERT_TRUE(timed_hello.register_().has_device_floor_v10());
  const v1::DeviceFloor& timed = timed_hello.register_().device_floor_v10();
  EXPECT_TRUE(timed.timed_back_to_back());
  EXPECT_EQ(timed.free_ops(), v1::DeviceFloor::FREE_OPS_VIEWS_AND_FUSABLE);
  EXPECT_DOUBLE_EQ(timed.launch_ms(), 0.003);
  registration.device_floor.back_to_back = false;
  EXPECT_TRUE(RegisterMessage(registration).register_().has_device_floor_v10());  // free ops
  registration.device_floor.free_ops = scheduler::ios::DeviceFloor::FreeOps::kViews;
  registration.device_floor.back_to_back = true;
  EXPECT_TRUE(RegisterMessage(registration).register_().has_device_floor_v10());

  const v1::WorkerMessage beat = HeartbeatMessage(1234567);
  ASSERT_TRUE(beat.has_heartbeat());
  EXPECT_EQ(beat.heartbeat().unix_ms(), 1234567);
}

TEST(ProfileOptionsFromProtoTest, ZeroFieldsMeanDefaults) {
  const ProfileOptions defaults;
  ProfileOptions options = ProfileOptionsFromProto(v1::ProfileOptions());
  EXPECT_EQ(options.warmup, defaults.warmup);
  EXPECT_EQ(options.min_repeats, defaults.min_repeats);
  EXPECT_EQ(options.max_repeats, defaults.max_repeats);
  EXPECT_EQ(options.stable_fraction, defaults.stable_fraction);
  EXPECT_EQ(options.max_seconds, defaults.max_seconds);
  v1::ProfileOptions wire;
  wire.set_warmup(1);
  wire.set_min_repeats(2);
  wire.set_max_repeats(5);
  wire.set_stable_fraction(0.5);
  wire.set_max_seconds(0.25);
  options = ProfileOptionsFromProto(wire);
  EXPECT_EQ(options.warmup, 1);
  EXPECT_EQ(options.min_repeats, 2);
  EXPECT_EQ(options.max_repeats, 5);
  EXPECT_EQ(options.stable_fraction, 0.5);
  EXPECT_EQ(options.max_seconds, 0.25);
}

}  // namespace
}  // namespace iosfarm::worker
