#include "client/job_watch.h"

#include <algorithm>
#include <map>
#include <thread>

#include "client/job_format.h"
#include "common/strings.h"

namespace iosfarm::client {

ProgressDisplay::ProgressDisplay(std::ostream& out, ProgressDisplayOptions options)
    : options_(std::move(options)),
      lines_(out, options_.tty, options_.width),
      ticker_(options_.tty && options_.tick_thread, absl::Seconds(1), [this] { Tick(); }) {}

ProgressDisplay::~ProgressDisplay() { Finish(); }

std::string ProgressDisplay::TextLocked(const Job& job) const {
  double ticked_s = 0;
  if (options_.tty && job.snapshot.state() == v1::RUNNING) {
    ticked_s = std::chrono::duration<double>(options_.now() - job.received).count();
  }
  return JobProgressText(job.snapshot, ticked_s);
}

void ProgressDisplay::Update(const v1::Job& snapshot) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(jobs_.begin(), jobs_.end(),
                         [&](const Job& job) { return job.snapshot.id() == snapshot.id(); });
  if (it == jobs_.end()) it = jobs_.insert(jobs_.end(), Job{});
  it->snapshot = snapshot;
  it->received = options_.now();
  const v1::JobProgress& p = snapshot.progress();
  bool significant = it->printed_state != snapshot.state() ||
                     it->printed_blocks != p.blocks_done();
  if (!significant && it->printed_stages != p.stages_profiled()) {
    significant = it->received - it->printed_at >= options_.plain_interval;
  }
  if (significant) {
    it->printed_state = snapshot.state();
    it->printed_blocks = p.blocks_done();
    it->printed_stages = p.stages_profiled();
    it->printed_at = it->received;
  }
  lines_.Set(static_cast<size_t>(it - jobs_.begin()), TextLocked(*it), significant);
}

void ProgressDisplay::Tick() {
  absl::MutexLock lock(&mu_);
  if (finished_ || !options_.tty) return;
  for (size_t i = 0; i < jobs_.size(); ++i) lines_.Set(i, TextLocked(jobs_[i]));
}

void ProgressDisplay::Finish() {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    lines_.Finish();
  }
  ticker_.Stop();
}

ProgressDisplayOptions ProgressOptionsFor(const CommandContext& context) {
  ProgressDisplayOptions options;
  options.tty = context.err_is_tty;
  options.width = context.err_width;
  return options;
}

StatusOr<v1::Job> WatchJobUntilDone(FarmClient& client, int64_t job_id,
                                    ProgressDisplay* display) {
  return client.WatchJob(job_id, [display](const v1::JobEvent& event) {
    if (display != nullptr) display->Update(event.job());
  });
}

StatusOr<std::vector<v1::Job>> WatchJobsUntilDone(FarmClient& client,
                                                  const std::vector<int64_t>& job_ids,
                                                  const std::string& retune_batch,
                                                  ProgressDisplay* display,
                                                  std::chrono::milliseconds interval) {
  std::map<int64_t, v1::Job> latest;
  while (true) {
    std::map<int64_t, v1::Job> polled;
    if (!retune_batch.empty()) {
      v1::ListJobsRequest request;
      request.set_retune_batch(retune_batch);
      request.set_limit(static_cast<int32_t>(job_ids.size()));
      ASSIGN_OR_RETURN(v1::ListJobsResponse response, client.ListJobs(request));
      for (const v1::Job& job : response.jobs()) polled[job.id()] = job;
    }
    for (int64_t id : job_ids) {
      if (polled.count(id) > 0) continue;
      if (auto it = latest.find(id); it != latest.end() && IsFinal(it->second.state())) continue;
      ASSIGN_OR_RETURN(polled[id], client.GetJob(id));
    }
    for (auto& [id, job] : polled) latest[id] = std::move(job);
    bool all_done = true;
    for (int64_t id : job_ids) {
      const v1::Job& job = latest[id];
      if (display != nullptr) display->Update(job);
      all_done = all_done && IsFinal(job.state());
    }
    if (all_done) break;
    std::this_thread::sleep_for(interval);
  }
  std::vector<v1::Job> jobs;
  for (int64_t id : job_ids) jobs.push_back(latest[id]);
  return jobs;
}

Status JobOutcome(const v1::Job& job) {
  switch (job.state()) {
    case v1::SUCCEEDED:
      return absl::OkStatus();
    case v1::CANCELLED:
      return absl::CancelledError(StrCat("job ", job.id(), " was cancelled",
                                         job.error().empty() ? "" : ": ", job.error()));
    case v1::FAILED:
      return absl::AbortedError(StrCat("job ", job.id(), " failed",
                                       job.error().empty() ? "" : ": ", job.error()));
    default:
      return absl::InternalError(StrCat("job ", job.id(), " has not ended (",
                                        JobStateName(job.state()), ")"));
  }
}

}  // namespace iosfarm::client
