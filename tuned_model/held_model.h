// The model and schedules a decoded tuned model file holds, opened over the
// graph importer: what `iosfarm tune --save` checks before it writes a file,
// and what the runtime's Session and `iosfarm run` open.
#ifndef IOSFARM_TUNED_MODEL_HELD_MODEL_H_
#define IOSFARM_TUNED_MODEL_HELD_MODEL_H_

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "graph/graph.h"
#include "iosfarm/v1/tuned_model.pb.h"
#include "scheduler/ios/schedule_json.h"

namespace iosfarm::tuned_model {

// The graph of the model `model` holds (its ONNX bytes or zoo model), at
// `batch`, named as when it was tuned (the schedules' model digests cover
// the name). Errors: the importer's, naming the model.
StatusOr<graph::Graph> LoadHeldModel(const v1::TunedModel& model, int64_t batch);

// The schedule `model` holds for `batch`, checked against `graph` (the held
// model at that batch). `file` names the file in messages. NotFound
// "tuned model file '<file>' holds batches 1, 8; none for batch 4" (and the
// `iosfarm tune` command that adds it) when it holds none; FailedPrecondition naming the batch when
// the schedule does not fit the graph (a file edited, or written by a version whose stages differ).
StatusOr<scheduler::ios::ParsedSchedule> HeldSchedule(const v1::TunedModel& model,
                                                      std::string_view file,
                                                      const graph::Graph& graph, int64_t batch);

}  // namespace iosfarm::tuned_model

#endif  // IOSFARM_TUNED_MODEL_HELD_MODEL_H_
