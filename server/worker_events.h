// WorkerEvents: what the worker streams tell the server core. The gRPC
// WorkerService calls it for every stream; FarmCoordinator implements it,
// and the benchmark-only PaddedWorkerEvents (phase_padding.h) wraps it.
#ifndef IOSFARM_SERVER_WORKER_EVENTS_H_
#define IOSFARM_SERVER_WORKER_EVENTS_H_

#include <memory>
#include <string>

#include "common/status.h"
#include "server/worker_protocol.h"
#include "server/worker_registry.h"

namespace iosfarm::server {

class WorkerEvents {
 public:
  virtual ~WorkerEvents() = default;
  // A stream registered; `link` sends to it. An error refuses the worker.
  virtual Status WorkerJoined(const WorkerRegistration& registration,
                              std::shared_ptr<WorkerLink> link) = 0;
  virtual void WorkerHeartbeat(const std::string& worker) = 0;
  // The worker's stream ended (or it went silent).
  virtual void WorkerLost(const std::string& worker, const std::string& reason) = 0;
  // A phase result from `worker`.
  virtual void PhaseResult(const std::string& worker, const PhaseReport& report) = 0;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_WORKER_EVENTS_H_
