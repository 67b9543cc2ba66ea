// A discrete-event simulation of the farm: runs a FarmScheduler with a fake
// clock over jobs whose phase durations are known in advance.
//
// Each job moves through the shipped phase chain (JobLifecycle, the one the
// server's FarmCoordinator runs): on arrival, its iterations (batches) —
// enumerate (server CPU), build (a worker CPU of its key, any worker),
// profile (the GPU of the worker that ran the build: pinned), update (server
// CPU) — then a final measure (any GPU of its key), and is removed. With
// max_parallel_batches P > 1 up to P batches are out at once (their
// enumerates and updates still one at a time per job); each enumerate hands
// out the next iteration. An enumerate that finds nothing left to hand out
// (every batch out, or the search done) takes no time here (the job spec
// folds it into the last update). A worker loss (SimWorkerEvent with
// joins = false) ends its phases with kWorkerLost; the lifecycle re-runs the
// build of each batch it held (build or profile lost) or the measure.
// Simulated phases never fail and never park.
// With SimConfig::admission, at most admission->places jobs search at once
// and places are shared in time (SearchAdmission, the server's rule): a job
// waits from its arrival for a place; a search whose turn is over yields at
// its next server phase's end (JobLifecycle::Yield) once nothing of it is
// out, and its next turn begins with resume_s of server CPU (its search
// redone from stored latencies) added to its next enumerate. A job's place
// is freed when its search is done (before its measure).
// All events at one instant are applied before one Dispatch, as in the
// thesis's loop. Deterministic: the same config gives the same records.
#ifndef IOSFARM_SCHEDULER_FARM_FARM_SIMULATION_H_
#define IOSFARM_SCHEDULER_FARM_FARM_SIMULATION_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/farm/farm_scheduler.h"
#include "scheduler/farm/phase.h"
#include "scheduler/farm/search_admission.h"

namespace iosfarm::scheduler::farm {

struct SimIteration {
  double enumerate_s = 0;
  double build_s = 0;
  double profile_s = 0;
  double update_s = 0;
};

struct SimJob {
  std::string device_key;
  double arrival_s = 0;
  std::vector<SimIteration> iterations;  // its batches, in enumeration order
  double measure_s = 0;
  // Batches on workers at once (JobLifecycle's max_batches): 1 is the
  // thesis's serial chain; 0 is as many as its key has idle GPUs when it
  // arrives (at least 1). The synchronous policy runs 1 whatever this says.
  int max_parallel_batches = 1;
  // Search admission (SimConfig::admission): what the line orders by (its
  // expected stages are its batches left), and the server CPU a resumed
  // search spends redoing its DP before it hands out anything new.
  int priority = 0;
  std::string owner;
  double resume_s = 0;
};

struct SimWorker {
  std::string name;
  std::string device_key;
};

// A worker joins (joins = true, device_key needed) or is lost at time_s.
struct SimWorkerEvent {
  double time_s = 0;
  std::string worker;
  std::string device_key;
  bool joins = false;
};

struct SimConfig {
  Policy policy = Policy::kInterleaved;
  int server_slots = 1;
  std::vector<SimJob> jobs;        // job i gets JobId i
  std::vector<SimWorker> workers;  // present from time 0
  std::vector<SimWorkerEvent> worker_events;
  bool measure_latency = true;     // time each Dispatch/Finished call
  // Search places shared in time; nullopt: every job searches from arrival.
  std::optional<AdmissionRules> admission;
};

struct SimResult {
  std::vector<PhaseRecord> records;      // every ended phase, in end order
  std::vector<Assignment> assignments;   // every started phase, in start order
  std::vector<double> job_end_s;         // per job: when its last phase ended
  double makespan_s = 0;                 // last job end (time 0 = simulation start)
  double lower_bound_s = 0;              // LowerBound(config)
  double simple_lower_bound_s = 0;       // SimpleLowerBound(config)
  double gpu_idle_fraction = 0;          // 1 - GPU busy time / (initial GPUs x makespan)
  int phases_lost = 0;                   // phases ended by a worker loss
  int yields = 0;                        // search places given back (admission)
  // Jobs that ran with parallel batches: their P (> 1), for CheckTimeline.
  std::map<JobId, int> parallel_batches;
  // Wall time (seconds, steady_clock) of each Dispatch and Finished call.
  std::vector<double> decision_latency_s;
};

// Runs the simulation. InvalidArgument for a negative or non-finite duration
// or time, duplicate worker names or an empty key; FailedPrecondition if jobs
// can never finish (no worker of their key remains), naming them.
StatusOr<SimResult> RunFarmSimulation(const SimConfig& config);

// Lower bounds on the makespan of any schedule (both ignore worker events;
// a key with no initial worker contributes only its jobs' chains).
//
// SimpleLowerBound: the maximum of (a) per resource class, its total work
// divided by the number of its resources — server work / server slots; per
// device key, build work / workers and GPU work / workers — and (b) per job,
// its arrival plus its chain: the sum of all its phase durations, or with
// parallel batches the longer of its server phases plus its measure (those
// run one at a time) and one batch's whole chain plus the measure.
double SimpleLowerBound(const SimConfig& config);

// LowerBound: SimpleLowerBound tightened with the time a resource class must
// stay idle at the start and the end, and with GPU entry:
//  - server: min arrival + server work / slots + min final measure;
//  - per key, builds: min(arrival + first enumerate) + build work / workers +
//    min over jobs of (min iteration profile + update, plus measure);
//  - per key, GPU: min(arrival + head) + GPU work / workers, where a job's
//    head is what runs before its first GPU phase;
//  - per key with n jobs > g workers, GPU entry (jobs of one batch at a
//    time only; a job with parallel batches counts as having no rest): no GPU phase starts before
//    h = min(arrival + head), and one that starts before h + d (d the
//    shortest first GPU phase) keeps its GPU busy past that time, so at most g
//    jobs enter a GPU before h + d; every other job then needs its rest R
//    (chain minus head): bound h + d + the (g+1)-th largest R.
double LowerBound(const SimConfig& config);

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_FARM_SIMULATION_H_
