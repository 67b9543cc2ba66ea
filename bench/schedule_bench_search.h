// schedule_bench's search step: the IOS schedule of one model, searched with
// a backend oracle (every unique stage built and profiled once on the
// device) or loaded from an earlier run's --schedule-dir file.
//
// With --schedule-dir the schedule is saved as DIR/<model>[_<backend>]_b
// <batch>_r<R>_s<S>_bs<B>.json (docs/schedule-format.md; the backend part is
// absent for cpu) with a sidecar .search.json (search report); a later run
// with the same settings loads it (the model digest is checked) and skips
// the search. With a latency database (bench_latency_cache.h) each stage
// already stored for this device is answered from it and each new
// measurement is stored at once. --search-budget-s stops a search still
// measuring after that many seconds.
#ifndef IOSFARM_BENCH_SCHEDULE_BENCH_SEARCH_H_
#define IOSFARM_BENCH_SCHEDULE_BENCH_SEARCH_H_

#include "bench/bench_latency_cache.h"
#include "bench/schedule_bench_flags.h"
#include "bench/schedule_bench_report.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/schedule.h"
#include "worker/backends/backend.h"

namespace iosfarm::bench {

// Searches (or loads) the IOS schedule of `graph` and fills the search
// columns of `row` (search text and seconds, stages measured and cached,
// predicted latencies). `latencies` may be null (no database). Errors name
// the model or the file: a bad saved schedule, the search's own errors,
// DeadlineExceeded ("search budget of S s exceeded ...") past the budget, the
// database's errors.
StatusOr<scheduler::ios::Schedule> SearchOrLoad(const graph::Graph& graph, const ModelSpec& spec,
                                                const Settings& settings,
                                                worker::Backend& backend,
                                                BenchLatencyCache* latencies, Row& row);

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_SCHEDULE_BENCH_SEARCH_H_
