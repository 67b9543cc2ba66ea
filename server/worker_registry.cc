#include "server/worker_registry.h"

#include <utility>

#include "common/strings.h"
#include "common/text.h"
#include "scheduler/ios/bounded/device_floor.h"

namespace iosfarm::server {

StatusOr<WorkerRegistration> WorkerRegistry::Bounded(const WorkerRegistration& registration) {
  // Bounded and printable: the key names a latency table and appears in
  // errors and listings; a 200 KB key once broke the unknown-key error.
  RETURN_IF_ERROR(CheckIdentifier("register: worker_id", registration.worker_id,
                                  kMaxWorkerIdBytes));
  RETURN_IF_ERROR(CheckIdentifier("register: device_key", registration.device_key,
                                  kMaxDeviceKeyBytes));
  RETURN_IF_ERROR(CheckIdentifier("register: backend", registration.backend, kMaxBackendBytes));
  if (registration.cores < 0 || registration.cores > kMaxCores) {
    return absl::InvalidArgumentError(
        StrCat("register: cores must be in 0..", kMaxCores, ", got ", registration.cores));
  }
  if (Status floor = scheduler::ios::ValidateDeviceFloor(registration.device_floor); !floor.ok()) {
    return absl::InvalidArgumentError(StrCat("register: ", floor.message()));
  }
  WorkerRegistration bounded = registration;
  bounded.device_description =
      Printable(Truncated(registration.device_description, kMaxDescriptionBytes));
  bounded.version = Printable(Truncated(registration.version, kMaxVersionBytes));
  return bounded;
}

PhaseReport WorkerRegistry::BoundedReport(PhaseReport report) {
  // A worker's error text is stored with the job and shown to its owner
  // (a worker once sent 1 MB).
  if (!report.error.empty()) report.error = Printable(Truncated(report.error, kMaxWorkerErrorBytes));
  return report;
}

Status WorkerRegistry::CheckIdFree(const std::string& id) const {
  if (!workers_.contains(id)) return absl::OkStatus();
  return absl::AlreadyExistsError(StrCat("a worker with id '", id, "' is already connected"));
}

Status WorkerRegistry::Add(const WorkerRegistration& registration,
                           std::shared_ptr<WorkerLink> link, int64_t now_unix_ms) {
  RETURN_IF_ERROR(CheckIdFree(registration.worker_id));
  WorkerEntry entry;
  entry.registration = registration;
  entry.link = std::move(link);
  entry.connected_unix_ms = entry.last_heartbeat_unix_ms = now_unix_ms;
  workers_[registration.worker_id] = std::move(entry);
  return absl::OkStatus();
}

std::shared_ptr<WorkerLink> WorkerRegistry::Remove(const std::string& id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return nullptr;
  std::shared_ptr<WorkerLink> link = std::move(it->second.link);
  workers_.erase(it);
  return link;
}

const WorkerEntry* WorkerRegistry::Find(const std::string& id) const {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

bool WorkerRegistry::HasDeviceKey(const std::string& device_key) const {
  for (const auto& [id, worker] : workers_) {
    if (worker.registration.device_key == device_key) return true;
  }
  return false;
}

void WorkerRegistry::Heartbeat(const std::string& id, int64_t now_unix_ms) {
  auto it = workers_.find(id);
  if (it != workers_.end()) it->second.last_heartbeat_unix_ms = now_unix_ms;
}

std::vector<std::string> WorkerRegistry::Silent(int64_t now_unix_ms, double timeout_s) const {
  std::vector<std::string> silent;
  for (const auto& [id, worker] : workers_) {
    if (now_unix_ms - worker.last_heartbeat_unix_ms > timeout_s * 1000) silent.push_back(id);
  }
  return silent;
}

void WorkerRegistry::Started(const std::string& id, scheduler::farm::PhaseKind kind,
                             int64_t job) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  if (kind == scheduler::farm::PhaseKind::kBuild) {
    it->second.build_job = job;
  } else {
    it->second.device_phase = kind;
    it->second.device_job = job;
  }
}

void WorkerRegistry::Finished(const std::string& id, scheduler::farm::PhaseKind kind) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  Released(id, kind);
  ++it->second.phases_done;
}

void WorkerRegistry::Released(const std::string& id, scheduler::farm::PhaseKind kind) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  if (kind == scheduler::farm::PhaseKind::kBuild) {
    it->second.build_job = 0;
  } else {
    it->second.device_phase.reset();
    it->second.device_job = 0;
  }
}

std::vector<std::shared_ptr<WorkerLink>> WorkerRegistry::Links() const {
  std::vector<std::shared_ptr<WorkerLink>> links;
  for (const auto& [id, worker] : workers_) links.push_back(worker.link);
  return links;
}

std::vector<WorkerSnapshot> WorkerRegistry::Snapshot() const {
  std::vector<WorkerSnapshot> out;
  for (const auto& [id, w] : workers_) {
    WorkerSnapshot s;
    s.id = id;
    s.device_key = w.registration.device_key;
    s.backend = w.registration.backend;
    s.description = w.registration.device_description;
    if (w.device_phase) {
      s.state = std::string(scheduler::farm::PhaseKindName(*w.device_phase));
      s.job_id = w.device_job;
    } else {
      s.state = w.build_job != 0 ? "build" : "idle";
      s.job_id = w.build_job;
    }
    s.build_job_id = w.build_job;
    s.connected_unix_ms = w.connected_unix_ms;
    s.last_heartbeat_unix_ms = w.last_heartbeat_unix_ms;
    s.phases_done = w.phases_done;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace iosfarm::server
