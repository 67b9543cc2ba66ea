// JobLifecycle: what a farm job does after each of its phases ends — the one
// chain of phases for the server (FarmCoordinator) and the simulation
// (farm_simulation.h), as a pure state machine. It runs nothing, reads no
// clock and stores nothing; the caller acts on the step it returns.
//
//            +------------- update <--ok-- profile (pinned to the build's worker)
//            v                                 ^
//   start -> enumerate --batch--> build --ok---+
//            |  ^  ^
//            |  |  +--slice over (time slice used up: queue again)
//            |  +-----wait (park until another job stores what it needs)
//            +--search done--> measure --ok--> done
//
// Failures. A worker phase (build, profile, measure) that fails, or an update
// that rejects the worker's answer, costs an attempt: the batch is built
// again on any worker of the key (or the measure runs again); at
// max_attempts the job fails, naming the last error. A lost worker re-queues
// the same way without costing an attempt (it was not the job's fault). Any
// other failure of a server phase (enumerate, update) fails the job.
//
// Thread safety: none; one owner per job.
#ifndef IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_
#define IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_

#include <string>

#include "scheduler/farm/phase.h"

namespace iosfarm::scheduler::farm {

// How an enumerate phase that ended ok left the search.
enum class Enumerated {
  kBatch,       // a batch of stages to measure
  kWait,        // every remaining unknown is being measured by another job
  kSearchDone,  // nothing left to measure: the schedules are ready
  kSliceOver,   // its time slice ran out first: enumerate again later
};

// A phase of the job ended.
struct PhaseEnd {
  PhaseKind kind = PhaseKind::kEnumerate;
  PhaseOutcome outcome = PhaseOutcome::kOk;  // kOk, kFailed or kWorkerLost
  std::string worker;                         // that ran it (worker phases)
  Enumerated enumerated = Enumerated::kBatch; // enumerate, when kOk
  // An update that failed because the worker's answer was unusable (the
  // worker's fault, retried) rather than for a server reason (fatal).
  bool rejected_answer = false;
  std::string error;  // when not kOk
};

// What the caller does next.
struct LifecycleStep {
  enum class Action {
    kEnqueue,  // queue `next`
    kPark,     // wait; call Woken() when another job stored measurements
    kDone,     // the job succeeded (its measure ended ok)
    kFail,     // the job failed with `error`
  };
  Action action = Action::kEnqueue;
  PhaseRequest next;   // kEnqueue
  std::string error;   // kFail
  bool retry = false;  // kEnqueue after a failure that cost an attempt
};

// "enqueue enumerate", "enqueue profile@w1", "park", "done", "fail: ...".
std::string DescribeStep(const LifecycleStep& step);

class JobLifecycle {
 public:
  // max_attempts < 1 is taken as 1.
  explicit JobLifecycle(int max_attempts);

  // The first phase: enumerate.
  LifecycleStep Start();
  // A parked job was woken: enumerate again.
  LifecycleStep Woken();
  // The job's phase ended (phases end in the order they were queued; a
  // phase that was cancelled with its job is not reported).
  LifecycleStep Next(const PhaseEnd& end);

  int attempts() const { return attempts_; }
  // An enumerated batch is waiting for its latencies (built, profiled or
  // updated next); a lost or failed worker phase rebuilds it.
  bool batch_pending() const { return batch_pending_; }
  // The search is done and the measure is owed.
  bool measuring() const { return measuring_; }

 private:
  LifecycleStep Enqueue(PhaseKind kind, std::string pinned_worker = "");
  // A worker phase must run again: rebuild the batch, or measure again.
  LifecycleStep Requeue();
  LifecycleStep Retry(const std::string& error);

  int max_attempts_;
  int attempts_ = 0;
  bool batch_pending_ = false;
  bool measuring_ = false;
};

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_
