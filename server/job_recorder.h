// JobRecorder: the coordinator's job-table writes (progress, state, phase
// log, resume counts), queued under the coordinator's lock and carried out
// after it is released, so the scheduler lock is never held across SQLite.
//
// Writes are carried out in the order they were queued: callers queue under
// one lock (the coordinator's), so the store sees the jobs' changes in the
// order the coordinator made them, whichever thread flushes. A failed write
// is logged with the job's id and does not stop the ones after it (the job's
// in-memory state stays authoritative; a restart resumes from what was
// stored, as after a crash).
//
// Readers that need the store to reflect every change made so far (a job
// that just ended is read from the store) call Flush first.
//
// Thread-safe. Queue* take a short internal lock; Flush serialises flushers
// and holds no lock of the caller's.
#ifndef IOSFARM_SERVER_JOB_RECORDER_H_
#define IOSFARM_SERVER_JOB_RECORDER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/farm/phase.h"
#include "server/job_store.h"

namespace iosfarm::server {

class JobRecorder {
 public:
  // `store` must outlive the recorder.
  explicit JobRecorder(JobStore* store) : store_(store) {}
  ~JobRecorder() { Flush(); }

  // The progress fields of `row` (JobStore::UpdateJobProgress).
  void QueueProgress(const JobRow& row);
  // JobStore::UpdateJobState.
  void QueueState(int64_t job, JobState state, std::string error, int64_t now_unix_ms);
  // One finished phase of the scheduler's log, with the stages it carried.
  void QueuePhase(const scheduler::farm::PhaseRecord& record, int64_t stages);
  // Adds `delta` to the job's resume count (JobStore::AddResumes); 0 clears it.
  void QueueResumes(int64_t job, int64_t delta);

  // Carries out every write queued before the call, in order. Never call it
  // under the coordinator's lock.
  void Flush();

  // Writes queued and not yet carried out (tests).
  size_t pending();

 private:
  struct Write {
    int64_t job = 0;
    std::string what;  // for the log: "progress", "state", ...
    std::function<Status(JobStore&)> apply;
  };
  void Queue(Write write);

  JobStore* const store_;
  absl::Mutex queue_mu_;
  std::deque<Write> queue_ ABSL_GUARDED_BY(queue_mu_);
  absl::Mutex flush_mu_;  // one flusher at a time, so writes keep their order
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_JOB_RECORDER_H_
