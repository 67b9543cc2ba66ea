// Following running jobs until they end, for `iosfarm watch`, `submit --wait`,
// `retune --wait` and `tune`.
//
// ProgressDisplay draws one progress line per job (client/job_format.h,
// ProgressLine). On a terminal the lines are redrawn in place (one job: "\r";
// several: the cursor moves up over the block). Otherwise (a pipe, a log file)
// it prints plain lines: a job's line is printed when its state or its blocks
// done change, or when `plain_interval` has passed since its last line.
// Thread-compatible: one thread draws.
#ifndef IOSFARM_CLIENT_JOB_WATCH_H_
#define IOSFARM_CLIENT_JOB_WATCH_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "client/farm_client.h"
#include "common/status.h"

namespace iosfarm::client {

class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& out, bool tty,
                  std::chrono::seconds plain_interval = std::chrono::seconds(10));

  // Shows the job's new snapshot (adds a line for a job not seen yet).
  void Update(const v1::Job& job);
  // Ends the display: the last snapshot of every job stays on screen, the
  // cursor on a fresh line.
  void Finish();

 private:
  struct Line {
    int64_t job_id = 0;
    std::string text;
    v1::JobState printed_state = v1::JOB_STATE_UNSPECIFIED;
    int32_t printed_blocks = -1;
    std::chrono::steady_clock::time_point printed_at;
  };
  void Redraw();

  std::ostream& out_;
  const bool tty_;
  const std::chrono::seconds plain_interval_;
  std::vector<Line> lines_;
  size_t drawn_lines_ = 0;  // tty, several jobs: lines currently on screen
  size_t drawn_width_ = 0;  // tty, one job: length of the line on screen
  bool finished_ = false;
};

// Streams job `job_id` into `display` until it ends; returns its final
// snapshot (whatever the state).
StatusOr<v1::Job> WatchJobUntilDone(FarmClient& client, int64_t job_id,
                                    ProgressDisplay* display);

// Polls `job_ids` (ListJobs by `retune_batch` when given, else GetJob each)
// every `interval` until all have ended; returns their final snapshots in the
// order of `job_ids`.
StatusOr<std::vector<v1::Job>> WatchJobsUntilDone(
    FarmClient& client, const std::vector<int64_t>& job_ids, const std::string& retune_batch,
    ProgressDisplay* display, std::chrono::milliseconds interval = std::chrono::seconds(1));

// The outcome of a finished job as a Status: OK when it succeeded, else an
// error naming the job, its state and its error message.
Status JobOutcome(const v1::Job& job);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_JOB_WATCH_H_
