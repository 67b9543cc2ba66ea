// What a finished phase means for its job, and what a worker phase is told:
// pure functions between the coordinator's events and JobLifecycle. Each
// turns a phase's outcome into the lifecycle's PhaseEnd plus the one-line
// progress message the job's watchers see. No locks, no I/O: the
// coordinator calls them under its lock; tests call them directly.
#ifndef IOSFARM_SERVER_PHASE_STEPS_H_
#define IOSFARM_SERVER_PHASE_STEPS_H_

#include <optional>
#include <string>

#include "common/status.h"
#include "scheduler/farm/job_lifecycle.h"
#include "scheduler/farm/phase.h"
#include "server/job_rows.h"
#include "server/job_runner.h"
#include "server/worker_protocol.h"

namespace iosfarm::server {

// A phase's end and the job's progress line.
struct PhaseStep {
  scheduler::farm::PhaseEnd end;
  std::string message;
};

// A server phase (enumerate or update) ended with `status`; an ok enumerate
// says what it found in `next`. `progress` holds the runner's progress
// fields (JobRunner::FillProgress) after the phase, `batch_size` its batch.
// An update refused with InvalidArgument is the worker's bad answer
// (rejected_answer: retried elsewhere); any other failure is the server's.
PhaseStep ServerPhaseStep(scheduler::farm::PhaseKind kind, const Status& status,
                          std::optional<JobRunner::Next> next, const JobRow& progress,
                          int64_t batch_size, int64_t stored_stages);

// A worker phase's report from `worker`. `measure_error`: for an ok measure,
// why its result was refused (the worker's answer did not fit the search:
// retried) or OK when it was stored.
PhaseStep WorkerPhaseStep(scheduler::farm::PhaseKind kind, const std::string& worker,
                          const PhaseReport& report, const Status& measure_error);

// A worker lost while it ran the job's `kind` phase, or held it pinned:
// re-queued.
PhaseStep LostWorkerStep(scheduler::farm::PhaseKind kind, const std::string& worker,
                         const std::string& reason);

// The order for a worker phase of `assignment`'s job: its batch's `build`
// (build), the profiling settings (profile) or the runner's schedules
// (measure). batch_id names the job's batch on the worker; InvalidArgument
// for a server phase, FailedPrecondition for a build without its batch or a
// measure before the search is done.
StatusOr<PhaseOrder> MakePhaseOrder(const scheduler::farm::Assignment& assignment,
                                    const BuildRequest* build, const JobRunner& runner,
                                    const std::string& batch_id, const ProfileSettings& profile,
                                    const ProfileSettings& measure);

// The crash-loop guard (FarmCoordinator::Resume): the error a job fails with
// when a restart found it in a server phase more than `max_resumes` times
// without progress, or nullopt when it resumes.
std::optional<std::string> ResumeRefusal(const JobRow& row, int64_t max_resumes);
// Whether a restart that finds the job in this phase counts as a resume.
bool CountsAsResume(const JobRow& row);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_PHASE_STEPS_H_
