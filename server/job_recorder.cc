#include "server/job_recorder.h"

#include <utility>

#include "common/strings.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

void JobRecorder::Queue(Write write) {
  absl::MutexLock lock(&queue_mu_);
  queue_.push_back(std::move(write));
}

void JobRecorder::QueueProgress(const JobRow& row) {
  Queue({row.id, "progress", [row](JobStore& store) { return store.UpdateJobProgress(row); }});
}

void JobRecorder::QueueState(int64_t job, JobState state, std::string error, int64_t now_unix_ms) {
  Queue({job, StrCat("state ", JobStateName(state)),
         [job, state, error = std::move(error), now_unix_ms](JobStore& store) {
           return store.UpdateJobState(job, state, error, now_unix_ms);
         }});
}

void JobRecorder::QueuePhase(const farm::PhaseRecord& record, int64_t stages) {
  PhaseLogRow row;
  row.job_id = record.job;
  row.phase = std::string(farm::PhaseKindName(record.kind));
  row.resource = record.resource;
  row.worker = record.worker;
  row.outcome = std::string(farm::PhaseOutcomeName(record.outcome));
  row.queued_s = record.queued_s;
  row.start_s = record.start_s;
  row.end_s = record.end_s;
  row.stages = stages;
  row.batch = record.batch;
  Queue({record.job, "phase log", [row = std::move(row)](JobStore& store) {
           return store.AppendPhase(row).status();
         }});
}

void JobRecorder::QueueResumes(int64_t job, int64_t delta) {
  Queue({job, "resume count", [job, delta](JobStore& store) {
           return delta == 0 ? store.ClearResumes(job) : store.AddResumes(job, delta).status();
         }});
}

void JobRecorder::Flush() {
  absl::MutexLock flushing(&flush_mu_);
  while (true) {
    std::deque<Write> batch;
    {
      absl::MutexLock lock(&queue_mu_);
      if (queue_.empty()) return;
      batch.swap(queue_);
    }
    for (Write& write : batch) {
      if (Status status = write.apply(*store_); !status.ok()) {
        spdlog::error("job {}: cannot store its {}: {}", write.job, write.what,
                      ToStd(status.message()));
      }
    }
  }
}

size_t JobRecorder::pending() {
  absl::MutexLock lock(&queue_mu_);
  return queue_.size();
}

}  // namespace iosfarm::server
