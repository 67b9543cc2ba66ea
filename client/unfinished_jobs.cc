#include "client/unfinished_jobs.h"

#include <algorithm>

#include "common/strings.h"

namespace iosfarm::client {

bool SameTuning(const v1::Job& job, const v1::SubmitJobRequest& request) {
  auto same = [](int64_t asked, int64_t have) { return asked == 0 || asked == have; };
  const v1::SearchOptions& asked = request.options();
  const v1::SearchOptions& have = job.options();
  return job.model_name() == request.model_name() && job.device_key() == request.device_key() &&
         same(request.batch(), job.batch()) && same(asked.r(), have.r()) &&
         same(asked.s(), have.s()) && same(asked.block_size(), have.block_size());
}

StatusOr<std::vector<v1::Job>> ListUnfinishedJobs(FarmClient& client) {
  std::vector<v1::Job> jobs;
  for (const char* state : {"running", "queued"}) {
    v1::ListJobsRequest list;
    list.set_state(state);
    ASSIGN_OR_RETURN(v1::ListJobsResponse response, client.ListJobs(list));
    jobs.insert(jobs.end(), response.jobs().begin(), response.jobs().end());
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const v1::Job& a, const v1::Job& b) { return a.id() < b.id(); });
  return jobs;
}

UnfinishedJobs SplitBySameTuning(std::vector<v1::Job> jobs, const v1::SubmitJobRequest& request) {
  UnfinishedJobs split;
  for (v1::Job& job : jobs) {
    if (!split.same && SameTuning(job, request)) {
      split.same = std::move(job);
    } else {
      split.others.push_back(std::move(job));
    }
  }
  return split;
}

std::string DescribeJob(const v1::Job& job) {
  const v1::JobProgress& p = job.progress();
  std::string text = StrCat("job ", job.id(), " (", job.model_name(), ", batch ",
                            job.batch() > 0 ? std::to_string(job.batch()) : "default",
                            ", device ", job.device_key());
  if (p.blocks_total() > 0) text += StrCat(", ", p.blocks_done(), "/", p.blocks_total(), " blocks done");
  return StrCat(text, ", ", p.stages_profiled(), " stages profiled)");
}

}  // namespace iosfarm::client
