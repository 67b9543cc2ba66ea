#include "server/phase_steps.h"

#include "common/strings.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

PhaseStep ServerPhaseStep(farm::PhaseKind kind, const Status& status,
                          std::optional<JobRunner::Next> next, const JobRow& progress,
                          int64_t batch_size, int64_t stored_stages) {
  PhaseStep step;
  step.end.kind = kind;
  step.end.outcome = status.ok() ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed;
  step.end.error = std::string(status.message());
  const bool update = kind == farm::PhaseKind::kUpdate;
  // A worker's bad answer fails the update phase but is the worker's fault.
  step.end.rejected_answer = update && absl::IsInvalidArgument(status);
  step.message = step.end.error;
  if (!status.ok()) return step;
  if (update) {
    step.message = StrCat("stored ", stored_stages, " measured stages");
    return step;
  }
  switch (next.value_or(JobRunner::Next::kContinue)) {
    case JobRunner::Next::kBuild:
      step.end.enumerated = farm::Enumerated::kBatch;
      step.message = StrCat("enumerated a batch of ", batch_size, " stages to measure");
      break;
    case JobRunner::Next::kMeasure:
      step.end.enumerated = farm::Enumerated::kSearchDone;
      step.message = "search done; measuring the schedules end to end";
      break;
    case JobRunner::Next::kWait:
      step.end.enumerated = farm::Enumerated::kWait;
      step.message = "waiting for stages another job is measuring";
      break;
    case JobRunner::Next::kContinue:
      // The time slice ran out: behind the other jobs' server phases.
      step.end.enumerated = farm::Enumerated::kSliceOver;
      step.message = StrCat("searching: ", progress.blocks_done, " of ", progress.blocks_total,
                            " blocks solved");
      break;
  }
  return step;
}

PhaseStep WorkerPhaseStep(farm::PhaseKind kind, const std::string& worker,
                          const PhaseReport& report, const Status& measure_error) {
  PhaseStep step;
  step.end.kind = kind;
  step.end.worker = worker;
  if (!report.ok) {
    step.end.outcome = farm::PhaseOutcome::kFailed;
    step.message = step.end.error =
        StrCat(farm::PhaseKindName(kind), " on ", worker, " failed: ", report.error);
    return step;
  }
  switch (kind) {
    case farm::PhaseKind::kBuild:
      step.message = StrCat("built ", report.plans_built, " plans on ", worker);
      break;
    case farm::PhaseKind::kProfile:
      step.message = StrCat("profiled ", report.latencies.size(), " stages on ", worker);
      break;
    case farm::PhaseKind::kMeasure:
      if (!measure_error.ok()) {
        step.end.outcome = farm::PhaseOutcome::kFailed;  // the worker's answer: retried
        step.message = step.end.error = std::string(measure_error.message());
      } else {
        step.message = StrCat("measured ", report.schedules.size(), " schedules on ", worker);
      }
      break;
    default:
      step.end.outcome = farm::PhaseOutcome::kFailed;
      step.message = step.end.error =
          StrCat("worker ", worker, " answered a server phase (", farm::PhaseKindName(kind), ")");
  }
  return step;
}

PhaseStep LostWorkerStep(farm::PhaseKind kind, const std::string& worker,
                         const std::string& reason) {
  // Nothing it measured is lost: measurements reach the store in the update
  // phase, which runs on the server. The batch is measured elsewhere.
  PhaseStep step;
  step.end.kind = kind;
  step.end.outcome = farm::PhaseOutcome::kWorkerLost;
  step.end.worker = worker;
  step.message = StrCat("worker ", worker, " lost (", reason, "); re-queued");
  return step;
}

StatusOr<PhaseOrder> MakePhaseOrder(const farm::Assignment& assignment, const BuildRequest* build,
                                    const JobRunner& runner, const std::string& batch_id,
                                    const ProfileSettings& profile,
                                    const ProfileSettings& measure) {
  PhaseOrder order;
  order.phase_id = assignment.phase;
  order.job_id = assignment.job;
  order.batch_id = batch_id;
  order.kind = assignment.kind;
  switch (assignment.kind) {
    case farm::PhaseKind::kBuild:
      if (build == nullptr) {
        return absl::FailedPreconditionError(
            StrCat("job ", assignment.job, ": batch ", assignment.batch, " is not out"));
      }
      order.build = *build;
      break;
    case farm::PhaseKind::kProfile:
      order.profile = profile;
      break;
    case farm::PhaseKind::kMeasure: {
      ASSIGN_OR_RETURN(order.measure, runner.MakeMeasure());
      order.measure.options = measure;
      break;
    }
    default:
      return absl::InvalidArgumentError(StrCat("a server phase (",
                                               farm::PhaseKindName(assignment.kind),
                                               ") was dispatched to a worker"));
  }
  return order;
}

bool CountsAsResume(const JobRow& row) {
  return row.phase == "enumerate" || row.phase == "update";
}

std::optional<std::string> ResumeRefusal(const JobRow& row, int64_t max_resumes) {
  if (!CountsAsResume(row) || row.resumes <= max_resumes) return std::nullopt;
  return StrCat("not resumed: the server stopped ", row.resumes,
                " times without a clean shutdown while this job's search (", row.phase,
                ") ran, with no new measurement stored in between; a server crash during its "
                "search is the likely cause (see the server log). Resubmit it with a smaller "
                "--block-size, or raise the server's --max-resumes");
}

}  // namespace iosfarm::server
