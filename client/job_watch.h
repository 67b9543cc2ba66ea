// Following running jobs until they end, for `iosfarm watch`, `submit --wait`,
// `retune --wait` and `tune`.
//
// ProgressDisplay draws one progress line per job (client/job_format.h,
// JobProgressText) through ProgressLines (client/progress_line.h): on a
// terminal the lines fit its width and are redrawn in place, and the elapsed
// time of running jobs ticks on its own (Tick; with `tick_thread`, a thread
// calls it every second) between the server's updates. Off a terminal a
// job's line is printed when its state or its blocks done change, or when its
// stages profiled changed and `plain_interval` has passed since its last line;
// never the same line twice.
// Thread-safe: Update, Tick and Finish may come from different threads.
#ifndef IOSFARM_CLIENT_JOB_WATCH_H_
#define IOSFARM_CLIENT_JOB_WATCH_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/command.h"
#include "client/farm_client.h"
#include "client/progress_line.h"
#include "client/ticker.h"
#include "common/status.h"

namespace iosfarm::client {

struct ProgressDisplayOptions {
  bool tty = false;
  int width = 80;  // terminal columns (tty only)
  std::chrono::seconds plain_interval{10};
  bool tick_thread = true;  // tty only: redraw every second on its own
  // The clock of the ticking elapsed time (tests inject a fake).
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& out, ProgressDisplayOptions options);
  ~ProgressDisplay();  // Finish()
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // Shows the job's new snapshot (adds a line for a job not seen yet).
  void Update(const v1::Job& job);
  // Terminal: redraws with the elapsed time of running jobs advanced by the
  // time since their last snapshot. Off a terminal: nothing.
  void Tick();
  // Ends the display (stops the ticking): the last snapshot of every job
  // stays on screen, the cursor on a fresh line.
  void Finish();

 private:
  struct Job {
    v1::Job snapshot;
    std::chrono::steady_clock::time_point received;
    v1::JobState printed_state = v1::JOB_STATE_UNSPECIFIED;
    int32_t printed_blocks = -1;
    int64_t printed_stages = -1;
    std::chrono::steady_clock::time_point printed_at;
  };
  std::string TextLocked(const Job& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressDisplayOptions options_;
  absl::Mutex mu_;
  ProgressLines lines_ ABSL_GUARDED_BY(mu_);
  std::vector<Job> jobs_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  Ticker ticker_;  // last: starts once the rest is built
};

// The display options of a command's stderr (terminal or not, its width).
ProgressDisplayOptions ProgressOptionsFor(const CommandContext& context);

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
