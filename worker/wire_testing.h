// Wire forms of worker_testing.h's orders for the tests that exercise the
// stream or its conversions (header-only, tests only): assignments as the
// server encodes them (proto/stage_codec.h), and the answer the daemon gives.
#ifndef IOSFARM_WORKER_WIRE_TESTING_H_
#define IOSFARM_WORKER_WIRE_TESTING_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/serialize.h"
#include "gtest/gtest.h"
#include "iosfarm/v1/farm.pb.h"
#include "proto/stage_codec.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/phase_executor.h"
#include "worker/wire_convert.h"
#include "worker/worker_testing.h"

namespace iosfarm::worker::testing {

// `stage` on the wire, with the signature the server computes.
inline v1::StageSpec SpecOf(const graph::Graph& graph, const scheduler::ios::Stage& stage) {
  auto signature = scheduler::ios::StageSignature(graph, stage);
  EXPECT_TRUE(signature.ok()) << signature.status();
  return proto::EncodeStage(stage, signature.ok() ? *signature : 0);
}

inline v1::PhaseAssignment BuildAssignment(int64_t phase_id, int64_t job_id,
                                           const std::string& batch_id,
                                           const graph::Graph& graph,
                                           const std::vector<scheduler::ios::Stage>& stages) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(phase_id);
  assignment.set_job_id(job_id);
  assignment.set_batch_id(batch_id);
  v1::BuildAssignment* build = assignment.mutable_build();
  build->set_graph(graph::SerializeGraph(graph));
  for (const auto& stage : stages) *build->add_stages() = SpecOf(graph, stage);
  return assignment;
}

// Quick profiling on the wire: 1 warm-up, 3 timed runs.
inline v1::ProfileOptions QuickProfileProto() {
  v1::ProfileOptions options;
  options.set_warmup(1);
  options.set_min_repeats(3);
  options.set_max_repeats(3);
  return options;
}

inline v1::PhaseAssignment ProfileAssignment(int64_t phase_id, int64_t job_id,
                                             const std::string& batch_id) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(phase_id);
  assignment.set_job_id(job_id);
  assignment.set_batch_id(batch_id);
  *assignment.mutable_profile()->mutable_options() = QuickProfileProto();
  return assignment;
}

// What the daemon answers to `assignment`, on the calling thread: the
// executor's report, or the refusal of an assignment that does not decode.
inline v1::PhaseResult AnswerAssignment(PhaseExecutor& executor,
                                        const v1::PhaseAssignment& assignment) {
  StatusOr<PhaseOrder> order = PhaseOrderFromProto(assignment);
  if (!order.ok()) return PhaseResultToProto(RefusedAssignment(assignment, order.status()));
  return PhaseResultToProto(executor.Execute(*order));
}

}  // namespace iosfarm::worker::testing

#endif  // IOSFARM_WORKER_WIRE_TESTING_H_
