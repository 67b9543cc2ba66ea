#include "worker/backends/sim/sim_backend.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "common/strings.h"
#include "scheduler/ios/stages/stable_hash.h"
#include "worker/backends/profiling.h"
#include "worker/backends/sim/kernel_model.h"
#include "worker/backends/sim/noise.h"
#include "worker/backends/sim/sim_stage.h"

namespace iosfarm::worker::sim {
namespace {

using scheduler::ios::HashCombine;

class SimStagePlan final : public StagePlan {
 public:
  explicit SimStagePlan(SimStage stage) : stage_(std::move(stage)) {}
  const SimStage& stage() const { return stage_; }

 private:
  SimStage stage_;
};

}  // namespace

Status ValidateSimOptions(const SimOptions& o) {
  RETURN_IF_ERROR(ValidateSimDeviceModel(o.device));
  if (!(o.noise_sigma >= 0 && std::isfinite(o.noise_sigma))) {
    return absl::InvalidArgumentError(
        StrCat("sim option noise_sigma = ", o.noise_sigma, " must be >= 0"));
  }
  if (!(o.failure_probability >= 0 && o.failure_probability <= 1)) {
    return absl::InvalidArgumentError(StrCat("sim option failure_probability = ",
                                             o.failure_probability, " must be in [0, 1]"));
  }
  if (o.fail_every_n < 0) {
    return absl::InvalidArgumentError(
        StrCat("sim option fail_every_n = ", o.fail_every_n, " must be >= 0"));
  }
  if (!(o.time_scale >= 0 && std::isfinite(o.time_scale))) {
    return absl::InvalidArgumentError(
        StrCat("sim option time_scale = ", o.time_scale, " must be >= 0"));
  }
  return absl::OkStatus();
}

StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(SimOptions options) {
  RETURN_IF_ERROR(ValidateSimOptions(options));
  return std::unique_ptr<SimBackend>(new SimBackend(std::move(options)));
}

std::string SimBackend::device_description() const { return DescribeSimDevice(options_.device); }

scheduler::ios::DeviceFloor SimBackend::device_floor() const {
  return SimDeviceFloor(options_.device, std::exp(-3 * options_.noise_sigma));
}

Status SimBackend::CheckSupported(const graph::Graph& /*graph*/) const {
  return absl::OkStatus();
}

StatusOr<std::vector<std::unique_ptr<StagePlan>>> SimBackend::DoBuild(
    const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) {
  std::vector<std::unique_ptr<StagePlan>> plans;
  plans.reserve(stages.size());
  for (const scheduler::ios::Stage& stage : stages) {  // Build has validated them
    plans.push_back(
        std::make_unique<SimStagePlan>(CostSimStage(graph, stage, options_.device, NoiseKey())));
  }
  return plans;
}

StatusOr<std::vector<LatencyStats>> SimBackend::DoProfile(
    const std::vector<const StagePlan*>& plans, const ProfileOptions& options) {
  const int64_t call = ++profile_calls_;
  if ((options_.fail_every_n > 0 && call % options_.fail_every_n == 0) ||
      InjectFailure(options_.seed, static_cast<uint64_t>(call), options_.failure_probability)) {
    return absl::UnavailableError(
        StrCat("sim backend: injected failure (Profile call ", call, ")"));
  }
  std::vector<LatencyStats> results;
  results.reserve(plans.size());
  double simulated_ms = 0;
  for (const StagePlan* plan : plans) {
    const SimStage* stage = &PlanAs<SimStagePlan>(plan).stage();
    uint64_t repeat = 0;
    ASSIGN_OR_RETURN(
        LatencyStats stats,
        MeasureLatency(
            [&]() -> StatusOr<double> {
              const double ms = stage->time_us / 1e3 *
                                LognormalNoise(options_.seed, stage->key, repeat++,
                                               options_.noise_sigma);
              simulated_ms += ms;
              return ms;
            },
            options));
    results.push_back(stats);
  }
  SleepScaled(simulated_ms);
  return results;
}

StatusOr<RunResult> SimBackend::DoRunSchedule(const graph::Graph& graph,
                                              const scheduler::ios::Schedule& schedule,
                                              const RunOptions& options) {
  if (options.return_outputs) {
    return absl::UnimplementedError(
        "the sim backend computes no tensor values: RunSchedule with return_outputs needs "
        "the cpu or cuda backend");
  }
  std::vector<SimStage> stages;
  stages.reserve(schedule.stages.size());
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    StatusOr<SimStage> stage =
        BuildSimStage(graph, schedule.stages[s].stage, options_.device, NoiseKey());
    if (!stage.ok()) {
      return absl::InvalidArgumentError(
          StrCat("sim RunSchedule: stage ", s, ": ", ToStd(stage.status().message())));
    }
    // Key by position too, so equal stages of one schedule get independent noise.
    stage->key = HashCombine(stage->key, s);
    stages.push_back(*std::move(stage));
  }

  uint64_t repeat = 0;
  double simulated_ms = 0;
  RunResult result;
  ASSIGN_OR_RETURN(result.latency, MeasureLatency(
                                       [&]() -> StatusOr<double> {
                                         double ms = 0;
                                         for (const SimStage& stage : stages) {
                                           ms += stage.time_us / 1e3 *
                                                 LognormalNoise(options_.seed, stage.key, repeat,
                                                                options_.noise_sigma);
                                         }
                                         ++repeat;
                                         simulated_ms += ms;
                                         return ms;
                                       },
                                       options.profile));
  SleepScaled(simulated_ms);
  return result;
}

StatusOr<double> SimBackend::StageLatencyMs(const graph::Graph& graph,
                                            const scheduler::ios::Stage& stage) const {
  if (stage.single_core) {
    return absl::InvalidArgumentError("sim backend: a single-core stage needs a device with cores");
  }
  ASSIGN_OR_RETURN(SimStage sim, BuildSimStage(graph, stage, options_.device, SimStageKey::kNone));
  return sim.time_us / 1e3;
}

int64_t SimBackend::profile_calls() const {
  absl::MutexLock lock(&device_mu_);
  return profile_calls_;
}

void SimBackend::SleepScaled(double simulated_ms) const {
  const double wall_ms = simulated_ms * options_.time_scale;
  if (wall_ms <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wall_ms));
}

}  // namespace iosfarm::worker::sim
