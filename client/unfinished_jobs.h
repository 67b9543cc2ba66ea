// Jobs an earlier `iosfarm tune` left unfinished in the embedded farm's
// database (it was interrupted): the embedded server resumes them when it
// starts, so the next `tune` says so and follows the job of the same model
// instead of submitting a second one (or, with --fresh, cancels it).
#ifndef IOSFARM_CLIENT_UNFINISHED_JOBS_H_
#define IOSFARM_CLIENT_UNFINISHED_JOBS_H_

#include <optional>
#include <string>
#include <vector>

#include "client/farm_client.h"
#include "common/status.h"

namespace iosfarm::client {

struct UnfinishedJobs {
  std::optional<v1::Job> same;  // the oldest job that `request` would repeat
  std::vector<v1::Job> others;  // every other one
};

// Whether `job` tunes what `request` asks for: same model name and device
// key, and the batch and search options `request` sets (0 = any).
bool SameTuning(const v1::Job& job, const v1::SubmitJobRequest& request);

// The queued and running jobs of the farm behind `client`, by id. Errors:
// those of ListJobs.
StatusOr<std::vector<v1::Job>> ListUnfinishedJobs(FarmClient& client);

// `jobs` split by SameTuning (the first that matches is `same`).
UnfinishedJobs SplitBySameTuning(std::vector<v1::Job> jobs, const v1::SubmitJobRequest& request);

// One line about `job` for people: "job 3 (squeezenet, batch 1, device
// local-cpu, 2/8 blocks done, 40 stages profiled)".
std::string DescribeJob(const v1::Job& job);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_UNFINISHED_JOBS_H_
