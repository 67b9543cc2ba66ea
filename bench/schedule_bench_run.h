// schedule_bench's work for one model: load it (graph/model_loader.h),
// search or load its IOS schedule (schedule_bench_search.h), build the
// sequential and greedy baselines, optionally check that all three compute
// the same outputs (--verify), then measure them end to end.
//
// Measurement: the sequential, greedy (at most S groups per stage, as
// SearchWithBaselines costs it) and IOS schedules run with RunSchedule,
// round-robin for --rounds rounds (the order rotates each round), each call
// --repeats timed runs after --warmup warm-up runs, so that machine noise
// hits all alike. On the cuda backend (`cuda_graph_rows`) two more rows run
// in the same rotation: the sequential and the IOS schedule each captured as
// one CUDA graph (RunOptions::cuda_graph) and replayed.
#ifndef IOSFARM_BENCH_SCHEDULE_BENCH_RUN_H_
#define IOSFARM_BENCH_SCHEDULE_BENCH_RUN_H_

#include "bench/bench_latency_cache.h"
#include "bench/schedule_bench_flags.h"
#include "bench/schedule_bench_report.h"
#include "common/status.h"
#include "worker/backends/backend.h"

namespace iosfarm::bench {

// Runs `spec` on `backend`; `latencies` may be null. The first error, its
// message starting with the model's name and the step ("squeezenet verify:
// ...", "resnet50 search: ..."), ends the model.
StatusOr<Row> RunModel(const ModelSpec& spec, const Settings& settings, worker::Backend& backend,
                       BenchLatencyCache* latencies, bool cuda_graph_rows);

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_SCHEDULE_BENCH_RUN_H_
