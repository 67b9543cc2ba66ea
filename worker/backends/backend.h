// Backend: how a worker executes and times IOS stages and whole schedules.
//
// Three implementations: `cuda` (cuDNN/cuBLAS/own kernels, worker/backends/cuda),
// `cpu` (oneDNN, worker/backends/cpu) and `sim` (analytic device model, for
// tests and simulation only, worker/backends/sim). A conformance suite runs
// the same op and stage tests against every backend and compares with the
// plain reference executor (worker/backends/reference).
//
// Phases (DESIGN.md): Build runs on the worker's CPU and never touches the
// device; Profile runs on the device. One Backend instance never runs two
// Profile or RunSchedule calls at once: calls are serialised by the backend
// itself (a second concurrent caller waits). Build may run while a Profile of
// other plans is in flight.
//
// The contract is kept once, here, in the non-virtual public methods
// (template method); an implementation only supplies DoBuild, DoProfile and
// DoRunSchedule, which the base calls after its checks:
//  - Build: every stage passes scheduler::ios::ValidateStages (errors name the
//    stage, "stage 3: ..."), then DoBuild runs without the device lock; each
//    plan it returns is stamped with this backend as its owner.
//  - Profile: ValidateProfileOptions, then every plan must be non-null and
//    owned by this instance (InvalidArgument "<name> Profile: plan i was not
//    built by this <name> backend instance" otherwise), then DoProfile runs
//    with the device lock held. Nothing reaches DoProfile when a check fails.
//  - RunSchedule: ValidateProfileOptions(options.profile), CheckSupported,
//    scheduler::ios::ValidateSchedule, CheckGraphInputs(options.inputs) when
//    given, then DoRunSchedule with the device lock held.
//  - Prepare: CheckSupported, ValidateSchedule, then DoPrepare with the
//    device lock held; the result is stamped with this backend and the graph.
//  - RunPrepared: the prepared schedule must be this instance's, inputs and
//    outputs must match the graph's values in number and size, then
//    DoRunPrepared runs with the device lock held.
// The device lock (device_mu_) is the only lock the base takes; state an
// implementation touches only from DoProfile / DoRunSchedule is
// ABSL_GUARDED_BY(device_mu_).
//
// Weights: a weight tensor without data (zoo models) is filled with the
// deterministic values of MaterializeWeights (worker/backends/weights.h), so
// every backend computes the same function and --verify can compare them.
#ifndef IOSFARM_WORKER_BACKENDS_BACKEND_H_
#define IOSFARM_WORKER_BACKENDS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::worker {

// The profiling protocol (docs/profiling.md): `warmup` untimed runs, then
// timed runs until at least `min_repeats` were made and the median moved by
// less than `stable_fraction` over the last `min_repeats` runs, or until
// `max_repeats` runs or `max_seconds` of timed work. Device time is measured
// with device events where the backend has them (CUDA events), else a
// monotonic clock around a synchronised run.
struct ProfileOptions {
  int warmup = 3;
  int min_repeats = 10;
  int max_repeats = 200;
  double stable_fraction = 0.01;
  double max_seconds = 2.0;
};

// Robust statistics of repeated timings, milliseconds.
struct LatencyStats {
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  double cv = 0;  // coefficient of variation (stddev / mean)
  int repeats = 0;
};

class Backend;

// An executable stage: built on the CPU by Build, timed by Profile. Opaque;
// owned by the caller; valid only with the backend that built it (its
// owner, set by Backend::Build) and only while that backend lives.
class StagePlan {
 public:
  virtual ~StagePlan() = default;

  // The backend whose Build made this plan; null before Build returns it.
  const Backend* owner() const { return owner_; }

 private:
  friend class Backend;
  const Backend* owner_ = nullptr;
};

struct RunOptions {
  ProfileOptions profile;
  bool return_outputs = false;  // fill RunResult::outputs
  bool cuda_graph = false;      // cuda only: capture the schedule as one CUDA graph
  // cuda only: after the measurement, one more run between cudaProfilerStart
  // and cudaProfilerStop, so that a profiler started with profiling off
  // (`ncu --profile-from-start off`) sees exactly one run's kernels.
  bool profiler_range = false;
  // The graph inputs, in graph order, each of its value's shape; empty:
  // deterministic random values drawn from `input_seed`.
  std::vector<graph::Tensor> inputs;
  uint64_t input_seed = 1;
};

struct RunResult {
  LatencyStats latency;
  std::vector<graph::Tensor> outputs;  // graph outputs in order, if requested
};

// A schedule made ready to run many times on real inputs (the runtime's
// Session): weights written, memory planned, stage programs compiled and, on
// cuda with PrepareOptions::cuda_graph, captured, once, by Backend::Prepare.
// Opaque; owned by the caller; valid only with the backend that made it and
// only while that backend and the graph live.
class PreparedSchedule {
 public:
  virtual ~PreparedSchedule() = default;

  const Backend* owner() const { return owner_; }
  const graph::Graph& graph() const { return *graph_; }

 private:
  friend class Backend;
  const Backend* owner_ = nullptr;
  const graph::Graph* graph_ = nullptr;
};

struct PrepareOptions {
  bool cuda_graph = false;  // cuda only: capture the schedule as one CUDA graph
};

// Graph inputs (read) or outputs (written) as plain row-major fp32 memory,
// in graph order; each span holds exactly its value's element count. Host
// memory unless a BufferPlacement says otherwise.
using InputBuffers = std::vector<std::span<const float>>;
using OutputBuffers = std::vector<std::span<float>>;

// Where RunPrepared's buffers live. Device memory is memory of the backend's
// own device (cudaMalloc, a framework's CUDA tensor), copied device to
// device; only a backend whose accepts_device_buffers() is true takes it.
struct BufferPlacement {
  // In graph order; an empty vector: every input (output) is host memory.
  std::vector<bool> device_inputs;
  std::vector<bool> device_outputs;
  // Per input, empty or in graph order: the cudaStream_t (as an integer;
  // 0: none) whose queued work writes the input. The backend waits for it
  // before reading. Device outputs are complete when RunPrepared returns.
  std::vector<std::uintptr_t> input_streams;
};

// OK when `inputs` are as many as the graph's inputs and each has its
// value's shape; otherwise InvalidArgument naming the input ("input 'x' has
// shape [1,3,32,32], the model wants [1,3,224,224]").
Status CheckGraphInputs(const graph::Graph& graph, const std::vector<graph::Tensor>& inputs);

class Backend {
 public:
  virtual ~Backend() = default;

  // "cuda", "cpu" or "sim".
  virtual std::string name() const = 0;
  // Human-readable device, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
  virtual std::string device_description() const = 0;

  // The cores a concurrent stage's groups are spread over, each group on
  // cores of its own (the cpu backend: its threads); 0 for a backend that
  // does not run stages on cores (GPUs, sim). Only a backend with cores > 0
  // builds single-core stages (Stage::single_core), and a search measuring
  // on it may bound stages by their work over the cores
  // (scheduler::ios::SearchOptions::cores).
  virtual int cores() const { return 0; }

  // What this device never beats (scheduler/ios/device_floor.h: a stage's
  // synchronisation, each kernel's serial launch, peak FLOP/s and
  // bandwidth), for the bounded search's floor bound
  // (scheduler::ios::SearchOptions::device_floor); all zeros where it is not
  // known. Only a backend whose figures are lower bounds of its own
  // measurements declares one: sim (its model's); cuda (eagerly timed
  // stages: its launch cost, measured when it starts, cuda/planner/cuda_device_floor.h);
  // cpu none.
  virtual scheduler::ios::DeviceFloor device_floor() const { return {}; }

  // Whether Profile times each stage as a captured CUDA graph (cuda with
  // graph-timed stages): its latencies are for schedules run as one graph,
  // so schedules measured end to end beside them (the farm's measure phase)
  // run as one graph too (RunOptions::cuda_graph).
  virtual bool times_stages_as_graphs() const { return false; }

  // OK if every operator of `graph` can be executed; otherwise Unimplemented
  // naming the first unsupported node and op type. Never executes anything.
  virtual Status CheckSupported(const graph::Graph& graph) const = 0;

  // Turns stages of `graph` into executable plans (weights laid out, merged
  // conv weights assembled, memory planned, algorithm choices that need no
  // device). CPU only, no device lock. `graph` must outlive the plans.
  // InvalidArgument naming the stage for a stage ValidateStages refuses, and
  // for a single-core stage on a backend without cores(); otherwise
  // DoBuild's errors.
  StatusOr<std::vector<std::unique_ptr<StagePlan>>> Build(
      const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages);

  // Times each plan on the device (inputs: deterministic random data).
  // InvalidArgument for invalid options or a plan this instance did not
  // build; otherwise DoProfile's errors. Serialised with RunSchedule.
  StatusOr<std::vector<LatencyStats>> Profile(const std::vector<const StagePlan*>& plans,
                                              const ProfileOptions& options);

  // Executes a whole schedule end to end. InvalidArgument for invalid
  // profile options or a schedule ValidateSchedule refuses, CheckSupported's
  // error for an unsupported op; otherwise DoRunSchedule's errors.
  // Serialised with Profile.
  StatusOr<RunResult> RunSchedule(const graph::Graph& graph,
                                  const scheduler::ios::Schedule& schedule,
                                  const RunOptions& options);

  // Makes `schedule` ready for RunPrepared. CheckSupported's error for an
  // unsupported op, InvalidArgument for a schedule ValidateSchedule refuses,
  // Unimplemented on a backend that computes no values (sim); otherwise
  // DoPrepare's errors. Serialised with Profile.
  StatusOr<std::unique_ptr<PreparedSchedule>> Prepare(const graph::Graph& graph,
                                                      const scheduler::ios::Schedule& schedule,
                                                      const PrepareOptions& options);

  // Runs a prepared schedule once: reads `inputs`, writes every graph output
  // into `outputs`, each in host or device memory as `placement` says.
  // InvalidArgument for a schedule another instance prepared, buffers that
  // do not match the graph (naming the input or output), a placement of the
  // wrong length, or device memory on a backend that takes none; otherwise
  // DoRunPrepared's errors. Serialised with Profile and RunSchedule: one
  // prepared run at a time per backend.
  Status RunPrepared(PreparedSchedule& prepared, const InputBuffers& inputs,
                     const OutputBuffers& outputs, const BufferPlacement& placement = {});

  // Whether RunPrepared takes buffers in the device's own memory (cuda).
  virtual bool accepts_device_buffers() const { return false; }

 protected:
  // Build without the checks: stages are valid. Must return plans of its own
  // making (fresh objects); Build sets their owner. May run concurrently with
  // anything.
  virtual StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) = 0;

  // Profile without the checks: options are valid and every plan was
  // returned by this instance's DoBuild (PlanAs may downcast it).
  virtual StatusOr<std::vector<LatencyStats>> DoProfile(
      const std::vector<const StagePlan*>& plans, const ProfileOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_) = 0;

  // RunSchedule without the checks: options, ops and schedule are valid.
  virtual StatusOr<RunResult> DoRunSchedule(const graph::Graph& graph,
                                            const scheduler::ios::Schedule& schedule,
                                            const RunOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_) = 0;

  // Prepare without the checks. The default answers Unimplemented: a backend
  // that computes values (cpu, cuda) overrides it and DoRunPrepared.
  virtual StatusOr<std::unique_ptr<PreparedSchedule>> DoPrepare(
      const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
      const PrepareOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // RunPrepared without the checks: `prepared` came from this instance's
  // DoPrepare, the buffers match its graph, and `placement` names device
  // memory only where accepts_device_buffers().
  virtual Status DoRunPrepared(PreparedSchedule& prepared, const InputBuffers& inputs,
                               const OutputBuffers& outputs, const BufferPlacement& placement)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // A plan handed to DoProfile as the type the implementation's DoBuild made
  // (safe there: Profile has checked that this instance built it).
  template <typename Plan>
  static const Plan& PlanAs(const StagePlan* plan) {
    return static_cast<const Plan&>(*plan);
  }

  // Held by Profile and RunSchedule around DoProfile / DoRunSchedule; an
  // implementation may take it for its own device state outside them
  // (destructor, counters).
  mutable absl::Mutex device_mu_;
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_BACKEND_H_
