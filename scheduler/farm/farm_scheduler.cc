#include "scheduler/farm/farm_scheduler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/strings.h"

namespace iosfarm::scheduler::farm {

FarmScheduler::FarmScheduler(Policy policy, int server_slots) : policy_(policy) {
  const int n = std::max(server_slots, 1);
  slots_.assign(n, 0);
  for (int i = 0; i < n; ++i) free_slots_.insert(i);
}

double FarmScheduler::Now(double now_s) {
  latest_s_ = std::max(latest_s_, now_s);
  return latest_s_;
}

Status FarmScheduler::SetJobUrgency(JobId job, double urgency_s) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(StrCat("job ", job, " is not registered"));
  if (!std::isfinite(urgency_s)) {
    return absl::InvalidArgumentError(
        StrCat("job ", job, ": urgency ", urgency_s, " is not a finite number"));
  }
  it->second.urgency_s = std::clamp(urgency_s, 0.0, kMaxUrgencySeconds);
  return absl::OkStatus();
}

Status FarmScheduler::AddJob(JobId job, std::string device_key, int max_phases) {
  if (jobs_.count(job) > 0) {
    return absl::AlreadyExistsError(StrCat("job ", job, " is already registered"));
  }
  if (device_key.empty()) {
    return absl::InvalidArgumentError(StrCat("job ", job, ": empty device key"));
  }
  if (max_phases < 1 || (max_phases > 1 && policy_ == Policy::kSynchronous)) {
    return absl::InvalidArgumentError(
        StrCat("job ", job, ": max_phases ", max_phases,
               max_phases < 1 ? " is below 1" : " (the synchronous policy runs one per job)"));
  }
  Job& j = jobs_[job];
  j.id = job;
  j.max_phases = max_phases;
  j.rank = next_rank_++;
  j.key = std::move(device_key);
  jobs_by_rank_[j.rank] = job;
  Pool(j.key);
  return absl::OkStatus();
}

Status FarmScheduler::RemoveJob(JobId job, double now_s) {
  const double t = Now(now_s);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return absl::NotFoundError(StrCat("job ", job, " is not registered"));
  }
  const std::set<PhaseId> phases = it->second.phases;
  for (PhaseId id : phases) {
    Phase& phase = phases_.at(id);
    if (phase.state == PhaseState::kRunning) {
      EndRunning(phase, PhaseOutcome::kCancelled, t);
    } else {
      DropQueued(phase);
    }
  }
  const bool was_head = !jobs_by_rank_.empty() && jobs_by_rank_.begin()->first == it->second.rank;
  jobs_by_rank_.erase(it->second.rank);
  jobs_.erase(it);
  if (policy_ == Policy::kSequential && was_head) ReleaseSequentialHead(t);
  return absl::OkStatus();
}

Status FarmScheduler::WorkerJoined(const std::string& worker, const std::string& device_key,
                                   int max_batches, MeasuringDevice device) {
  if (worker.empty() || device_key.empty()) {
    return absl::InvalidArgumentError(
        StrCat("worker '", worker, "' with device key '", device_key, "': empty name or key"));
  }
  if (workers_.count(worker) > 0) {
    return absl::AlreadyExistsError(StrCat("worker ", worker, " is already registered"));
  }
  Worker& w = workers_[worker];
  w.name = worker;
  w.key = device_key;
  w.max_batches = std::max(0, max_batches);
  w.device = device;
  KeyPool& pool = Pool(device_key);
  pool.workers.insert(worker);
  pool.free_cpu.insert(worker);
  pool.free_gpu.insert(worker);
  dirty_keys_.insert(device_key);
  return absl::OkStatus();
}

std::vector<LostPhase> FarmScheduler::WorkerLost(const std::string& worker, double now_s) {
  const double t = Now(now_s);
  auto wit = workers_.find(worker);
  if (wit == workers_.end()) return {};
  Worker& w = wit->second;
  std::map<std::pair<int64_t, PhaseId>, LostPhase> affected;
  auto note = [&](const Phase& phase, bool running) {
    affected[{phase.rank, phase.id}] =
        LostPhase{phase.job, phase.id, phase.kind, phase.batch, running};
  };
  for (PhaseId id : {w.cpu_phase, w.gpu_phase}) {
    if (id == 0) continue;
    Phase& phase = phases_.at(id);
    note(phase, true);
    EndRunning(phase, PhaseOutcome::kWorkerLost, t);
  }
  const std::set<PhaseId> pinned = w.pinned_phases;
  for (PhaseId id : pinned) {
    Phase& phase = phases_.at(id);
    note(phase, false);
    DropQueued(phase);
  }
  KeyPool& pool = Pool(w.key);
  pool.workers.erase(worker);
  pool.free_cpu.erase(worker);
  pool.free_gpu.erase(worker);
  pool.pinned_build_waiting.erase(worker);
  pool.pinned_gpu_waiting.erase(worker);
  workers_.erase(wit);
  std::vector<LostPhase> out;
  out.reserve(affected.size());
  for (auto& [order, lost] : affected) out.push_back(std::move(lost));
  return out;
}

Status FarmScheduler::Enqueue(JobId job, PhaseRequest request, double now_s) {
  const double t = Now(now_s);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return absl::NotFoundError(StrCat("job ", job, " is not registered"));
  }
  Job& j = it->second;
  if (static_cast<int>(j.phases.size()) >= j.max_phases) {
    if (j.max_phases == 1) {
      const Phase& current = phases_.at(*j.phases.begin());
      return absl::FailedPreconditionError(
          StrCat("job ", job, " already has phase ", current.id, " (", PhaseKindName(current.kind),
                 ") ", current.state == PhaseState::kRunning ? "in flight" : "queued"));
    }
    return absl::FailedPreconditionError(StrCat("job ", job, " already has ", j.max_phases,
                                                " phases queued or in flight (its limit)"));
  }
  const bool server = ResourceClassOf(request.kind) == ResourceClass::kServerCpu;
  if (!request.pinned_worker.empty()) {
    if (server) {
      return absl::InvalidArgumentError(
          StrCat("job ", job, ": ", PhaseKindName(request.kind),
                 " runs on the server CPU and cannot be pinned to worker ",
                 request.pinned_worker));
    }
    auto wit = workers_.find(request.pinned_worker);
    if (wit == workers_.end()) {
      return absl::NotFoundError(StrCat("job ", job, ": pinned worker ", request.pinned_worker,
                                        " is not registered"));
    }
    if (wit->second.key != j.key) {
      return absl::InvalidArgumentError(
          StrCat("job ", job, " (device key ", j.key, "): pinned worker ", request.pinned_worker,
                 " has device key ", wit->second.key));
    }
  }
  const PhaseId id = next_phase_++;
  Phase& phase = phases_[id];
  phase.id = id;
  phase.job = job;
  phase.rank = j.rank;
  phase.kind = request.kind;
  phase.batch = request.batch;
  phase.key = j.key;
  phase.pinned = std::move(request.pinned_worker);
  phase.queued_s = t;
  if (!phase.pinned.empty()) {
    workers_.at(phase.pinned).pinned_phases.insert(id);
    if (phase.kind == PhaseKind::kProfile) HoldBatch(phase, phase.pinned);
  }
  j.phases.insert(id);
  switch (policy_) {
    case Policy::kInterleaved:
    case Policy::kCriticalPath:
      MakeReady(phase, t);
      break;
    case Policy::kSequential:
      if (jobs_by_rank_.begin()->first == j.rank) {
        MakeReady(phase, t);
      } else {
        held_.insert({j.rank, id});
      }
      break;
    case Policy::kSynchronous:
      held_.insert({j.rank, id});  // released by the next round (MaybeStartRound)
      break;
  }
  return absl::OkStatus();
}

Status FarmScheduler::Finished(PhaseId phase, PhaseOutcome outcome, double now_s) {
  const double t = Now(now_s);
  auto it = phases_.find(phase);
  if (it == phases_.end() || it->second.state != PhaseState::kRunning) {
    return absl::NotFoundError(StrCat("phase ", phase, " is not in flight"));
  }
  EndRunning(it->second, outcome, t);
  return absl::OkStatus();
}

int FarmScheduler::ServerLevel(double server_s) {
  if (!(server_s >= kServerLevelSeconds)) return 0;
  return 1 +
         static_cast<int>(std::min(30.0, std::floor(std::log2(server_s / kServerLevelSeconds))));
}

void FarmScheduler::MakeReady(Phase& phase, double now_s) {
  phase.state = PhaseState::kReady;
  const Job& job = jobs_.at(phase.job);
  // kCriticalPath: least slack first (the header's Policies).
  const double urgency_s = policy_ == Policy::kCriticalPath ? job.urgency_s : 0.0;
  int share = 0;  // fair share (the header's "Fair share")
  switch (ResourceClassOf(phase.kind)) {
    case ResourceClass::kServerCpu:
      // Synchronous rounds keep Listing 4's order of jobs.
      if (policy_ != Policy::kSynchronous) share = ServerLevel(job.server_s);
      break;
    case ResourceClass::kWorkerCpu:
      share = job.running_builds;
      break;
    case ResourceClass::kWorkerGpu:
      share = job.running_devices;
      break;
  }
  phase.queue_key = QueueKey(share, now_s - urgency_s, phase.rank, phase.id);
  Insert(phase);
}

void FarmScheduler::ChangeShare(JobId job, PhaseKind kind, int delta) {
  auto jit = jobs_.find(job);
  if (jit == jobs_.end()) return;
  Job& j = jit->second;
  const ResourceClass resource_class = ResourceClassOf(kind);
  if (resource_class == ResourceClass::kServerCpu) return;
  int& running = resource_class == ResourceClass::kWorkerCpu ? j.running_builds : j.running_devices;
  running += delta;
  for (PhaseId id : j.phases) {
    Phase& phase = phases_.at(id);
    if (phase.state != PhaseState::kReady || ResourceClassOf(phase.kind) != resource_class) {
      continue;
    }
    Unqueue(phase);
    std::get<0>(phase.queue_key) = running;
    Insert(phase);
  }
}

void FarmScheduler::Insert(Phase& phase) {
  switch (ResourceClassOf(phase.kind)) {
    case ResourceClass::kServerCpu:
      server_queue_.insert(phase.queue_key);
      return;
    case ResourceClass::kWorkerCpu: {
      KeyPool& pool = Pool(phase.key);
      if (phase.pinned.empty()) {
        pool.build.insert(phase.queue_key);
      } else {
        workers_.at(phase.pinned).pinned_build.insert(phase.queue_key);
        pool.pinned_build_waiting.insert(phase.pinned);
      }
      break;
    }
    case ResourceClass::kWorkerGpu: {
      KeyPool& pool = Pool(phase.key);
      if (phase.pinned.empty()) {
        pool.gpu.insert(phase.queue_key);
      } else {
        workers_.at(phase.pinned).pinned_gpu.insert(phase.queue_key);
        pool.pinned_gpu_waiting.insert(phase.pinned);
      }
      break;
    }
  }
  dirty_keys_.insert(phase.key);
}

void FarmScheduler::Unqueue(Phase& phase) {
  switch (ResourceClassOf(phase.kind)) {
    case ResourceClass::kServerCpu:
      server_queue_.erase(phase.queue_key);
      return;
    case ResourceClass::kWorkerCpu:
    case ResourceClass::kWorkerGpu: {
      const bool gpu = ResourceClassOf(phase.kind) == ResourceClass::kWorkerGpu;
      KeyPool& pool = Pool(phase.key);
      if (phase.pinned.empty()) {
        (gpu ? pool.gpu : pool.build).erase(phase.queue_key);
      } else {
        Worker& w = workers_.at(phase.pinned);
        Queue& q = gpu ? w.pinned_gpu : w.pinned_build;
        q.erase(phase.queue_key);
        if (q.empty()) (gpu ? pool.pinned_gpu_waiting : pool.pinned_build_waiting).erase(w.name);
      }
      return;
    }
  }
}

void FarmScheduler::EndRoundPart(Phase& phase) {
  if (!phase.in_round) return;
  phase.in_round = false;
  --round_outstanding_;
}

void FarmScheduler::HoldBatch(Phase& phase, const std::string& worker) {
  phase.batch_worker = worker;
  ++workers_.at(worker).held_batches;
}

void FarmScheduler::ReleaseBatch(Phase& phase) {
  if (phase.batch_worker.empty()) return;
  auto wit = workers_.find(phase.batch_worker);
  if (wit != workers_.end()) {
    --wit->second.held_batches;
    dirty_keys_.insert(wit->second.key);  // a build may fit there now
  }
  phase.batch_worker.clear();
}

int FarmScheduler::held_batches(std::string_view worker) const {
  auto it = workers_.find(std::string(worker));
  return it == workers_.end() ? 0 : it->second.held_batches;
}

void FarmScheduler::DropQueued(Phase& phase) {
  ReleaseBatch(phase);
  if (phase.state == PhaseState::kHeld) {
    held_.erase({phase.rank, phase.id});
  } else {
    Unqueue(phase);
  }
  EndRoundPart(phase);
  if (!phase.pinned.empty()) {
    auto wit = workers_.find(phase.pinned);
    if (wit != workers_.end()) wit->second.pinned_phases.erase(phase.id);
  }
  auto jit = jobs_.find(phase.job);
  if (jit != jobs_.end()) jit->second.phases.erase(phase.id);
  const PhaseId id = phase.id;  // `phase` dies with the erase
  phases_.erase(id);
}

void FarmScheduler::EndRunning(Phase& phase, PhaseOutcome outcome, double now_s) {
  ReleaseBatch(phase);
  PhaseRecord record;
  record.phase = phase.id;
  record.job = phase.job;
  record.kind = phase.kind;
  record.resource = phase.resource;
  record.worker = phase.worker;
  record.queued_s = phase.queued_s;
  record.start_s = phase.start_s;
  record.end_s = now_s;
  record.outcome = outcome;
  record.batch = phase.batch;
  records_.push_back(std::move(record));

  switch (ResourceClassOf(phase.kind)) {
    case ResourceClass::kServerCpu:
      slots_[phase.slot] = 0;
      free_slots_.insert(phase.slot);
      if (auto jit = jobs_.find(phase.job); jit != jobs_.end()) {
        jit->second.server_s += std::max(0.0, now_s - phase.start_s);
      }
      break;
    case ResourceClass::kWorkerCpu:
    case ResourceClass::kWorkerGpu: {
      const bool gpu = ResourceClassOf(phase.kind) == ResourceClass::kWorkerGpu;
      auto wit = workers_.find(phase.worker);
      if (wit != workers_.end()) {
        Worker& w = wit->second;
        PhaseId& slot = gpu ? w.gpu_phase : w.cpu_phase;
        if (slot == phase.id) {
          slot = 0;
          KeyPool& pool = Pool(w.key);
          (gpu ? pool.free_gpu : pool.free_cpu).insert(w.name);
          dirty_keys_.insert(w.key);
        }
      }
      break;
    }
  }
  EndRoundPart(phase);
  --in_flight_;
  auto jit = jobs_.find(phase.job);
  if (jit != jobs_.end()) jit->second.phases.erase(phase.id);
  ChangeShare(phase.job, phase.kind, -1);
  const PhaseId id = phase.id;  // `phase` dies with the erase
  phases_.erase(id);
}

void FarmScheduler::ReleaseSequentialHead(double now_s) {
  if (jobs_by_rank_.empty()) return;
  const int64_t head = jobs_by_rank_.begin()->first;
  auto hit = held_.lower_bound({head, 0});
  while (hit != held_.end() && hit->first == head) {
    Phase& phase = phases_.at(hit->second);
    hit = held_.erase(hit);
    MakeReady(phase, now_s);
  }
}

void FarmScheduler::MaybeStartRound(double now_s) {
  if (round_outstanding_ != 0 || jobs_.empty() || held_.size() != jobs_.size()) return;
  // Every job has its next phase enqueued and none is in flight: release all.
  for (const auto& [rank, id] : held_) {  // one per job (max_phases is 1)
    Phase& phase = phases_.at(id);
    phase.in_round = true;
    ++round_outstanding_;
    MakeReady(phase, now_s);
  }
  held_.clear();
}

void FarmScheduler::Start(Phase& phase, const std::string& worker, int slot, double now_s,
                          std::vector<Assignment>& out) {
  Unqueue(phase);
  phase.state = PhaseState::kRunning;
  phase.start_s = now_s;
  ++in_flight_;
  if (!phase.pinned.empty()) workers_.at(phase.pinned).pinned_phases.erase(phase.id);
  switch (ResourceClassOf(phase.kind)) {
    case ResourceClass::kServerCpu:
      phase.slot = slot;
      phase.resource = ServerSlotResource(slot);
      slots_[slot] = phase.id;
      free_slots_.erase(slot);
      break;
    case ResourceClass::kWorkerCpu: {
      Worker& w = workers_.at(worker);
      phase.worker = worker;
      phase.resource = WorkerCpuResource(worker);
      w.cpu_phase = phase.id;
      if (phase.kind == PhaseKind::kBuild) HoldBatch(phase, worker);
      Pool(w.key).free_cpu.erase(worker);
      break;
    }
    case ResourceClass::kWorkerGpu: {
      Worker& w = workers_.at(worker);
      phase.worker = worker;
      phase.resource = WorkerDeviceResource(worker, w.device);
      w.gpu_phase = phase.id;
      Pool(w.key).free_gpu.erase(worker);
      break;
    }
  }
  ChangeShare(phase.job, phase.kind, +1);
  Assignment a;
  a.phase = phase.id;
  a.job = phase.job;
  a.kind = phase.kind;
  a.resource = phase.resource;
  a.worker = phase.worker;
  a.start_s = now_s;
  a.batch = phase.batch;
  out.push_back(std::move(a));
}

void FarmScheduler::DispatchKey(const std::string& key, bool gpu, double now_s,
                                std::vector<Assignment>& out) {
  KeyPool& pool = Pool(key);
  Queue& unpinned = gpu ? pool.gpu : pool.build;
  std::set<std::string>& free = gpu ? pool.free_gpu : pool.free_cpu;
  std::set<std::string>& waiting = gpu ? pool.pinned_gpu_waiting : pool.pinned_build_waiting;
  // A build needs room for one more batch on its worker.
  auto can_take = [&](const Worker& w) { return gpu || w.HasRoomForBuild(); };
  while (!free.empty()) {
    // The oldest ready phase pinned to a free worker.
    const QueueKey* best = nullptr;
    const std::string* best_worker = nullptr;
    for (const std::string& name : waiting) {
      if (free.count(name) == 0) continue;
      const Worker& w = workers_.at(name);
      if (!can_take(w)) continue;
      const Queue& q = gpu ? w.pinned_gpu : w.pinned_build;
      if (best == nullptr || *q.begin() < *best) {
        best = &*q.begin();
        best_worker = &w.name;
      }
    }
    // Prefer a free worker with no pinned work waiting for it; for a build,
    // then the one whose GPU has the least work (running + pinned queue),
    // since the profile of that build will be pinned to it. Ties: by name.
    const std::string* chosen = nullptr;
    if (!unpinned.empty() && (best == nullptr || *unpinned.begin() < *best)) {
      std::pair<int, size_t> chosen_load;
      for (const std::string& name : free) {
        const Worker& w = workers_.at(name);
        if (!can_take(w)) continue;
        const std::pair<int, size_t> load(
            waiting.count(name) ? 1 : 0,
            gpu ? 0 : w.pinned_gpu.size() + (w.gpu_phase != 0 ? 1 : 0));
        if (chosen == nullptr || load < chosen_load) {
          chosen = &name;
          chosen_load = load;
          if (load == std::pair<int, size_t>(0, 0)) break;
        }
      }
    }
    if (chosen != nullptr) {
      const std::string worker = *chosen;
      Start(phases_.at(std::get<3>(*unpinned.begin())), worker, -1, now_s, out);
    } else if (best != nullptr) {
      const std::string worker = *best_worker;
      Start(phases_.at(std::get<3>(*best)), worker, -1, now_s, out);
    } else {
      break;
    }
  }
}

std::vector<Assignment> FarmScheduler::Dispatch(double now_s) {
  const double t = Now(now_s);
  std::vector<Assignment> out;
  if (policy_ == Policy::kSynchronous) MaybeStartRound(t);
  while (!free_slots_.empty() && !server_queue_.empty()) {
    const int slot = *free_slots_.begin();
    Start(phases_.at(std::get<3>(*server_queue_.begin())), std::string(), slot, t, out);
  }
  for (const std::string& key : dirty_keys_) {
    DispatchKey(key, /*gpu=*/false, t, out);
    DispatchKey(key, /*gpu=*/true, t, out);
  }
  dirty_keys_.clear();
  return out;
}

std::vector<PhaseRecord> FarmScheduler::TakeRecords() {
  std::vector<PhaseRecord> out;
  out.swap(records_);
  return out;
}

QueueLengths FarmScheduler::queue_lengths() const {
  QueueLengths q;
  q.server_cpu = static_cast<int>(server_queue_.size());
  for (const auto& [key, pool] : pools_) {
    int builds = static_cast<int>(pool.build.size());
    for (const std::string& name : pool.workers) {
      const Worker& w = workers_.at(name);
      builds += static_cast<int>(w.pinned_build.size());
      q.gpu_by_worker[name] = static_cast<int>(w.pinned_gpu.size());
    }
    q.build_by_key[key] = builds;
    q.gpu_by_key[key] = static_cast<int>(pool.gpu.size());
  }
  q.held = static_cast<int>(held_.size());
  q.in_flight = in_flight_;
  return q;
}

int FarmScheduler::num_workers(std::string_view device_key) const {
  auto it = pools_.find(std::string(device_key));
  return it == pools_.end() ? 0 : static_cast<int>(it->second.workers.size());
}

int FarmScheduler::num_idle_devices(std::string_view device_key) const {
  auto it = pools_.find(std::string(device_key));
  return it == pools_.end() ? 0 : static_cast<int>(it->second.free_gpu.size());
}

bool FarmScheduler::HasWorker(std::string_view worker) const {
  return workers_.count(std::string(worker)) > 0;
}

StatusOr<JobView> FarmScheduler::GetJob(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return absl::NotFoundError(StrCat("job ", job, " is not registered"));
  }
  JobView view;
  view.job = job;
  view.device_key = it->second.key;
  for (PhaseId id : it->second.phases) {
    view.phases.push_back(id);
    view.running += phases_.at(id).state == PhaseState::kRunning;
  }
  if (!it->second.phases.empty()) {
    const Phase& phase = phases_.at(*it->second.phases.begin());
    view.phase = phase.id;
    view.kind = phase.kind;
    view.in_flight = phase.state == PhaseState::kRunning;
    view.resource = phase.resource;
    view.worker = phase.worker;
  }
  return view;
}

}  // namespace iosfarm::scheduler::farm
