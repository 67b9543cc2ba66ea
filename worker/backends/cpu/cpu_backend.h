// The `cpu` backend: executes and times IOS stages and schedules on the CPU
// with oneDNN (the embedded default on machines without a GPU).
//
// fp32. 4-D activations live in the layout oneDNN's convolutions prefer on
// this CPU (layout.h); convolutions fuse bias and activation, weights are
// reordered once in Build; ops oneDNN lacks run the reference kernels
// (op_compiler.h), so every op of the IR is supported. Concurrent stages run
// their groups in parallel lanes with the cores partitioned among them
// (lane_partition.h, lane_pool.h); merge stages run the merged convolution
// and copy out each branch's channels.
//
// Timing: a monotonic clock around one synchronous execution (oneDNN's CPU
// stream is synchronous), with the protocol of profiling.h.
//
// Thread safety: Build may run concurrently with anything (it only reads the
// graph and creates primitives); Profile and RunSchedule are serialised by the
// base's device lock (backend.h; a second caller waits). Plans are tied to
// the backend that built them and may not outlive it.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_CPU_BACKEND_H_
#define IOSFARM_WORKER_BACKENDS_CPU_CPU_BACKEND_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/base/thread_annotations.h"
#include "common/status.h"
#include "worker/backends/backend.h"
#include "worker/backends/op_support.h"
#include "worker/backends/cpu/lane_pool.h"
#include "worker/backends/cpu/layout.h"

namespace iosfarm::worker::cpu {

struct CpuBackendOptions {
  // Cores to use; 0 means OpenMP's default (OMP_NUM_THREADS or all cores).
  int num_threads = 0;
  // Storage layout of 4-D activations; unset asks oneDNN what its
  // convolutions prefer on this CPU.
  std::optional<ActivationLayout> layout;
};

// The op types the cpu backend implements (all of the IR today).
OpTypeSet CpuSupportedOps();

class CpuPreparedSchedule;

class CpuBackend final : public Backend {
 public:
  // Internal when oneDNN cannot create a CPU engine; InvalidArgument for a
  // negative thread count.
  static StatusOr<std::unique_ptr<CpuBackend>> Create(const CpuBackendOptions& options = {});

  std::string name() const override { return "cpu"; }
  std::string device_description() const override { return description_; }
  int cores() const override { return threads_; }

  Status CheckSupported(const graph::Graph& graph) const override;

  // Build (backend.h has the shared checks): Unimplemented for an op
  // CheckSupported refuses; InvalidArgument for a stage the compiler cannot
  // take (shapes that disagree with shape inference). External inputs of
  // each stage get deterministic random data.

  int num_threads() const { return threads_; }
  ActivationLayout layout() const { return layout_; }

  // The compiled program of a plan built by this backend: "lane ... op:
  // implementation" lines (for logs and tests); empty for other plans.
  std::vector<std::string> DescribePlan(const StagePlan& plan) const;

 private:
  CpuBackend(dnnl::engine engine, int threads, ActivationLayout layout, std::string description);

  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) override;
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>& plans,
                                                const ProfileOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& graph,
                                    const scheduler::ios::Schedule& schedule,
                                    const RunOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  StatusOr<std::unique_ptr<PreparedSchedule>> DoPrepare(
      const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
      const PrepareOptions& options) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  Status DoRunPrepared(PreparedSchedule& prepared, const InputBuffers& inputs,
                       const OutputBuffers& outputs, const BufferPlacement& placement) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // The whole schedule compiled against one value store (memory planned);
  // graph inputs have buffers, their data is written by the caller.
  StatusOr<std::unique_ptr<CpuPreparedSchedule>> Compile(const graph::Graph& graph,
                                                          const scheduler::ios::Schedule& schedule)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  // One run of every stage program, in order.
  Status RunPrograms(const CpuPreparedSchedule& prepared)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  const dnnl::engine engine_;
  const int threads_;
  const ActivationLayout layout_;
  const std::string description_;

  dnnl::stream stream_ ABSL_GUARDED_BY(device_mu_);
  LanePool pool_ ABSL_GUARDED_BY(device_mu_);
};

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_CPU_BACKEND_H_
