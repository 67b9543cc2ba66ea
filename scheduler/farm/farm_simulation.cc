#include "scheduler/farm/farm_simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/farm/job_lifecycle.h"

namespace iosfarm::scheduler::farm {
namespace {

enum class EventType { kArrival, kPhaseEnd, kWorker };

struct Event {
  double time_s;
  int64_t seq;
  EventType type;
  int64_t id;  // job index, phase id or worker event index
  bool operator>(const Event& other) const {
    return std::tie(time_s, seq) > std::tie(other.time_s, other.seq);
  }
};

struct JobState {
  JobLifecycle lifecycle{1};                         // the shipped phase chain
  size_t enumerated = 0;                             // iterations handed out so far
  size_t updated = 0;                                // batches updated so far
  std::unordered_map<int64_t, size_t> iteration_of;  // lifecycle batch id -> iteration
  bool done = false;
  int parallel = 1;       // its batches on workers at once
  bool resuming = false;  // its next enumerate redoes its search first (resume_s)
};

// A phase started and not ended.
struct Running {
  JobId job = 0;
  PhaseKind kind = PhaseKind::kEnumerate;
  int64_t batch = 0;
  std::string worker;
};

bool BadTime(double t) { return !std::isfinite(t) || t < 0; }

// The job's remaining chain when its phase `next` is queued in iteration
// `iteration`: that phase and every later one of the job, in series (the
// urgency of Policy::kCriticalPath; exact here, estimated by the server).
double RemainingChainSeconds(const SimJob& job, size_t iteration, PhaseKind next) {
  double remaining = job.measure_s;
  if (next == PhaseKind::kMeasure) return remaining;
  for (size_t i = iteration; i < job.iterations.size(); ++i) {
    const SimIteration& it = job.iterations[i];
    double phases = it.enumerate_s + it.build_s + it.profile_s + it.update_s;
    if (i == iteration) {
      if (next == PhaseKind::kBuild) phases -= it.enumerate_s;
      if (next == PhaseKind::kProfile) phases -= it.enumerate_s + it.build_s;
      if (next == PhaseKind::kUpdate) phases = it.update_s;
    }
    remaining += phases;
  }
  return remaining;
}

Status Validate(const SimConfig& config) {
  for (size_t i = 0; i < config.jobs.size(); ++i) {
    const SimJob& job = config.jobs[i];
    if (job.device_key.empty()) {
      return absl::InvalidArgumentError(StrCat("simulation job ", i, ": empty device key"));
    }
    bool bad = BadTime(job.arrival_s) || BadTime(job.measure_s);
    for (const SimIteration& it : job.iterations) {
      bad = bad || BadTime(it.enumerate_s) || BadTime(it.build_s) || BadTime(it.profile_s) ||
            BadTime(it.update_s);
    }
    if (bad) {
      return absl::InvalidArgumentError(
          StrCat("simulation job ", i, ": a time or duration is negative or not finite"));
    }
  }
  std::set<std::string> names;
  for (const SimWorker& w : config.workers) {
    if (w.name.empty() || w.device_key.empty()) {
      return absl::InvalidArgumentError(
          StrCat("simulation worker '", w.name, "': empty name or device key"));
    }
    if (!names.insert(w.name).second) {
      return absl::InvalidArgumentError(StrCat("simulation worker ", w.name, " appears twice"));
    }
  }
  for (size_t i = 0; i < config.worker_events.size(); ++i) {
    const SimWorkerEvent& e = config.worker_events[i];
    if (BadTime(e.time_s) || e.worker.empty() || (e.joins && e.device_key.empty())) {
      return absl::InvalidArgumentError(
          StrCat("simulation worker event ", i, " (", e.worker, "): bad time, name or key"));
    }
  }
  return absl::OkStatus();
}

// How long the started phase `a` of `job` takes.
double Duration(const SimJob& job, JobState& state, const Assignment& a) {
  auto batch = [&]() -> const SimIteration& {
    return job.iterations[state.iteration_of.at(a.batch)];
  };
  switch (a.kind) {
    case PhaseKind::kEnumerate: {  // it hands out the next iteration
      const double resume = state.resuming ? job.resume_s : 0;
      state.resuming = false;
      return resume + job.iterations[state.enumerated].enumerate_s;
    }
    case PhaseKind::kBuild:
      return batch().build_s;
    case PhaseKind::kProfile:
      return batch().profile_s;
    case PhaseKind::kUpdate:
      return batch().update_s;
    case PhaseKind::kMeasure:
      break;
  }
  return job.measure_s;
}

class Simulation {
 public:
  explicit Simulation(const SimConfig& config)
      : config_(config),
        scheduler_(config.policy, config.server_slots),
        states_(config.jobs.size()),
        admission_(config.admission.value_or(AdmissionRules{})) {}

  StatusOr<SimResult> Run() {
    for (const SimWorker& w : config_.workers) {
      RETURN_IF_ERROR(scheduler_.WorkerJoined(w.name, w.device_key));
    }
    for (size_t i = 0; i < config_.jobs.size(); ++i) {
      Push(config_.jobs[i].arrival_s, EventType::kArrival, static_cast<int64_t>(i));
    }
    for (size_t i = 0; i < config_.worker_events.size(); ++i) {
      Push(config_.worker_events[i].time_s, EventType::kWorker, static_cast<int64_t>(i));
    }
    result_.job_end_s.assign(config_.jobs.size(), 0.0);
    while (!events_.empty()) {
      const double t = events_.top().time_s;
      while (!events_.empty() && events_.top().time_s == t) {
        const Event e = events_.top();
        events_.pop();
        RETURN_IF_ERROR(Handle(e));
      }
      std::vector<Assignment> started;
      Timed([&] { started = scheduler_.Dispatch(t); });
      for (Assignment& a : started) {
        running_[a.phase] = Running{a.job, a.kind, a.batch, a.worker};
        Push(t + Duration(config_.jobs[a.job], states_[a.job], a), EventType::kPhaseEnd, a.phase);
        result_.assignments.push_back(std::move(a));
      }
      Collect();
    }
    Collect();
    std::vector<JobId> stuck;
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].done) stuck.push_back(static_cast<JobId>(i));
    }
    if (!stuck.empty()) {
      std::string list;
      for (size_t i = 0; i < stuck.size() && i < 10; ++i) list += StrCat(i ? ", " : "", stuck[i]);
      return absl::FailedPreconditionError(
          StrCat(stuck.size(), " simulation jobs never finish (no worker of their device key?): ",
                 list, stuck.size() > 10 ? ", ..." : ""));
    }
    for (double end : result_.job_end_s) result_.makespan_s = std::max(result_.makespan_s, end);
    result_.lower_bound_s = LowerBound(config_);
    result_.simple_lower_bound_s = SimpleLowerBound(config_);
    double gpu_busy = 0;
    for (const PhaseRecord& r : result_.records) {
      if (ResourceClassOf(r.kind) == ResourceClass::kWorkerGpu) gpu_busy += r.end_s - r.start_s;
      if (r.outcome == PhaseOutcome::kWorkerLost) ++result_.phases_lost;
    }
    const double gpu_time = static_cast<double>(config_.workers.size()) * result_.makespan_s;
    result_.gpu_idle_fraction = gpu_time > 0 ? std::max(0.0, 1.0 - gpu_busy / gpu_time) : 0.0;
    return std::move(result_);
  }

 private:
  template <typename F>
  void Timed(F&& f) {
    if (!config_.measure_latency) {
      f();
      return;
    }
    const auto begin = std::chrono::steady_clock::now();
    f();
    const auto end = std::chrono::steady_clock::now();
    result_.decision_latency_s.push_back(std::chrono::duration<double>(end - begin).count());
  }

  void Push(double t, EventType type, int64_t id) { events_.push(Event{t, seq_++, type, id}); }

  void Collect() {
    for (PhaseRecord& r : scheduler_.TakeRecords()) result_.records.push_back(std::move(r));
  }

  // kCriticalPath's urgency of `job` when it queues a phase of `kind`.
  double Urgency(JobId job, PhaseKind kind) const {
    const SimJob& spec = config_.jobs[job];
    const JobState& state = states_[job];
    const int parallel = state.lifecycle.max_batches();
    if (parallel == 1) return RemainingChainSeconds(spec, state.updated, kind);
    // Parallel batches: its server phases and measure in series, its
    // batches' worker phases shared among `parallel` workers.
    double server = spec.measure_s, workers = 0;
    for (size_t i = state.updated; i < spec.iterations.size(); ++i) {
      server += spec.iterations[i].enumerate_s + spec.iterations[i].update_s;
      workers += spec.iterations[i].build_s + spec.iterations[i].profile_s;
    }
    return server + workers / parallel;
  }

  // Acts on the lifecycle's step: queues the next phases or ends the job.
  // An enumerate with nothing left to hand out (every iteration handed out)
  // ends at once: the job spec has no time for it (it folds it into the
  // last update). Simulated phases never fail and never wait for other jobs.
  Status Apply(JobId job, LifecycleStep step, double t) {
    JobState& state = states_[job];
    const SimJob& spec = config_.jobs[job];
    while (true) {
      switch (step.action) {
        case LifecycleStep::Action::kEnqueue: {
          bool instant_enumerate = false;
          for (PhaseRequest& request : step.enqueue) {
            if (request.kind == PhaseKind::kEnumerate &&
                state.enumerated >= spec.iterations.size()) {
              instant_enumerate = true;
              continue;
            }
            RETURN_IF_ERROR(scheduler_.SetJobUrgency(job, Urgency(job, request.kind)));
            RETURN_IF_ERROR(scheduler_.Enqueue(job, std::move(request), t));
          }
          if (!instant_enumerate) return absl::OkStatus();
          PhaseEnd end;
          end.kind = PhaseKind::kEnumerate;
          end.enumerated =
              state.lifecycle.batches_out() > 0 ? Enumerated::kWait : Enumerated::kSearchDone;
          step = state.lifecycle.Next(end);
          if (end.enumerated == Enumerated::kSearchDone && config_.admission) {
            RETURN_IF_ERROR(StartSearches(admission_.Release(job, t), t));
          }
          continue;
        }
        case LifecycleStep::Action::kWait:
          return absl::OkStatus();
        case LifecycleStep::Action::kDone:
          state.done = true;
          result_.job_end_s[job] = t;
          return scheduler_.RemoveJob(job, t);
        case LifecycleStep::Action::kYield: {
          RETURN_IF_ERROR(scheduler_.RemoveJob(job, t));
          ++result_.yields;
          state.resuming = true;
          return StartSearches(admission_.Yielded(job, Candidate(job), t), t);
        }
        case LifecycleStep::Action::kPark:
        case LifecycleStep::Action::kFail:
          break;
      }
      return absl::InternalError(
          StrCat("simulation job ", job, ": unexpected step ", DescribeStep(step)));
    }
  }

  Status Handle(const Event& e) {
    switch (e.type) {
      case EventType::kArrival: {
        const JobId job = e.id;
        const SimJob& spec = config_.jobs[job];
        int parallel = spec.max_parallel_batches;
        if (parallel <= 0) parallel = std::max(1, scheduler_.num_idle_devices(spec.device_key));
        if (config_.policy == Policy::kSynchronous) parallel = 1;  // one phase per job
        states_[job].parallel = parallel;
        if (parallel > 1) result_.parallel_batches[job] = parallel;
        if (config_.admission && !admission_.Request(job, Candidate(job), e.time_s)) {
          return absl::OkStatus();  // waits for a search place
        }
        return StartSearch(job, e.time_s);
      }
      case EventType::kPhaseEnd: {
        auto it = running_.find(e.id);
        if (it == running_.end()) return absl::OkStatus();  // lost with its worker
        const Running phase = it->second;
        running_.erase(it);
        Status status;
        Timed([&] { status = scheduler_.Finished(e.id, PhaseOutcome::kOk, e.time_s); });
        RETURN_IF_ERROR(status);
        JobState& state = states_[phase.job];
        PhaseEnd end;
        end.kind = phase.kind;
        end.worker = phase.worker;
        end.batch = phase.batch;
        end.enumerated = Enumerated::kBatch;
        if (phase.kind == PhaseKind::kUpdate) ++state.updated;
        if (config_.admission && ResourceClassOf(phase.kind) == ResourceClass::kServerCpu &&
            admission_.ShouldYield(phase.job, Candidate(phase.job), e.time_s)) {
          state.lifecycle.Yield();  // its turn is over: Next says kYield once nothing is out
        }
        if (phase.kind != PhaseKind::kEnumerate) {
          return Apply(phase.job, state.lifecycle.Next(end), e.time_s);
        }
        const size_t iteration = state.enumerated++;
        LifecycleStep step = state.lifecycle.Next(end);
        for (const PhaseRequest& request : step.enqueue) {
          if (request.kind == PhaseKind::kBuild) state.iteration_of[request.batch] = iteration;
        }
        return Apply(phase.job, std::move(step), e.time_s);
      }
      case EventType::kWorker: {
        const SimWorkerEvent& w = config_.worker_events[e.id];
        if (w.joins) return scheduler_.WorkerJoined(w.worker, w.device_key);
        for (const LostPhase& lost : scheduler_.WorkerLost(w.worker, e.time_s)) {
          if (lost.running) running_.erase(lost.phase);
          PhaseEnd end;
          end.kind = lost.kind;
          end.outcome = PhaseOutcome::kWorkerLost;
          end.worker = w.worker;
          end.batch = lost.batch;
          RETURN_IF_ERROR(Apply(lost.job, states_[lost.job].lifecycle.Next(end), e.time_s));
        }
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  // What the admission line orders `job` by: its batches left as its
  // expected stages.
  SearchCandidate Candidate(JobId job) const {
    const SimJob& spec = config_.jobs[job];
    SearchCandidate candidate;
    candidate.priority = spec.priority;
    candidate.owner = spec.owner;
    candidate.expected_stages = static_cast<double>(
        spec.iterations.size() - std::min(spec.iterations.size(), states_[job].updated));
    return candidate;
  }

  // `job` got its search place (or needs none): it joins the scheduler and
  // enumerates.
  Status StartSearch(JobId job, double t) {
    JobState& state = states_[job];
    state.lifecycle = JobLifecycle(/*max_attempts=*/1, state.parallel);
    // A batch's worker phase each, and one server phase.
    RETURN_IF_ERROR(scheduler_.AddJob(job, config_.jobs[job].device_key,
                                      state.parallel == 1 ? 1 : state.parallel + 1));
    return Apply(job, state.lifecycle.Start(), t);
  }

  Status StartSearches(const std::vector<int64_t>& jobs, double t) {
    for (const int64_t job : jobs) RETURN_IF_ERROR(StartSearch(static_cast<JobId>(job), t));
    return absl::OkStatus();
  }

  const SimConfig& config_;
  FarmScheduler scheduler_;
  std::vector<JobState> states_;
  SearchAdmission admission_;
  std::unordered_map<PhaseId, Running> running_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t seq_ = 0;
  SimResult result_;
};

}  // namespace

StatusOr<SimResult> RunFarmSimulation(const SimConfig& config) {
  RETURN_IF_ERROR(Validate(config));
  Simulation simulation(config);
  return simulation.Run();
}

// The job's own chain: every phase in series, or with parallel batches the
// longer of its server phases plus the measure and one batch's chain plus
// the measure (SimpleLowerBound).
double ChainSeconds(const SimJob& job) {
  double serial = job.measure_s, server = job.measure_s, longest_batch = 0;
  for (const SimIteration& it : job.iterations) {
    const double batch = it.enumerate_s + it.build_s + it.profile_s + it.update_s;
    serial += batch;
    server += it.enumerate_s + it.update_s;
    longest_batch = std::max(longest_batch, batch);
  }
  if (job.max_parallel_batches == 1) return serial;
  return std::max(server, longest_batch + job.measure_s);
}

double SimpleLowerBound(const SimConfig& config) {
  std::map<std::string, int> workers_by_key;
  for (const SimWorker& w : config.workers) ++workers_by_key[w.device_key];
  double server = 0;
  std::map<std::string, double> build, gpu;
  double bound = 0;
  for (const SimJob& job : config.jobs) {
    gpu[job.device_key] += job.measure_s;
    for (const SimIteration& it : job.iterations) {
      server += it.enumerate_s + it.update_s;
      build[job.device_key] += it.build_s;
      gpu[job.device_key] += it.profile_s;
    }
    bound = std::max(bound, job.arrival_s + ChainSeconds(job));
  }
  bound = std::max(bound, server / std::max(config.server_slots, 1));
  for (const auto& [key, count] : workers_by_key) {
    bound = std::max(bound, build[key] / count);
    bound = std::max(bound, gpu[key] / count);
  }
  return bound;
}

double LowerBound(const SimConfig& config) {
  double bound = SimpleLowerBound(config);
  if (config.jobs.empty()) return bound;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::map<std::string, int> workers_by_key;
  for (const SimWorker& w : config.workers) ++workers_by_key[w.device_key];

  struct KeyStats {
    double build_work = 0, gpu_work = 0;
    double build_start = kInf, build_tail = kInf;  // over jobs with iterations
    double gpu_start = kInf, first_gpu = kInf;
    std::vector<double> rest;  // chain after the head, per job
  };
  std::map<std::string, KeyStats> keys;
  double server_work = 0, min_arrival = kInf, server_tail = kInf;
  bool any_server = false;
  for (const SimJob& job : config.jobs) {
    KeyStats& k = keys[job.device_key];
    double chain = job.measure_s;
    double min_profile_update = kInf;
    for (const SimIteration& it : job.iterations) {
      server_work += it.enumerate_s + it.update_s;
      k.build_work += it.build_s;
      k.gpu_work += it.profile_s;
      chain += it.enumerate_s + it.build_s + it.profile_s + it.update_s;
      min_profile_update = std::min(min_profile_update, it.profile_s + it.update_s);
    }
    k.gpu_work += job.measure_s;
    min_arrival = std::min(min_arrival, job.arrival_s);
    double head = 0, first_gpu = job.measure_s;
    if (!job.iterations.empty()) {
      any_server = true;
      server_tail = std::min(server_tail, job.measure_s);
      head = job.iterations[0].enumerate_s + job.iterations[0].build_s;
      first_gpu = job.iterations[0].profile_s;
      k.build_start = std::min(k.build_start, job.arrival_s + job.iterations[0].enumerate_s);
      k.build_tail = std::min(k.build_tail, min_profile_update + job.measure_s);
    }
    k.gpu_start = std::min(k.gpu_start, job.arrival_s + head);
    k.first_gpu = std::min(k.first_gpu, first_gpu);
    // After its first GPU phase a serial job still needs the rest of its
    // chain; a job with parallel batches may have run ahead (no bound).
    k.rest.push_back(job.max_parallel_batches == 1 ? chain - head : 0.0);
  }
  if (any_server) {
    bound = std::max(bound, min_arrival + server_work / std::max(config.server_slots, 1) +
                                server_tail);
  }
  for (auto& [key, k] : keys) {
    auto it = workers_by_key.find(key);
    if (it == workers_by_key.end()) continue;
    const int g = it->second;
    if (k.build_start < kInf) {
      bound = std::max(bound, k.build_start + k.build_work / g + k.build_tail);
    }
    bound = std::max(bound, k.gpu_start + k.gpu_work / g);
    if (static_cast<int>(k.rest.size()) > g) {
      std::nth_element(k.rest.begin(), k.rest.begin() + g, k.rest.end(), std::greater<double>());
      bound = std::max(bound, k.gpu_start + k.first_gpu + k.rest[g]);
    }
  }
  return bound;
}

}  // namespace iosfarm::scheduler::farm
