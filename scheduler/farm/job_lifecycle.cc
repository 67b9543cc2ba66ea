#include "scheduler/farm/job_lifecycle.h"

#include <algorithm>
#include <utility>

#include "common/strings.h"

namespace iosfarm::scheduler::farm {

std::string DescribeStep(const LifecycleStep& step) {
  switch (step.action) {
    case LifecycleStep::Action::kEnqueue:
      return StrCat("enqueue ", PhaseKindName(step.next.kind),
                    step.next.pinned_worker.empty() ? "" : "@", step.next.pinned_worker,
                    step.retry ? " (retry)" : "");
    case LifecycleStep::Action::kPark:
      return "park";
    case LifecycleStep::Action::kDone:
      return "done";
    case LifecycleStep::Action::kFail:
      return StrCat("fail: ", step.error);
  }
  return "unknown";
}

namespace {

LifecycleStep Stop(LifecycleStep::Action action, std::string error = "") {
  LifecycleStep step;
  step.action = action;
  step.error = std::move(error);
  return step;
}

}  // namespace

JobLifecycle::JobLifecycle(int max_attempts) : max_attempts_(std::max(1, max_attempts)) {}

LifecycleStep JobLifecycle::Enqueue(PhaseKind kind, std::string pinned_worker) {
  LifecycleStep step;
  step.action = LifecycleStep::Action::kEnqueue;
  step.next.kind = kind;
  step.next.pinned_worker = std::move(pinned_worker);
  return step;
}

LifecycleStep JobLifecycle::Start() { return Enqueue(PhaseKind::kEnumerate); }

LifecycleStep JobLifecycle::Woken() { return Enqueue(PhaseKind::kEnumerate); }

LifecycleStep JobLifecycle::Requeue() {
  // A batch still waiting for its latencies is built again (on any worker of
  // the key); with no batch left only the measure is owed.
  return Enqueue(measuring_ && !batch_pending_ ? PhaseKind::kMeasure : PhaseKind::kBuild);
}

LifecycleStep JobLifecycle::Retry(const std::string& error) {
  ++attempts_;
  if (attempts_ >= max_attempts_) {
    return Stop(LifecycleStep::Action::kFail,
                StrCat("gave up after ", attempts_, " failed worker phases; last: ", error));
  }
  LifecycleStep step = Requeue();
  step.retry = true;
  return step;
}

LifecycleStep JobLifecycle::Next(const PhaseEnd& end) {
  const bool worker_phase = ResourceClassOf(end.kind) != ResourceClass::kServerCpu;
  if (end.outcome == PhaseOutcome::kWorkerLost && worker_phase) return Requeue();
  if (end.outcome != PhaseOutcome::kOk) {
    if (worker_phase || (end.kind == PhaseKind::kUpdate && end.rejected_answer)) {
      return Retry(end.error);
    }
    return Stop(LifecycleStep::Action::kFail,
                end.error.empty() ? StrCat(PhaseKindName(end.kind), " failed") : end.error);
  }
  switch (end.kind) {
    case PhaseKind::kEnumerate:
      switch (end.enumerated) {
        case Enumerated::kBatch:
          batch_pending_ = true;
          return Enqueue(PhaseKind::kBuild);
        case Enumerated::kWait:
          return Stop(LifecycleStep::Action::kPark);
        case Enumerated::kSearchDone:
          measuring_ = true;
          return Enqueue(PhaseKind::kMeasure);
        case Enumerated::kSliceOver:
          return Enqueue(PhaseKind::kEnumerate);
      }
      break;
    case PhaseKind::kBuild:
      return Enqueue(PhaseKind::kProfile, end.worker);
    case PhaseKind::kProfile:
      return Enqueue(PhaseKind::kUpdate);
    case PhaseKind::kUpdate:
      batch_pending_ = false;
      return Enqueue(PhaseKind::kEnumerate);
    case PhaseKind::kMeasure:
      return Stop(LifecycleStep::Action::kDone);
  }
  return Stop(LifecycleStep::Action::kFail, "unknown phase");
}

}  // namespace iosfarm::scheduler::farm
