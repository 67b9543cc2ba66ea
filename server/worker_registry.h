// WorkerRegistry: the workers connected to the server — their registration,
// stream, heartbeat and what each is doing — and the bounds on what a
// registration may hold.
//
// Thread safety: none; the FarmCoordinator's lock guards it.
#ifndef IOSFARM_SERVER_WORKER_REGISTRY_H_
#define IOSFARM_SERVER_WORKER_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/farm/phase.h"
#include "server/worker_protocol.h"

namespace iosfarm::server {

// The server's end of one worker's stream.
class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  // Queues `command` for the worker; false when the stream is gone.
  virtual bool Send(const WorkerCommand& command) = 0;
  // Ends the stream (the worker is considered lost).
  virtual void Close() = 0;
};

struct WorkerSnapshot {
  std::string id, device_key, backend, description;
  // What its measuring device runs ("profile", "measure"), else "build"
  // when its CPU builds, else "idle"; job_id is that phase's job.
  std::string state;
  int64_t job_id = 0;
  int64_t build_job_id = 0;  // the job whose batch its CPU builds now; 0: none
  int64_t connected_unix_ms = 0, last_heartbeat_unix_ms = 0, phases_done = 0;
};

struct WorkerEntry {
  WorkerRegistration registration;
  std::shared_ptr<WorkerLink> link;
  int64_t connected_unix_ms = 0;
  int64_t last_heartbeat_unix_ms = 0;
  int64_t phases_done = 0;
  // Its measuring device's phase (profile, measure) and job; empty: idle.
  std::optional<scheduler::farm::PhaseKind> device_phase;
  int64_t device_job = 0;
  int64_t build_job = 0;  // the job its CPU builds for; 0: none
};

class WorkerRegistry {
 public:
  // What a registration may hold: an empty, longer or control-character id,
  // key or backend is refused; longer descriptions and versions are cut. A
  // phase result's error text is cut to kMaxWorkerErrorBytes before it is
  // logged or stored. Cores outside 0..kMaxCores (what a search takes:
  // SearchOptions::cores) are refused.
  static constexpr size_t kMaxWorkerIdBytes = 128, kMaxDeviceKeyBytes = 256,
                          kMaxBackendBytes = 32, kMaxDescriptionBytes = 1024,
                          kMaxVersionBytes = 128, kMaxWorkerErrorBytes = 4096;
  static constexpr int kMaxCores = 4096;

  // The registration within the bounds above; InvalidArgument naming the
  // field ("register: device_key ...") otherwise.
  static StatusOr<WorkerRegistration> Bounded(const WorkerRegistration& registration);
  // A phase report with its error text bounded and printable.
  static PhaseReport BoundedReport(PhaseReport report);

  // AlreadyExists when a connected worker has the id.
  Status CheckIdFree(const std::string& id) const;
  // AlreadyExists as CheckIdFree.
  Status Add(const WorkerRegistration& registration, std::shared_ptr<WorkerLink> link,
             int64_t now_unix_ms);
  // The worker's link, or null when it is not connected.
  std::shared_ptr<WorkerLink> Remove(const std::string& id);
  const WorkerEntry* Find(const std::string& id) const;
  bool HasDeviceKey(const std::string& device_key) const;
  size_t size() const { return workers_.size(); }

  void Heartbeat(const std::string& id, int64_t now_unix_ms);
  // Workers whose last heartbeat is more than timeout_s before now.
  std::vector<std::string> Silent(int64_t now_unix_ms, double timeout_s) const;

  // The worker runs `kind` of `job` (a build on its CPU, a profile or
  // measure on its device: one of each at a time) / that resource is free
  // again. Finished counts the phase done; Released (a cancelled phase) does
  // not.
  void Started(const std::string& id, scheduler::farm::PhaseKind kind, int64_t job);
  void Finished(const std::string& id, scheduler::farm::PhaseKind kind);
  void Released(const std::string& id, scheduler::farm::PhaseKind kind);

  std::vector<std::shared_ptr<WorkerLink>> Links() const;
  std::vector<WorkerSnapshot> Snapshot() const;  // by id

 private:
  std::map<std::string, WorkerEntry> workers_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_WORKER_REGISTRY_H_
