#include "worker/backends/cuda/planner/plan_emulator.h"

#include <algorithm>
#include <limits>
#include <variant>

#include "common/strings.h"
#include "worker/backends/reference/kernels.h"

namespace iosfarm::worker::cuda {
namespace {

using reference::ConstView;
using reference::MutableView;

class Emulator {
 public:
  explicit Emulator(const ExecutionPlan& plan)
      : plan_(plan),
        arena_(static_cast<size_t>(plan.arena_bytes) / sizeof(float),
               std::numeric_limits<float>::quiet_NaN()) {}

  StatusOr<std::vector<graph::Tensor>> Run(const std::vector<graph::Tensor>& graph_inputs,
                                           int runs) {
    for (const Preset& preset : plan_.presets) {
      if (static_cast<int64_t>(preset.data.size()) != preset.ref.num_elements()) {
        return absl::InvalidArgumentError(StrCat("preset '", preset.label, "' has ",
                                                 preset.data.size(), " values"));
      }
      std::copy(preset.data.begin(), preset.data.end(), Ptr(preset.ref));
    }
    for (const RuntimeInput& input : plan_.runtime_inputs) {
      if (input.input_index < 0 || input.input_index >= static_cast<int>(graph_inputs.size()) ||
          static_cast<int64_t>(graph_inputs[input.input_index].data.size()) !=
              input.ref.num_elements()) {
        return absl::InvalidArgumentError(
            StrCat("graph input ", input.input_index, " is missing or has the wrong size"));
      }
      const std::vector<float>& data = graph_inputs[input.input_index].data;
      std::copy(data.begin(), data.end(), Ptr(input.ref));
    }
    for (int run = 0; run < runs; ++run) {
      for (size_t s = 0; s < plan_.stages.size(); ++s) {
        Poison([&](const BufferSpec& b) { return b.first_stage == static_cast<int>(s); });
        for (const GroupProgram& group : plan_.stages[s].groups) {
          for (const Step& step : group.steps) RETURN_IF_ERROR(RunStep(step));
        }
        Poison([&](const BufferSpec& b) { return b.last_stage == static_cast<int>(s); });
      }
    }
    std::vector<graph::Tensor> outputs;
    for (const TensorRef& ref : plan_.outputs) {
      graph::Tensor t;
      t.shape = ref.shape;
      t.data.assign(Ptr(ref), Ptr(ref) + ref.num_elements());
      outputs.push_back(std::move(t));
    }
    return outputs;
  }

 private:
  template <typename Pred>
  void Poison(const Pred& pred) {
    for (const BufferSpec& b : plan_.buffers) {
      if (!pred(b)) continue;
      float* begin = arena_.data() + b.byte_offset / static_cast<int64_t>(sizeof(float));
      std::fill(begin, begin + b.elements, std::numeric_limits<float>::quiet_NaN());
    }
  }

  float* Ptr(const TensorRef& ref) {
    const BufferSpec& b = plan_.buffers[ref.buffer];
    return arena_.data() + b.byte_offset / static_cast<int64_t>(sizeof(float)) + ref.offset;
  }
  ConstView In(const TensorRef& ref) { return {Ptr(ref), ref.shape}; }
  MutableView Out(const TensorRef& ref) { return {Ptr(ref), ref.shape}; }
  const float* W(const WeightRef& w) const { return plan_.weights.data() + w.offset; }
  ConstView WView(const WeightRef& w) const { return {W(w), w.shape}; }

  Status RunStep(const Step& step) {
    switch (step.kind) {
      case StepKind::kConv: {
        graph::ConvAttrs attrs = std::get<graph::ConvAttrs>(step.attrs);
        const bool residual = step.inputs.size() > 1;
        const graph::Activation activation = attrs.activation;
        // With a residual z the activation applies to conv + B + z.
        if (residual) attrs.activation = graph::Activation::kNone;
        reference::Conv2D(attrs, In(step.inputs[0]), W(step.weights[0]),
                          step.weights.size() > 1 ? W(step.weights[1]) : nullptr,
                          Out(step.outputs[0]));
        if (residual) {
          if (step.inputs[1].shape != step.outputs[0].shape) {
            return absl::InternalError(StrCat("emulator: residual of '", step.label,
                                              "' does not have the output's shape"));
          }
          float* y = Ptr(step.outputs[0]);
          const float* z = Ptr(step.inputs[1]);
          const int64_t n = step.outputs[0].num_elements();
          for (int64_t i = 0; i < n; ++i) y[i] += z[i];
          reference::ApplyActivation(activation, attrs.clip_min, attrs.clip_max, y, n);
        }
        return absl::OkStatus();
      }
      case StepKind::kPool:
        reference::Pool2D(step.op, std::get<graph::PoolAttrs>(step.attrs), In(step.inputs[0]),
                          Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kGlobalPool:
        reference::GlobalPool(step.op, In(step.inputs[0]), Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kUnary:
        reference::Unary(step.op, step.attrs, In(step.inputs[0]), Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kBinary:
        reference::Binary(step.op, In(step.inputs[0]), In(step.inputs[1]), Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kCopyRows: {
        const CopyRows& c = step.copy;
        const float* src = Ptr(step.inputs[0]) + c.src_offset;
        float* dst = Ptr(step.outputs[0]) + c.dst_offset;
        for (int64_t r = 0; r < c.rows; ++r) {
          std::copy(src + r * c.src_pitch, src + r * c.src_pitch + c.width, dst + r * c.dst_pitch);
        }
        return absl::OkStatus();
      }
      case StepKind::kSlice:
        reference::Slice(std::get<graph::SliceAttrs>(step.attrs), In(step.inputs[0]),
                         Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kPad:
        reference::Pad(std::get<graph::PadAttrs>(step.attrs), In(step.inputs[0]),
                       Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kResize:
        reference::Resize(std::get<graph::ResizeAttrs>(step.attrs), In(step.inputs[0]),
                          Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kConvTranspose:
        reference::ConvTranspose2D(
            std::get<graph::ConvTransposeAttrs>(step.attrs), In(step.inputs[0]), W(step.weights[0]),
            step.weights.size() > 1 ? W(step.weights[1]) : nullptr, Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kTranspose:
        reference::Transpose(std::get<graph::TransposeAttrs>(step.attrs).perm, In(step.inputs[0]),
                             Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kReduce:
        reference::Reduce(step.op, std::get<graph::ReduceAttrs>(step.attrs), In(step.inputs[0]),
                          Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kSoftmax:
        reference::Softmax(std::get<graph::SoftmaxAttrs>(step.attrs).axis, In(step.inputs[0]),
                           Out(step.outputs[0]));
        return absl::OkStatus();
      case StepKind::kBatchNorm: {
        const ConstView x = In(step.inputs[0]);
        float* y = Ptr(step.outputs[0]);
        const int64_t channels = x.shape[1];
        int64_t inner = 1;
        for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
        const int64_t n = graph::NumElements(x.shape);
        const float* scale = W(step.weights[0]);
        const float* shift = W(step.weights[1]);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t c = (i / inner) % channels;
          y[i] = x.data[i] * scale[c] + shift[c];
        }
        return absl::OkStatus();
      }
      case StepKind::kGemm: {
        graph::GemmAttrs attrs = std::get<graph::GemmAttrs>(step.attrs);
        attrs.beta = 1.0f;  // the bias weight holds beta * C already
        const ConstView b = WView(step.weights[0]);
        if (step.weights.size() > 1) {
          const ConstView c = WView(step.weights[1]);
          reference::Gemm(attrs, In(step.inputs[0]), b, &c, Out(step.outputs[0]));
        } else {
          reference::Gemm(attrs, In(step.inputs[0]), b, nullptr, Out(step.outputs[0]));
        }
        return absl::OkStatus();
      }
      case StepKind::kMatMul: {
        const ConstView b = step.inputs.size() > 1 ? In(step.inputs[1]) : WView(step.weights[0]);
        reference::MatMul(In(step.inputs[0]), b, Out(step.outputs[0]));
        return absl::OkStatus();
      }
    }
    return absl::InternalError(StrCat("emulator: unknown step kind for '", step.label, "'"));
  }

  const ExecutionPlan& plan_;
  std::vector<float> arena_;
};

}  // namespace

StatusOr<std::vector<graph::Tensor>> EmulatePlan(const ExecutionPlan& plan,
                                                 const std::vector<graph::Tensor>& graph_inputs,
                                                 int runs) {
  return Emulator(plan).Run(graph_inputs, runs);
}

}  // namespace iosfarm::worker::cuda
