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
  explicit JobState(int max_attempts) : lifecycle(max_attempts) {}
  JobLifecycle lifecycle;                   // the shipped phase chain
  size_t iteration = 0;                     // batches updated so far
  PhaseKind kind = PhaseKind::kEnumerate;   // the phase queued or in flight
  PhaseId running = 0;                      // its id once started
  std::string worker;                       // that runs it (worker phases)
  bool done = false;
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

double Duration(const SimJob& job, const JobState& state) {
  if (state.kind == PhaseKind::kMeasure) return job.measure_s;
  const SimIteration& it = job.iterations[state.iteration];
  switch (state.kind) {
    case PhaseKind::kEnumerate:
      return it.enumerate_s;
    case PhaseKind::kBuild:
      return it.build_s;
    case PhaseKind::kProfile:
      return it.profile_s;
    case PhaseKind::kUpdate:
      return it.update_s;
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
        states_(config.jobs.size(), JobState(/*max_attempts=*/1)) {}

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
        JobState& state = states_[a.job];
        state.running = a.phase;
        state.worker = a.worker;
        running_[a.phase] = a.job;
        Push(t + Duration(config_.jobs[a.job], state), EventType::kPhaseEnd, a.phase);
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

  // Acts on the lifecycle's step: queues the next phase or ends the job.
  // The job spec has no time for the last enumerate (the one that finds the
  // search done), so it ends at once, as the spec folds it into the last
  // update. Simulated phases never fail and never wait for other jobs.
  Status Apply(JobId job, LifecycleStep step, double t) {
    JobState& state = states_[job];
    const SimJob& spec = config_.jobs[job];
    while (step.action == LifecycleStep::Action::kEnqueue &&
           step.next.kind == PhaseKind::kEnumerate && state.iteration >= spec.iterations.size()) {
      PhaseEnd end;
      end.kind = PhaseKind::kEnumerate;
      end.enumerated = Enumerated::kSearchDone;
      step = state.lifecycle.Next(end);
    }
    switch (step.action) {
      case LifecycleStep::Action::kEnqueue:
        state.kind = step.next.kind;
        state.running = 0;
        RETURN_IF_ERROR(scheduler_.SetJobUrgency(
            job, RemainingChainSeconds(spec, state.iteration, step.next.kind)));
        return scheduler_.Enqueue(job, std::move(step.next), t);
      case LifecycleStep::Action::kDone:
        state.done = true;
        state.running = 0;
        result_.job_end_s[job] = t;
        return scheduler_.RemoveJob(job, t);
      case LifecycleStep::Action::kPark:
      case LifecycleStep::Action::kFail:
        break;
    }
    return absl::InternalError(
        StrCat("simulation job ", job, ": unexpected step ", DescribeStep(step)));
  }

  Status Handle(const Event& e) {
    switch (e.type) {
      case EventType::kArrival: {
        const JobId job = e.id;
        RETURN_IF_ERROR(scheduler_.AddJob(job, config_.jobs[job].device_key));
        return Apply(job, states_[job].lifecycle.Start(), e.time_s);
      }
      case EventType::kPhaseEnd: {
        auto it = running_.find(e.id);
        if (it == running_.end()) return absl::OkStatus();  // lost with its worker
        const JobId job = it->second;
        running_.erase(it);
        Status status;
        Timed([&] { status = scheduler_.Finished(e.id, PhaseOutcome::kOk, e.time_s); });
        RETURN_IF_ERROR(status);
        JobState& state = states_[job];
        PhaseEnd end;
        end.kind = state.kind;
        end.worker = state.worker;
        end.enumerated = Enumerated::kBatch;
        if (state.kind == PhaseKind::kUpdate) ++state.iteration;
        return Apply(job, state.lifecycle.Next(end), e.time_s);
      }
      case EventType::kWorker: {
        const SimWorkerEvent& w = config_.worker_events[e.id];
        if (w.joins) return scheduler_.WorkerJoined(w.worker, w.device_key);
        for (JobId job : scheduler_.WorkerLost(w.worker, e.time_s)) {
          JobState& state = states_[job];
          if (state.running != 0) running_.erase(state.running);
          PhaseEnd end;
          end.kind = state.kind;
          end.outcome = PhaseOutcome::kWorkerLost;
          end.worker = w.worker;
          RETURN_IF_ERROR(Apply(job, state.lifecycle.Next(end), e.time_s));
        }
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  const SimConfig& config_;
  FarmScheduler scheduler_;
  std::vector<JobState> states_;
  std::unordered_map<PhaseId, JobId> running_;
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

double SimpleLowerBound(const SimConfig& config) {
  std::map<std::string, int> workers_by_key;
  for (const SimWorker& w : config.workers) ++workers_by_key[w.device_key];
  double server = 0;
  std::map<std::string, double> build, gpu;
  double bound = 0;
  for (const SimJob& job : config.jobs) {
    double chain = job.measure_s;
    gpu[job.device_key] += job.measure_s;
    for (const SimIteration& it : job.iterations) {
      server += it.enumerate_s + it.update_s;
      build[job.device_key] += it.build_s;
      gpu[job.device_key] += it.profile_s;
      chain += it.enumerate_s + it.build_s + it.profile_s + it.update_s;
    }
    bound = std::max(bound, job.arrival_s + chain);
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
    k.rest.push_back(chain - head);
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
