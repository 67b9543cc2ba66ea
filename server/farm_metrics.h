// FarmMetrics: the server's Prometheus metrics (docs/operations.md lists
// them), served over HTTP by prometheus-cpp's Exposer when the server is
// started with --metrics-listen.
//
//   iosfarm_queue_length{resource="server_cpu|build|gpu"}         gauge
//   iosfarm_phases_started_total{phase}                           counter
//   iosfarm_phases_finished_total{phase,outcome}                  counter
//   iosfarm_phase_seconds{phase}                                  histogram (run time)
//   iosfarm_gpu_busy_seconds_total{worker}                        counter (profile + measure)
//   iosfarm_signature_lookups_total{result="hit|miss"}            counter
//   iosfarm_stages_profiled_total                                 counter
//   iosfarm_jobs_finished_total{state}                            counter
//   iosfarm_job_seconds                                           histogram (submit to end)
//   iosfarm_workers_connected                                     gauge
//   iosfarm_jobs_active                                           gauge
//
// Thread-safe (prometheus-cpp metrics are).
#ifndef IOSFARM_SERVER_FARM_METRICS_H_
#define IOSFARM_SERVER_FARM_METRICS_H_

#include <memory>
#include <string>

#include "common/status.h"
#include "scheduler/farm/farm_scheduler.h"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace iosfarm::server {

class FarmMetrics {
 public:
  FarmMetrics();
  ~FarmMetrics();

  // Serves /metrics on `address` (HOST:PORT; port 0 picks one). Unavailable
  // naming the address when it cannot be bound.
  Status Serve(const std::string& address);
  // The port actually bound (0 when not serving).
  int port() const;

  void QueueLengths(const scheduler::farm::QueueLengths& lengths);
  void PhaseStarted(scheduler::farm::PhaseKind kind);
  void PhaseFinished(const scheduler::farm::PhaseRecord& record);
  void SignatureLookups(int64_t hits, int64_t misses);
  void StagesProfiled(int64_t stages);
  void JobFinished(const std::string& state, double seconds);
  void Workers(int connected);
  void ActiveJobs(int active);

  // The text exposition format of everything (for tests and debugging).
  std::string Text() const;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_METRICS_H_
