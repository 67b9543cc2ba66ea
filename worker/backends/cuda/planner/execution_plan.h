// ExecutionPlan: what the cuda backend runs, prepared on the host.
//
// A plan is the device-independent description of one or more IOS stages:
// a list of steps (kernel or library calls) per group per stage, each reading
// and writing TensorRefs (element ranges of buffers), the buffers' sizes,
// lifetimes and offsets in one activation arena, and the packed weights.
// Build (plan_builder.h) makes it on the CPU without touching a device; a
// DeviceProgram (device_program.h) instantiates it on a GPU; a host emulator
// (plan_emulator.h) runs it with the reference kernels, so the memory plan,
// views and in-place concats are tested on machines without a GPU.
//
// Conventions: fp32, dense row-major (NCHW) tensors; every offset, size and
// pitch is in elements unless the name says bytes. Plain data; copyable.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_EXECUTION_PLAN_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_EXECUTION_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/attributes.h"
#include "graph/graph.h"
#include "graph/op_type.h"
#include "graph/tensor.h"

namespace iosfarm::worker::cuda {

// A dense tensor stored at `offset` elements into buffer `buffer`.
struct TensorRef {
  int buffer = -1;
  int64_t offset = 0;
  graph::Shape shape;

  int64_t num_elements() const { return graph::NumElements(shape); }
};

// A constant tensor: a range of ExecutionPlan::weights.
struct WeightRef {
  int64_t offset = 0;
  graph::Shape shape;

  int64_t num_elements() const { return graph::NumElements(shape); }
};

enum class StepKind {
  // y = act(conv(x, W) + B [+ z]). attrs: ConvAttrs (pads symmetric: top ==
  // bottom, left == right; asymmetric pads get an explicit kPad step first).
  // inputs: x [, z]. With z, a residual Add (and a Relu after it, as the
  // activation) is fused in (worker/backends/residual_fusion.h): z has y's
  // shape, lives in its own buffer (never y's) and is added before the
  // activation. weights: W [, B]; a Relu conv and a residual conv always
  // have B (zeros when the op has none) so that the device can fuse bias,
  // residual and Relu into one cuDNN call.
  kConv,
  kPool,        // MaxPool / AveragePool (op), attrs: PoolAttrs
  kGlobalPool,  // GlobalAveragePool / GlobalMaxPool (op)
  kUnary,       // Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh (op, attrs)
  kBinary,      // Add, Sub, Mul, Div (op) with numpy broadcasting; inputs a, b
  kCopyRows,    // `copy`: rows of a strided 2-D copy (concat, split, merged branches)
  kSlice,       // attrs: SliceAttrs (axes normalised)
  kPad,         // attrs: PadAttrs
  kResize,      // attrs: ResizeAttrs
  // y = conv_transpose(x, W) + B. attrs: ConvTransposeAttrs; weights: W
  // (ONNX's [C, OC/groups, KH, KW]) [, B].
  kConvTranspose,
  kTranspose,  // attrs: TransposeAttrs
  kReduce,     // ReduceMean/Sum/Max/Min (op), attrs: ReduceAttrs (axes empty = all)
  kSoftmax,    // attrs: SoftmaxAttrs (axis normalised)
  kBatchNorm,  // y = x * scale[c] + shift[c] over axis 1; weights: scale, shift
  // Y = alpha * A' B' + C'. attrs: GemmAttrs (beta unused: C' = beta * C
  // broadcast to [M, N] is precomputed). weights: B [, C'].
  kGemm,
  kMatMul,  // numpy matmul; inputs a [, b]; weights: B when b is a weight
};

std::string_view StepKindName(StepKind kind);

// kCopyRows: for r in [0, rows): dst[dst_offset + r * dst_pitch + i] =
// src[src_offset + r * src_pitch + i], i in [0, width); offsets relative to
// the refs' own offsets.
struct CopyRows {
  int64_t rows = 0;
  int64_t width = 0;
  int64_t src_offset = 0;
  int64_t src_pitch = 0;
  int64_t dst_offset = 0;
  int64_t dst_pitch = 0;
};

struct Step {
  StepKind kind = StepKind::kCopyRows;
  graph::OpType op = graph::OpType::kIdentity;
  graph::Attributes attrs;
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
  std::vector<WeightRef> weights;
  CopyRows copy;
  std::string label;  // the node (or merged stage) it comes from, for errors
};

// The steps of one group, run in order on one stream.
struct GroupProgram {
  std::vector<Step> steps;
};

// One IOS stage: groups run concurrently (one stream each).
struct StageProgram {
  std::vector<GroupProgram> groups;
  std::string label;  // StageToString
};

// One region of the activation arena.
struct BufferSpec {
  int64_t elements = 0;
  // Stages during which the buffer holds live data (inclusive). -1: before
  // the first stage (preset data); num stages: read after the last stage.
  int first_stage = 0;
  int last_stage = 0;
  int64_t byte_offset = 0;  // in the arena
  std::string label;
};

// Data written into the arena before the first run.
struct Preset {
  TensorRef ref;
  std::vector<float> data;  // ref.num_elements() values
  std::string label;
};

// A graph input whose data is supplied per RunSchedule call.
struct RuntimeInput {
  TensorRef ref;
  int input_index = 0;  // in graph.inputs()
};

struct ExecutionPlan {
  std::vector<StageProgram> stages;
  std::vector<BufferSpec> buffers;
  int64_t arena_bytes = 0;
  std::vector<float> weights;  // every WeightRef points in here
  std::vector<Preset> presets;
  std::vector<RuntimeInput> runtime_inputs;
  std::vector<TensorRef> outputs;  // kept results (graph outputs in order)

  // Number of steps over all stages and groups.
  int num_steps() const;
  // The largest number of non-empty groups of any stage.
  int max_concurrent_groups() const;
  // Number of kConv steps with a residual input z (fused Conv + Add).
  int num_residual_convs() const;
};

// Alignment of buffer offsets in the arena and of WeightRefs (bytes).
inline constexpr int64_t kArenaAlignment = 256;

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_EXECUTION_PLAN_H_
