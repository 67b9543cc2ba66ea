// FarmScheduler: the load-aware job scheduler (DESIGN.md, "The load-aware
// scheduler"; thesis section 4, Listings 2-4) as an event-driven state machine.
//
// The caller feeds it events (job added/removed, worker joined/lost, phase
// enqueued/finished) with the time of each event, then calls Dispatch(now) and
// starts the phases it returns. The scheduler never reads a clock, never
// blocks and never runs anything itself, so tests and the simulation drive it
// with a fake clock. Times must not go backwards: an earlier time than the
// latest one seen is taken as the latest one seen.
//
// Resources. A server CPU pool of `server_slots` slots ("server-cpu/<i>")
// runs enumerate and update phases; each worker has a CPU ("<w>/cpu") that
// runs builds and a measuring device that runs profile and measure phases: a
// GPU ("<w>/gpu"), or on a CPU worker its CPU again ("<w>/device"; phase.h).
// Every resource runs at most one phase at a time, under every policy; in
// particular a GPU never runs two profile/measure phases at once.
// A phase of a job whose device key has no worker yet simply waits queued.
//
// Queues. Each resource class has FIFO queues: one for the server pool, and
// per device key one build queue and one GPU queue for unpinned phases, plus
// per worker one build and one GPU queue for phases pinned to it. A queued
// phase becomes *ready* when the policy lets it run; ready phases are ordered
// by (time it became ready, job arrival order, phase id) — FIFO, and among
// phases that became ready at the same instant, round-robin over jobs in
// arrival order, as Listing 2's loop over jobs does. A free worker takes the
// oldest ready phase among its pinned queue and its key's queue. An unpinned
// phase goes to a free worker with no pinned work waiting if there is one;
// an unpinned build then goes to the free worker whose GPU has the least work
// (running + pinned queue), because the profile of that batch will be pinned
// there (load-aware placement; without it builds pile up on the first workers
// by name and their GPUs' queues grow while other GPUs idle).
//
// Phases per job. A job has at most `max_phases` (AddJob; 1 by default)
// phases queued or in flight: with 1 its phases run in order, one at a time
// (the thesis's jobs); more let one job keep several workers of its key busy
// with several batches at once (JobLifecycle's parallel batches).
//
// Fair share. Ready worker phases are ordered first by their job's share:
// how many phases of the same resource class (builds, or profile/measure)
// the job has running now. A free worker thus serves the job that holds the
// fewest of them (max-min fairness: a job with one batch left never waits
// behind another job's twenty), and only then the order of the policy below.
// With one phase per job every share is 0 and the order is the policy's.
// Ready server phases are ordered first by their job's level of server time
// so far (ServerLevel: 0 under kServerLevelSeconds, then one level per
// doubling): least attained service, so the few short phases of a small job
// never queue behind the time slices of long searches, and long searches
// share the slots by the server time they have had (not under kSynchronous,
// whose rounds keep arrival order). A job's server time counts from its
// AddJob.
//
// Built batches. A worker keeps a limited number of built batches
// (`max_batches` at WorkerJoined; 0: no limit). A batch is held on a worker
// from the start of its build until the profile pinned to that worker ends
// or is dropped; a build starts on a worker only while it holds fewer than
// its limit, so no profile ever finds its batch evicted however many jobs
// build at once. The caller enqueues the pinned profile of a finished build
// before its next Dispatch (the batch is uncounted in between).
//
// Policies:
//  - kInterleaved (Listing 2, the default): a phase is ready as soon as it is
//    enqueued; every free resource takes the next ready phase of its queues
//    at once. Phases of different jobs overlap on different resources.
//  - kSequential (Listing 3): only the oldest job (arrival order) that has not
//    been removed may run phases; the other jobs' phases wait (held) until
//    every older job is removed.
//  - kCriticalPath (ours): kInterleaved, but the ready phases of a queue are
//    ordered by (ready time - the job's urgency), where urgency is what the
//    caller last set with SetJobUrgency: its estimate of the job's remaining
//    chain (seconds of the job's own phases still to run one after another),
//    plus any priority boost. A free resource thus serves the job with the
//    least slack first, which keeps a late, long job off the end of the
//    makespan (the mixed staggered set of bench/farm_policy_bench ends at its
//    tight lower bound, against 1.22x under kInterleaved). Bounded waiting:
//    urgencies are clamped to [0, kMaxUrgencySeconds], so a phase ready at t
//    is overtaken only by phases ready before t + kMaxUrgencySeconds; none
//    starves. With every urgency 0 it is kInterleaved.
//  - kSynchronous (Listing 4, adapted): jobs advance in lock-step rounds. A
//    round starts (at a Dispatch) when no phase of the previous round is still
//    queued or in flight and every job has its next phase enqueued; all those
//    phases are then released at once. Resources stay exclusive, so phases
//    that need the same resource queue instead of interfering. Jobs added
//    mid-round join the next round; a removed job leaves its round; a phase
//    that ends with kWorkerLost or is dropped ends its part of the round.
//
// Cost: Dispatch is O(server starts + per dirty device key (free workers +
// workers with pinned work) per start) with O(log n) queue operations; it
// never scans all jobs (a synchronous round start touches each job of the
// round once). Other events are O(log n).
//
// Thread safety: none; the owner serializes calls (e.g. under its mutex).
#ifndef IOSFARM_SCHEDULER_FARM_FARM_SCHEDULER_H_
#define IOSFARM_SCHEDULER_FARM_FARM_SCHEDULER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "scheduler/farm/phase.h"

namespace iosfarm::scheduler::farm {

struct QueueLengths {
  int server_cpu = 0;                       // ready enumerate/update phases waiting
  std::map<std::string, int> build_by_key;  // ready builds waiting (unpinned + pinned
                                            // to a worker of the key)
  std::map<std::string, int> gpu_by_worker; // ready profile/measure pinned to the worker
  std::map<std::string, int> gpu_by_key;    // ready unpinned profile/measure of the key
  int held = 0;       // queued phases the policy holds back (sequential, synchronous)
  int in_flight = 0;  // phases started and not yet ended
};

// What a job is doing now.
struct JobView {
  JobId job = 0;
  std::string device_key;
  std::optional<PhaseId> phase;  // the phase queued or in flight, if any
  PhaseKind kind = PhaseKind::kEnumerate;  // its kind (when phase is set)
  bool in_flight = false;        // started and not ended
  std::string resource;          // when in flight
  std::string worker;            // when in flight on a worker
  // (The fields above describe its oldest phase; every one is listed here.)
  std::vector<PhaseId> phases;  // queued or in flight, by id
  int running = 0;              // of them in flight
};

// A phase a lost worker ended (in flight) or dropped (queued, pinned to it).
struct LostPhase {
  JobId job = 0;
  PhaseId phase = 0;
  PhaseKind kind = PhaseKind::kEnumerate;
  int64_t batch = 0;     // its PhaseRequest::batch
  bool running = false;  // was in flight (its record says kWorkerLost)
};

class FarmScheduler {
 public:
  // server_slots < 1 is taken as 1.
  FarmScheduler(Policy policy, int server_slots);

  FarmScheduler(const FarmScheduler&) = delete;
  FarmScheduler& operator=(const FarmScheduler&) = delete;
  FarmScheduler(FarmScheduler&&) = default;
  FarmScheduler& operator=(FarmScheduler&&) = default;

  Policy policy() const { return policy_; }
  int server_slots() const { return static_cast<int>(slots_.size()); }

  // The server-time levels of "Fair share": a job with less than this of
  // server phases so far is at level 0; level k >= 1 holds jobs with
  // [2^(k-1), 2^k) times this (at most level 31).
  static constexpr double kServerLevelSeconds = 0.1;
  static int ServerLevel(double server_s);

  // Registers a job; arrival order (round-robin order) is call order.
  // `max_phases`: how many phases it may have queued or in flight at once.
  // AlreadyExists if the id is known; InvalidArgument for an empty key,
  // max_phases < 1, or max_phases > 1 under kSynchronous (its rounds take
  // one phase per job).
  Status AddJob(JobId job, std::string device_key, int max_phases = 1);

  // The most urgency a job can have (a day): the bound on how long a ready
  // phase can be overtaken under kCriticalPath.
  static constexpr double kMaxUrgencySeconds = 86400;
  // kCriticalPath: the job's urgency (see Policies) for the phases it makes
  // ready from now on; clamped to [0, kMaxUrgencySeconds]; ignored by the
  // other policies. NotFound for an unknown job; InvalidArgument for a value
  // that is not a finite number.
  Status SetJobUrgency(JobId job, double urgency_s);

  // The job is finished or cancelled: a queued phase is dropped; a phase in
  // flight is recorded as kCancelled at now_s and its resource freed.
  // NotFound for an unknown job.
  Status RemoveJob(JobId job, double now_s);

  // AlreadyExists if a worker of that name is registered; InvalidArgument for
  // an empty name or key. `max_batches`: built batches it keeps (0: no limit);
  // `device` names its profile/measure resource (phase.h).
  Status WorkerJoined(const std::string& worker, const std::string& device_key,
                      int max_batches = 0, MeasuringDevice device = MeasuringDevice::kGpu);
  // Batches held on the worker now (see "Built batches"); 0 for an unknown one.
  int held_batches(std::string_view worker) const;

  // The worker is gone: phases in flight on it end with kWorkerLost (records
  // at now_s); queued phases pinned to it are dropped. Returns those phases
  // by job arrival order, then phase id; they no longer count against their
  // jobs' max_phases, so the caller can Enqueue others (e.g. build again on
  // another worker). An unknown worker affects nothing.
  std::vector<LostPhase> WorkerLost(const std::string& worker, double now_s);

  // Queues the job's next phase (queued_s = now_s).
  // NotFound: unknown job, or pinned worker not registered.
  // FailedPrecondition: the job already has max_phases queued or in flight.
  // InvalidArgument: a server phase with a pinned worker, or a pinned worker of
  // another device key.
  Status Enqueue(JobId job, PhaseRequest request, double now_s);

  // The phase ended with `outcome`; frees its resource and records it.
  // NotFound if the phase is not in flight.
  Status Finished(PhaseId phase, PhaseOutcome outcome, double now_s);

  // Starts every phase that may start now under the policy and returns them
  // in start order (server slots first, then device keys in name order).
  std::vector<Assignment> Dispatch(double now_s);

  // Records of phases that ended since the last call, in end order.
  std::vector<PhaseRecord> TakeRecords();

  QueueLengths queue_lengths() const;
  int num_jobs() const { return static_cast<int>(jobs_.size()); }
  int num_workers() const { return static_cast<int>(workers_.size()); }
  int num_workers(std::string_view device_key) const;
  // Workers of the key whose measuring device runs nothing now.
  int num_idle_devices(std::string_view device_key) const;
  bool HasJob(JobId job) const { return jobs_.count(job) > 0; }
  bool HasWorker(std::string_view worker) const;
  // NotFound for an unknown job.
  StatusOr<JobView> GetJob(JobId job) const;
  // True if some phase is queued or in flight (there is something to wait for).
  bool HasWork() const { return !phases_.empty(); }
  // True if no phase is queued or in flight, and no job is registered.
  bool Idle() const { return jobs_.empty() && phases_.empty(); }

 private:
  // Order of ready phases: (job's share or server level, ready time, job
  // arrival rank, phase id).
  using QueueKey = std::tuple<int, double, int64_t, PhaseId>;
  using Queue = std::set<QueueKey>;

  enum class PhaseState { kHeld, kReady, kRunning };

  struct Job {
    JobId id = 0;
    int64_t rank = 0;  // arrival order
    std::string key;
    std::set<PhaseId> phases;  // queued or in flight
    int max_phases = 1;
    int running_builds = 0;   // builds in flight (the share of its build phases)
    int running_devices = 0;  // profile/measure in flight (the share of those)
    double urgency_s = 0;     // kCriticalPath
    double server_s = 0;      // seconds of its server phases that ended
  };

  struct Phase {
    PhaseId id = 0;
    JobId job = 0;
    int64_t rank = 0;
    PhaseKind kind = PhaseKind::kEnumerate;
    int64_t batch = 0;
    std::string key;     // job's device key
    std::string pinned;  // pinned worker or empty
    PhaseState state = PhaseState::kHeld;
    QueueKey queue_key;  // when ready
    bool in_round = false;  // synchronous: released by the current round
    double queued_s = 0;
    double start_s = 0;
    std::string resource;
    std::string worker;
    int slot = -1;
    std::string batch_worker;  // the worker it holds a built batch on, if any
  };

  struct Worker {
    std::string name;
    std::string key;
    PhaseId cpu_phase = 0;  // running build; 0: free
    PhaseId gpu_phase = 0;  // running profile/measure; 0: free
    Queue pinned_build;     // ready builds pinned here
    Queue pinned_gpu;       // ready profile/measure pinned here
    std::set<PhaseId> pinned_phases;  // every queued phase pinned here (any state)
    int max_batches = 0;   // built batches it keeps; 0: no limit
    MeasuringDevice device = MeasuringDevice::kGpu;
    int held_batches = 0;  // builds running + pinned profiles queued or running
    bool HasRoomForBuild() const { return max_batches <= 0 || held_batches < max_batches; }
  };

  struct KeyPool {
    Queue build;  // ready unpinned builds
    Queue gpu;    // ready unpinned profile/measure
    std::set<std::string> workers;
    std::set<std::string> free_cpu;
    std::set<std::string> free_gpu;
    std::set<std::string> pinned_build_waiting;  // workers with ready pinned builds
    std::set<std::string> pinned_gpu_waiting;    // workers with ready pinned GPU work
  };

  double Now(double now_s);
  void MakeReady(Phase& phase, double now_s);
  void Insert(Phase& phase);  // puts a ready phase (its queue_key set) in its queue
  // The job's running count of `kind`'s class changed by `delta`: its ready
  // phases of that class take their new share.
  void ChangeShare(JobId job, PhaseKind kind, int delta);
  void Unqueue(Phase& phase);          // removes a ready phase from its queue
  void DropQueued(Phase& phase);       // drops a held or ready phase
  void EndRunning(Phase& phase, PhaseOutcome outcome, double now_s);
  // The phase holds a batch on `worker` / no longer does.
  void HoldBatch(Phase& phase, const std::string& worker);
  void ReleaseBatch(Phase& phase);
  void EndRoundPart(Phase& phase);
  void ReleaseSequentialHead(double now_s);
  void MaybeStartRound(double now_s);
  // Starts a ready phase on `worker` (worker phases) or server `slot`.
  void Start(Phase& phase, const std::string& worker, int slot, double now_s,
             std::vector<Assignment>& out);
  void DispatchKey(const std::string& key, bool gpu, double now_s,
                   std::vector<Assignment>& out);
  KeyPool& Pool(const std::string& key) { return pools_[key]; }

  Policy policy_;
  double latest_s_ = 0;
  int64_t next_rank_ = 0;
  PhaseId next_phase_ = 1;

  std::unordered_map<JobId, Job> jobs_;
  std::map<int64_t, JobId> jobs_by_rank_;   // live jobs in arrival order
  std::unordered_map<PhaseId, Phase> phases_;  // queued or in flight
  std::set<std::pair<int64_t, PhaseId>> held_;  // held phases by (job rank, id)

  std::vector<PhaseId> slots_;  // running phase per server slot; 0: free
  std::set<int> free_slots_;
  Queue server_queue_;

  std::map<std::string, Worker> workers_;
  std::map<std::string, KeyPool> pools_;
  std::set<std::string> dirty_keys_;  // keys whose queues or resources changed

  int in_flight_ = 0;
  int round_outstanding_ = 0;  // synchronous: released phases not yet ended
  std::vector<PhaseRecord> records_;
};

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_FARM_SCHEDULER_H_
