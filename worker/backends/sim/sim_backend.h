// The `sim` backend: executes nothing, times stages with a deterministic
// analytic device model (docs/profiling.md, "The sim device model"). For
// tests and simulation only: farm tests, search experiments without a GPU.
//
// Build validates each stage against the graph (scheduler/ios/stage_validation.h) and
// precomputes its kernels and simulated time (sim_stage.h). Profile and
// RunSchedule run the shared profiling protocol (profiling.h, MeasureLatency)
// on simulated samples: each sample is the model time times optional seeded
// lognormal noise, a pure function of (seed, stage content key, repeat index),
// so the same calls give the same statistics on every run. The repeat index
// counts from 0 (warm-up included) in every Profile/RunSchedule call.
//
// Side effects, for farm tests:
//  - failure injection: a Profile call fails with Unavailable "sim backend:
//    injected failure (Profile call N)" when N is a multiple of
//    fail_every_n, or with probability failure_probability (seeded by call
//    index). Calls are numbered from 1 per instance; only Profile fails.
//  - time scale: Profile and RunSchedule sleep time_scale * (simulated time
//    of every warm-up and timed sample) of wall time before returning, with
//    the device held (0 = return at once).
//
// Thread safety: all methods may be called from any thread. Profile and
// RunSchedule hold the base's device lock for their whole run (backend.h), so
// one instance never runs two at once (a second caller waits); Build,
// CheckSupported and StageLatencyMs take no lock.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_SIM_BACKEND_H_
#define IOSFARM_WORKER_BACKENDS_SIM_SIM_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/status.h"
#include "worker/backends/backend.h"
#include "worker/backends/sim/device_model.h"
#include "worker/backends/sim/sim_stage.h"

namespace iosfarm::worker::sim {

struct SimOptions {
  SimDeviceModel device;           // the v100 preset unless set
  double noise_sigma = 0;          // lognormal sigma of each sample, >= 0 (0 = exact)
  uint64_t seed = 1;               // for noise and failure injection
  double failure_probability = 0;  // per Profile call, in [0, 1]
  int fail_every_n = 0;            // every n-th Profile call fails, >= 0 (0 = never)
  double time_scale = 0;           // wall time slept per simulated time, >= 0
};

// InvalidArgument naming the field when an option (or the device model) is
// out of range.
Status ValidateSimOptions(const SimOptions& options);

class SimBackend final : public Backend {
 public:
  // InvalidArgument when `options` are invalid.
  static StatusOr<std::unique_ptr<SimBackend>> Create(SimOptions options);

  std::string name() const override { return "sim"; }
  std::string device_description() const override;
  const SimOptions& options() const { return options_; }

  // The device model's floor (SimDeviceFloor); with noise, lowered to
  // exp(-3 sigma) of it (a sample falls below that once in 740).
  scheduler::ios::DeviceFloor device_floor() const override;

  // Always OK: the model costs every op type (graph/cost.h).
  Status CheckSupported(const graph::Graph& graph) const override;

  // The sim specifics of the Backend methods (backend.h has the shared
  // checks): Profile fails with Unavailable for an injected failure;
  // RunSchedule's latency is the sum over stages of each stage's time and
  // noise (keyed by stage content and position), and it is Unimplemented
  // when options.return_outputs (the sim backend computes no values);
  // options.cuda_graph is ignored; RunSchedule never injects failures.

  // The noise-free model latency of one stage, ms (what Profile's median
  // converges to without noise). InvalidArgument for an invalid stage or a
  // single-core one (Build refuses those too: the model has no cores).
  StatusOr<double> StageLatencyMs(const graph::Graph& graph,
                                  const scheduler::ios::Stage& stage) const;

  // Profile calls made so far (the numbering failure injection uses); waits
  // for a Profile or RunSchedule in flight.
  int64_t profile_calls() const;

 private:
  explicit SimBackend(SimOptions options) : options_(std::move(options)) {}

  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) override;
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>& plans,
                                                const ProfileOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& graph,
                                    const scheduler::ios::Schedule& schedule,
                                    const RunOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // Sleeps time_scale * simulated_ms (device held by the caller).
  void SleepScaled(double simulated_ms) const;
  // Stages need a content key only to draw noise.
  SimStageKey NoiseKey() const {
    return options_.noise_sigma > 0 ? SimStageKey::kContent : SimStageKey::kNone;
  }

  const SimOptions options_;
  int64_t profile_calls_ ABSL_GUARDED_BY(device_mu_) = 0;
};

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_SIM_BACKEND_H_
