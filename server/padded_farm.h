// BENCHMARK ONLY (iosfarm-server --synthetic-phase-seconds; off unless set):
// wrappers that make every phase of a kind last at least its given wall
// seconds from dispatch, so a real farm reproduces chosen phase-time ratios
// (bench/farm_cluster_bench.py policy). They sit outside the coordinator:
// FarmServer installs them only when the flag is set, and production servers
// never construct them.
//
//  - PaddedServerPhaseWork: a server phase (enumerate, update) that ends
//    sooner sleeps in its slot until its minimum has passed.
//  - PaddedWorkerEvents: between the worker streams and the coordinator. It
//    notes when each phase order is sent on a worker's link and holds the
//    worker's result back (on the padding's timer thread) until the phase's
//    minimum has passed since then.
//
// Thread-safe.
#ifndef IOSFARM_SERVER_PADDED_FARM_H_
#define IOSFARM_SERVER_PADDED_FARM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/phase_padding.h"
#include "server/server_phases.h"
#include "server/worker_events.h"

namespace iosfarm::server {

// RunServerPhaseWork, then sleeps out the rest of the kind's minimum.
// `padding` and `clock` must outlive the returned function.
ServerPhaseWork PaddedServerPhaseWork(const PhasePadding* padding, const Clock* clock);

class PaddedWorkerEvents final : public WorkerEvents {
 public:
  // `inner`, `padding` and `clock` must outlive this object; `padding` runs
  // the held results (stop it before `inner` goes).
  PaddedWorkerEvents(WorkerEvents* inner, PhasePadding* padding, const Clock* clock)
      : inner_(inner), padding_(padding), clock_(clock) {}

  Status WorkerJoined(const WorkerRegistration& registration,
                      std::shared_ptr<WorkerLink> link) override;
  void WorkerHeartbeat(const std::string& worker) override { inner_->WorkerHeartbeat(worker); }
  void WorkerLost(const std::string& worker, const std::string& reason) override;
  void PhaseResult(const std::string& worker, const PhaseReport& report) override;

  // A phase order of `kind` was sent to `worker` now (the recording link).
  void Sent(const std::string& worker, int64_t phase, scheduler::farm::PhaseKind kind)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Orders sent whose results have not come back (tests).
  size_t outstanding() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct SentOrder {
    std::string worker;
    scheduler::farm::PhaseKind kind;
    double sent_s = 0;
  };
  WorkerEvents* const inner_;
  PhasePadding* const padding_;
  const Clock* const clock_;
  absl::Mutex mu_;
  std::map<int64_t, SentOrder> sent_ ABSL_GUARDED_BY(mu_);  // by phase id
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_PADDED_FARM_H_
