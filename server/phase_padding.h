// PhasePadding — BENCHMARK ONLY (iosfarm-server --synthetic-phase-seconds;
// off unless set): every phase of a kind lasts at least its given wall
// seconds from dispatch, so that a real farm reproduces chosen phase-time
// ratios (bench/farm_cluster_bench.py policy). A server phase that ends
// sooner sleeps in its slot (Left); a worker phase's result is held back on
// the padding thread (RunAt) until its time has passed. The wrappers that use
// it sit outside the coordinator (padded_farm.h). It only slows a farm down;
// production servers never construct one.
//
// Thread-safe.
#ifndef IOSFARM_SERVER_PHASE_PADDING_H_
#define IOSFARM_SERVER_PHASE_PADDING_H_

#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/farm/phase.h"

namespace iosfarm::server {

// Parses "kind=seconds,..." (kinds: enumerate, build, profile, update,
// measure; seconds finite, >= 0). Empty text: empty map. InvalidArgument
// naming the flag and the bad entry otherwise.
StatusOr<std::map<scheduler::farm::PhaseKind, double>> ParseSyntheticPhaseSeconds(
    const std::string& text);

class PhasePadding {
 public:
  // `clock` must outlive the padding.
  PhasePadding(std::map<scheduler::farm::PhaseKind, double> minimum_s, const Clock& clock);
  ~PhasePadding();  // Stop()
  PhasePadding(const PhasePadding&) = delete;
  PhasePadding& operator=(const PhasePadding&) = delete;

  // Seconds a phase of `kind` dispatched at `dispatched_s` still has to last.
  double Left(scheduler::farm::PhaseKind kind, double dispatched_s) const;
  // Runs `task` at clock time >= due_s on the padding thread (started on
  // first use). After Stop, tasks are dropped.
  void RunAt(double due_s, std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops what has not run and joins the thread; idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::map<scheduler::farm::PhaseKind, double> minimum_s_;
  const Clock& clock_;
  absl::Mutex mu_;
  std::multimap<double, std::function<void()>> delayed_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_PHASE_PADDING_H_
