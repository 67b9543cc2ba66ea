// EstimateSearchStages: the stages a job's search is expected to measure,
// known when it is submitted, from what the store knows (SearchHistory):
//
//   - a search like it (same model, batch, r, s and block size) succeeded on
//     its device key: 0 (every stage it asks for is in the latency database);
//   - one succeeded on another key: the stages that search asked for (the
//     same search asks for the same stages; the database holds none of them
//     for this key);
//   - otherwise the model's operators times the stages per operator the
//     store's succeeded searches asked for, or kDefaultStagesPerOp when none
//     did.
//
// The last is a coarse guess (searches differ by three orders of magnitude
// per operator between a chain and a NASNet cell); it orders the waiting
// jobs (scheduler/farm/search_admission.h), and `iosfarm status` shows it
// beside what the job measured so that its error is plain.
#ifndef IOSFARM_SERVER_SEARCH_ESTIMATE_H_
#define IOSFARM_SERVER_SEARCH_ESTIMATE_H_

#include <cstdint>

#include "server/job_rows.h"

namespace iosfarm::server {

// Stages per operator without any history: the geometric mean of what the
// zoo's five models' farm searches profile per operator (1.0 for squeezenet
// to 17 for randwire; sim backend, batch 1, the server's default options;
// docs/farm.md, "Search places").
inline constexpr double kDefaultStagesPerOp = 3.6;

int64_t EstimateSearchStages(int64_t model_ops, const SearchHistory& history);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SEARCH_ESTIMATE_H_
