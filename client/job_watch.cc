#include "client/job_watch.h"

#include <algorithm>
#include <map>
#include <thread>

#include "client/job_format.h"
#include "common/strings.h"

namespace iosfarm::client {

ProgressDisplay::ProgressDisplay(std::ostream& out, bool tty, std::chrono::seconds plain_interval)
    : out_(out), tty_(tty), plain_interval_(plain_interval) {}

void ProgressDisplay::Update(const v1::Job& job) {
  auto it = std::find_if(lines_.begin(), lines_.end(),
                         [&](const Line& line) { return line.job_id == job.id(); });
  if (it == lines_.end()) {
    Line line;
    line.job_id = job.id();
    lines_.push_back(std::move(line));
    it = std::prev(lines_.end());
  }
  it->text = ProgressLine(job);
  if (tty_) {
    Redraw();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool changed = it->printed_state != job.state() ||
                       it->printed_blocks != job.progress().blocks_done();
  if (changed || now - it->printed_at >= plain_interval_) {
    out_ << it->text << "\n" << std::flush;
    it->printed_state = job.state();
    it->printed_blocks = job.progress().blocks_done();
    it->printed_at = now;
  }
}

void ProgressDisplay::Redraw() {
  if (lines_.size() == 1 && drawn_lines_ == 0) {
    const std::string& text = lines_[0].text;
    out_ << "\r" << text;
    if (drawn_width_ > text.size()) out_ << std::string(drawn_width_ - text.size(), ' ');
    drawn_width_ = text.size();
    out_ << std::flush;
    return;
  }
  if (drawn_width_ > 0) {  // switching from the one-line form: end that line
    out_ << "\r\033[K";
    drawn_width_ = 0;
  }
  if (drawn_lines_ > 0) out_ << "\033[" << drawn_lines_ << "A\r";
  for (const Line& line : lines_) out_ << "\033[2K" << line.text << "\n";
  drawn_lines_ = lines_.size();
  out_ << std::flush;
}

void ProgressDisplay::Finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && drawn_width_ > 0) out_ << "\n" << std::flush;
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
