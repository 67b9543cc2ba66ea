#include "scheduler/farm/job_lifecycle.h"

#include <algorithm>
#include <utility>

#include "common/strings.h"

namespace iosfarm::scheduler::farm {

std::string DescribeStep(const LifecycleStep& step) {
  switch (step.action) {
    case LifecycleStep::Action::kEnqueue: {
      std::string out = "enqueue ";
      for (size_t i = 0; i < step.enqueue.size(); ++i) {
        const PhaseRequest& next = step.enqueue[i];
        out += StrCat(i ? " + " : "", PhaseKindName(next.kind),
                      next.pinned_worker.empty() ? "" : "@", next.pinned_worker);
      }
      if (step.retry) out += " (retry)";
      return out;
    }
    case LifecycleStep::Action::kWait:
      return "wait";
    case LifecycleStep::Action::kPark:
      return "park";
    case LifecycleStep::Action::kYield:
      return "yield";
    case LifecycleStep::Action::kDone:
      return "done";
    case LifecycleStep::Action::kFail:
      return StrCat("fail: ", step.error);
  }
  return "unknown";
}

JobLifecycle::JobLifecycle(int max_attempts, int max_batches, int attempts)
    : max_attempts_(std::max(1, max_attempts)),
      max_batches_(std::max(1, max_batches)),
      attempts_(std::max(0, attempts)) {}

PhaseRequest JobLifecycle::Request(PhaseKind kind, int64_t batch, std::string pinned) {
  PhaseRequest request;
  request.kind = kind;
  request.batch = batch;
  request.pinned_worker = std::move(pinned);
  return request;
}

LifecycleStep JobLifecycle::Stop(LifecycleStep::Action action, std::string error) {
  LifecycleStep step;
  step.action = action;
  step.error = std::move(error);
  return step;
}

int JobLifecycle::batches_on_workers() const {
  int count = 0;
  for (const auto& [id, kind] : batches_) {
    count += kind == PhaseKind::kBuild || kind == PhaseKind::kProfile;
  }
  return count;
}

void JobLifecycle::NextServerPhase(LifecycleStep& step) {
  if (server_phase_ || measuring_) return;
  // Keep the workers fed first: hand out a batch while fewer than P are on
  // workers (and fewer than 2P are out in all, so that updates keep up; P = 1
  // is the serial chain: one batch out).
  const int most_out = max_batches_ == 1 ? 1 : 2 * max_batches_;
  const bool hand_out = may_hand_out_ && !yielding_ && batches_on_workers() < max_batches_ &&
                        batches_out() < most_out;
  if (!hand_out && !updates_due_.empty()) {
    const int64_t batch = updates_due_.front();
    updates_due_.pop_front();
    batches_[batch] = PhaseKind::kUpdate;
    step.enqueue.push_back(Request(PhaseKind::kUpdate, batch));
    server_phase_ = true;
  } else if (hand_out) {
    step.enqueue.push_back(Request(PhaseKind::kEnumerate));
    server_phase_ = true;
  }
}

LifecycleStep JobLifecycle::Settle(LifecycleStep step) const {
  if (!step.enqueue.empty()) {
    step.action = LifecycleStep::Action::kEnqueue;
    return step;
  }
  if (!batches_.empty() || server_phase_) {
    step.action = LifecycleStep::Action::kWait;
  } else {
    step.action = yielding_ ? LifecycleStep::Action::kYield : LifecycleStep::Action::kPark;
  }
  return step;
}

LifecycleStep JobLifecycle::Start() {
  yielding_ = false;
  return Woken();
}

LifecycleStep JobLifecycle::Woken() {
  LifecycleStep step;
  may_hand_out_ = true;
  NextServerPhase(step);
  return Settle(std::move(step));
}

LifecycleStep JobLifecycle::Yield() {
  if (measuring_) return LifecycleStep{LifecycleStep::Action::kWait, {}, "", false};
  yielding_ = true;
  return Settle(LifecycleStep{});
}

LifecycleStep JobLifecycle::Requeue(PhaseKind kind, int64_t batch) {
  LifecycleStep step;
  if (kind == PhaseKind::kMeasure) {
    step.enqueue.push_back(Request(PhaseKind::kMeasure));
  } else {
    // A batch still waiting for its latencies is built again (on any
    // worker of the key).
    batches_[batch] = PhaseKind::kBuild;
    step.enqueue.push_back(Request(PhaseKind::kBuild, batch));
  }
  return Settle(std::move(step));
}

LifecycleStep JobLifecycle::Retry(PhaseKind kind, int64_t batch, const std::string& error) {
  ++attempts_;
  if (attempts_ >= max_attempts_) {
    return Stop(LifecycleStep::Action::kFail,
                StrCat("gave up after ", attempts_, " failed worker phases; last: ", error));
  }
  LifecycleStep step = Requeue(kind, batch);
  step.retry = true;
  return step;
}

LifecycleStep JobLifecycle::Next(const PhaseEnd& end) {
  const bool server = ResourceClassOf(end.kind) == ResourceClass::kServerCpu;
  if (server) server_phase_ = false;
  if (end.outcome != PhaseOutcome::kOk && server &&
      !(end.kind == PhaseKind::kUpdate && end.rejected_answer)) {
    return Stop(LifecycleStep::Action::kFail,
                end.error.empty() ? StrCat(PhaseKindName(end.kind), " failed") : end.error);
  }
  int64_t batch = end.batch;
  const bool of_batch = end.kind == PhaseKind::kBuild || end.kind == PhaseKind::kProfile ||
                        end.kind == PhaseKind::kUpdate;
  if (of_batch) {
    if (batch == 0 && batches_.size() == 1) batch = batches_.begin()->first;
    if (batches_.count(batch) == 0) {
      return Stop(LifecycleStep::Action::kFail,
                  StrCat(PhaseKindName(end.kind), " of batch ", end.batch, ", which is not out (",
                         batches_.size(), " batches are)"));
    }
  }
  if (end.outcome == PhaseOutcome::kWorkerLost && !server) return Requeue(end.kind, batch);
  if (end.outcome != PhaseOutcome::kOk) {  // a worker's fault: retried
    LifecycleStep step = Retry(end.kind, batch, end.error);
    if (step.action == LifecycleStep::Action::kFail) return step;
    NextServerPhase(step);  // the server is free again after a rejected update
    return Settle(std::move(step));
  }
  LifecycleStep step;
  switch (end.kind) {
    case PhaseKind::kEnumerate:
      switch (end.enumerated) {
        case Enumerated::kBatch: {
          const int64_t id = next_batch_++;
          batches_[id] = PhaseKind::kBuild;
          step.enqueue.push_back(Request(PhaseKind::kBuild, id));
          may_hand_out_ = true;
          break;
        }
        case Enumerated::kWait:
          may_hand_out_ = false;  // until an update lands (or Woken)
          break;
        case Enumerated::kSearchDone:
          if (!batches_.empty()) {
            return Stop(LifecycleStep::Action::kFail,
                        StrCat("the search ended with ", batches_.size(), " batches still out"));
          }
          measuring_ = true;
          step.enqueue.push_back(Request(PhaseKind::kMeasure));
          return Settle(std::move(step));
        case Enumerated::kSliceOver:
          break;  // NextServerPhase enumerates again
      }
      break;
    case PhaseKind::kBuild:
      batches_[batch] = PhaseKind::kProfile;
      step.enqueue.push_back(Request(PhaseKind::kProfile, batch, end.worker));
      return Settle(std::move(step));
    case PhaseKind::kProfile:
      batches_[batch] = PhaseKind::kUpdate;
      updates_due_.push_back(batch);
      break;
    case PhaseKind::kUpdate:
      batches_.erase(batch);
      may_hand_out_ = true;
      break;
    case PhaseKind::kMeasure:
      return Stop(LifecycleStep::Action::kDone);
  }
  NextServerPhase(step);
  return Settle(std::move(step));
}

}  // namespace iosfarm::scheduler::farm
