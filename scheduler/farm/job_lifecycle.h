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
// Parallel batches. With max_batches P > 1 a job keeps up to P batches on
// workers at once, each on its own chain (build, then profile pinned to the
// build's worker): an enumerate that handed out a batch is followed at once
// by another enumerate while fewer than P batches are on workers (and fewer
// than 2P are out, updates included; P = 1: one), so the batches reach several workers
// of the key and a worker that finishes gets a new batch before the
// finished ones are updated. The server side of a job stays serial: at most
// one of its enumerate or update phases is queued or in flight (the search
// state is one per job); a profile that ends meanwhile has its update queued
// once the server is free and no batch is to be handed out first (at 2P
// out, updates come first). An enumerate that finds every unknown
// handed out (kWait) parks the job only when none of its batches is out;
// otherwise the next update wakes it. Batch ids are the lifecycle's (1, 2,
// ...), carried in PhaseRequest::batch; the caller reports them back in
// PhaseEnd::batch (with P = 1 it may leave them 0). With P = 1 the chain is
// exactly the one above.
//
// Turns. A job whose turn at a search place is over (SearchAdmission) is
// asked to Yield: it hands out no new batch, lets the batches out finish
// (their updates store what they measured), and once nothing of it is out
// the step is kYield: the caller drops its search and, when the job gets a
// place again, calls Start (a resumed search reads what was stored).
//
// Failures. A worker phase (build, profile, measure) that fails, or an update
// that rejects the worker's answer, costs an attempt: that batch is built
// again on any worker of the key (or the measure runs again); at
// max_attempts the job fails, naming the last error. A lost worker re-queues
// the same way without costing an attempt (it was not the job's fault). Any
// other failure of a server phase (enumerate, update) fails the job.
//
// Thread safety: none; one owner per job.
#ifndef IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_
#define IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

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
  // The batch of a build, profile or update (its PhaseRequest::batch); 0
  // names the only batch out (P = 1).
  int64_t batch = 0;
};

// What the caller does next.
struct LifecycleStep {
  enum class Action {
    kEnqueue,  // queue every request of `enqueue`, in order
    kWait,     // nothing to queue: a phase of the job is queued or in flight
    kPark,     // wait; call Woken() when another job stored measurements
    kYield,    // nothing of the job is out: give its search place back (Yield)
    kDone,     // the job succeeded (its measure ended ok)
    kFail,     // the job failed with `error`
  };
  Action action = Action::kEnqueue;
  std::vector<PhaseRequest> enqueue;  // kEnqueue: one or more
  std::string error;                  // kFail
  bool retry = false;  // kEnqueue after a failure that cost an attempt
};

// "enqueue enumerate", "enqueue profile@w1", "enqueue build + enumerate",
// "wait", "park", "yield", "done", "fail: ...".
std::string DescribeStep(const LifecycleStep& step);

class JobLifecycle {
 public:
  // max_attempts < 1 is taken as 1, max_batches < 1 as 1. `attempts`: the
  // failed worker phases it has already used (a job starting a new turn).
  explicit JobLifecycle(int max_attempts, int max_batches = 1, int attempts = 0);

  // The first phase of a turn: enumerate.
  LifecycleStep Start();
  // A parked job was woken: enumerate again (kYield if it was asked to yield).
  LifecycleStep Woken();
  // The job's turn is over: no new batch is handed out. kYield at once when
  // nothing of it is out or queued, else kWait (a later step says kYield).
  // Ignored once the search is done (the measure is owed).
  LifecycleStep Yield();
  // A phase of the job ended (a phase that was cancelled with its job is
  // not reported). A batch id that is not out fails the job (a caller bug).
  LifecycleStep Next(const PhaseEnd& end);

  int attempts() const { return attempts_; }
  int max_batches() const { return max_batches_; }
  // Batches between their enumerate and the end of their update; a lost or
  // failed worker phase rebuilds its batch.
  int batches_out() const { return static_cast<int>(batches_.size()); }
  // Of them, those being built or profiled (at most max_batches).
  int batches_on_workers() const;
  bool batch_pending() const { return !batches_.empty(); }
  // The search is done and the measure is owed.
  bool measuring() const { return measuring_; }
  // Asked to yield, and not yet started again.
  bool yielding() const { return yielding_; }

 private:
  static PhaseRequest Request(PhaseKind kind, int64_t batch = 0, std::string pinned = "");
  // Adds the job's next server phase to `step` when none is queued or in
  // flight: a due update first, else an enumerate while batches may still
  // be handed out.
  void NextServerPhase(LifecycleStep& step);
  // `step` as it stands: kEnqueue with requests, else kWait, or kPark (kYield
  // when yielding) when nothing of the job is out.
  LifecycleStep Settle(LifecycleStep step) const;
  // A worker phase must run again: rebuild `batch`, or measure again.
  LifecycleStep Requeue(PhaseKind kind, int64_t batch);
  LifecycleStep Retry(PhaseKind kind, int64_t batch, const std::string& error);
  static LifecycleStep Stop(LifecycleStep::Action action, std::string error = "");

  int max_attempts_;
  int max_batches_;
  int attempts_ = 0;
  int64_t next_batch_ = 1;
  std::map<int64_t, PhaseKind> batches_;  // out, by id: the phase it is in or waits for
  std::deque<int64_t> updates_due_;       // profiled, waiting for the server
  bool server_phase_ = false;             // an enumerate or update queued or in flight
  bool may_hand_out_ = true;              // the last enumerate did not say kWait
  bool measuring_ = false;
  bool yielding_ = false;                 // Yield() since the last Start()
};

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_JOB_LIFECYCLE_H_
