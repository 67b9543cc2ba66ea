// Convolution on cuDNN (legacy API): descriptors, per-device algorithm
// choice (conv_algo_cache.h) and the bias + activation epilogue.
//
// Algorithm choice, on a cache miss: candidates from
// cudnnFindConvolutionForwardAlgorithmEx (exhaustive, timed on the plan's
// own buffers) or cudnnGetConvolutionForwardAlgorithm_v7 (heuristic). A Relu
// conv can run as cudnnConvolutionBiasActivationForward (bias + Relu fused;
// z = y with alpha2 = 0; the arena is zero-initialised so z never holds NaN
// garbage) or as cudnnConvolutionForward followed by one kernel that adds the
// bias and applies the activation; other activations run the second way.
// The first kConvTimedCandidates candidates of each way that run (within the
// workspace limit, once, in the exact configuration used later) are timed
// with what follows them, back to back on the setup lane, on the GPU alone
// (StreamTimer::TimeDeviceOnly: the cost inside a CUDA graph), and the
// fastest is taken: cuDNN ranks algorithms for the plain call, and the fused call
// supports fewer of them (a residual only IMPLICIT_PRECOMP_GEMM), so the
// first fused algorithm that runs may be slower than the best plain one and
// its epilogue. Without TF32 the math type is CUDNN_FMA_MATH.
//
// Residual conv (a step with a second input z, execution_plan.h): first
// cudnnConvolutionBiasActivationForward with y = act(1 * conv(x) + 1 * z +
// bias), z in its own buffer (cuDNN allows z to alias y, the plan never
// does, so no copy is needed and the algorithm search may overwrite y), act
// RELU or IDENTITY (cuDNN runs IDENTITY only with IMPLICIT_PRECOMP_GEMM; other
// algorithms answer NOT_SUPPORTED and are skipped). When no algorithm
// supports the fused call, cudnnConvolutionForward runs and one kernel
// computes y = act(y + bias + z), exactly as the bias + Relu path falls back.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "common/strings.h"
#include "worker/backends/cuda/device/conv_algo_cache.h"
#include "worker/backends/cuda/device/cuda_handles.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/device/elementwise_kernels.h"
#include "worker/backends/cuda/device/op_factories.h"
#include "worker/backends/cuda/device/stream_timer.h"
#include "worker/backends/cuda/planner/kernel_params.h"

namespace iosfarm::worker::cuda {
namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Candidates timed per way of running a conv (fused call; plain call and
// epilogue), in cuDNN's order, and the samples and launches per sample.
constexpr int kConvTimedCandidates = 4;
constexpr int kConvTimingSamples = 3;
constexpr int kConvLaunchesPerSample = 4;

// cuDNN statuses that mean "this algorithm cannot run this problem": try the
// next candidate. Anything else is a real error.
bool IsUnsupported(cudnnStatus_t status) {
  const int category = CUDNN_STATUS_CATEGORY(status);
  return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_BAD_PARAM ||
         status == CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED;
}

class ConvOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx) {
    if (step.inputs.empty() || step.inputs.size() > 2 || step.outputs.size() != 1 ||
        step.weights.empty() || step.inputs[0].shape.size() != 4 ||
        step.outputs[0].shape.size() != 4 ||
        (step.inputs.size() == 2 && step.inputs[1].shape != step.outputs[0].shape)) {
      return absl::InternalError("malformed conv step");
    }
    const auto& a = std::get<graph::ConvAttrs>(step.attrs);
    if (a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3]) {
      return absl::InternalError("conv step with asymmetric pads (the plan pads explicitly)");
    }
    std::unique_ptr<ConvOp> op(new ConvOp());
    op->attrs_ = a;
    const graph::Shape& x = step.inputs[0].shape;
    const graph::Shape& y = step.outputs[0].shape;
    const graph::Shape& w = step.weights[0].shape;
    op->x_ = ctx.Ptr(step.inputs[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    op->w_ = ctx.Weight(step.weights[0]);
    op->bias_ = step.weights.size() > 1 ? ctx.Weight(step.weights[1]) : nullptr;
    op->z_ = step.inputs.size() == 2 ? ctx.Ptr(step.inputs[1]) : nullptr;
    if (op->z_ != nullptr && op->z_ == op->y_) {
      return absl::InternalError("conv step whose residual is its output");
    }
    op->elements_ = step.outputs[0].num_elements();
    op->channels_ = y[1];
    op->plane_ = y[2] * y[3];

    std::array<int, 4> xi{}, yi{}, wi{};
    for (int d = 0; d < 4; ++d) {
      ASSIGN_OR_RETURN(xi[d], ToInt(x[d], "input dimension"));
      ASSIGN_OR_RETURN(yi[d], ToInt(y[d], "output dimension"));
      ASSIGN_OR_RETURN(wi[d], ToInt(w[d], "weight dimension"));
    }
    ASSIGN_OR_RETURN(int pad_h, ToInt(a.pads[0], "pad"));
    ASSIGN_OR_RETURN(int pad_w, ToInt(a.pads[1], "pad"));
    ASSIGN_OR_RETURN(int stride_h, ToInt(a.stride[0], "stride"));
    ASSIGN_OR_RETURN(int stride_w, ToInt(a.stride[1], "stride"));
    ASSIGN_OR_RETURN(int dilation_h, ToInt(a.dilation[0], "dilation"));
    ASSIGN_OR_RETURN(int dilation_w, ToInt(a.dilation[1], "dilation"));
    ASSIGN_OR_RETURN(int groups, ToInt(a.groups, "groups"));
    const bool tf32 = ctx.device->options().allow_tf32;
    ASSIGN_OR_RETURN(op->x_desc_, CreateTensorDesc(xi[0], xi[1], xi[2], xi[3]));
    ASSIGN_OR_RETURN(op->y_desc_, CreateTensorDesc(yi[0], yi[1], yi[2], yi[3]));
    ASSIGN_OR_RETURN(op->w_desc_, CreateFilterDesc(wi[0], wi[1], wi[2], wi[3]));
    ASSIGN_OR_RETURN(op->conv_desc_,
                     CreateConvDesc(pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w,
                                    groups, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    int on = 0, oc = 0, oh = 0, ow = 0;
    RETURN_IF_ERROR(CudnnCall(
        cudnnGetConvolution2dForwardOutputDim(op->conv_desc_.get(), op->x_desc_.get(),
                                              op->w_desc_.get(), &on, &oc, &oh, &ow),
        "cudnnGetConvolution2dForwardOutputDim"));
    if (on != yi[0] || oc != yi[1] || oh != yi[2] || ow != yi[3]) {
      return absl::InternalError(StrCat("cuDNN computes output [", on, ",", oc, ",", oh, ",", ow,
                                        "], the graph ", graph::ShapeToString(y)));
    }
    // cuDNN's fused call: bias always, then Relu, or no activation with a residual.
    const bool residual = op->z_ != nullptr;
    const bool relu = a.activation == graph::Activation::kRelu;
    const bool want_fused =
        op->bias_ != nullptr && (relu || (residual && a.activation == graph::Activation::kNone));
    if (want_fused) {
      ASSIGN_OR_RETURN(op->bias_desc_, CreateTensorDesc(1, yi[1], 1, 1));
      ASSIGN_OR_RETURN(op->act_desc_, CreateActivationDesc(relu ? CUDNN_ACTIVATION_RELU
                                                                : CUDNN_ACTIVATION_IDENTITY));
    }
    // 0: plain, 1: bias + Relu, 2: bias + residual + Relu, 3: bias + residual.
    const int fused_mode = !want_fused ? 0 : !residual ? 1 : relu ? 2 : 3;

    ConvKey key;
    key.fields = {x[0], x[1], x[2], x[3], w[0], w[2], w[3], pad_h, pad_w, stride_h, stride_w,
                  dilation_h, dilation_w, groups, fused_mode, tf32 ? 1 : 0,
                  (Aligned16(op->x_) ? 1 : 0) | (Aligned16(op->w_) ? 2 : 0) |
                      (Aligned16(op->y_) ? 4 : 0) |
                      (residual && Aligned16(op->z_) ? 8 : 0)};
    std::optional<ConvChoice> choice = ctx.device->conv_algos().Find(key);
    if (!choice.has_value()) {
      ASSIGN_OR_RETURN(ConvChoice found, op->Search(ctx, want_fused));
      ctx.device->conv_algos().Insert(key, found);
      choice = found;
    }
    RETURN_IF_ERROR(op->Use(*choice));
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    if (lane.workspace_bytes < choice_.workspace_bytes) {
      return absl::InternalError("conv: the lane's workspace is too small");
    }
    return EnqueueWith(lane.cudnn, lane.stream, choice_, lane.workspace);
  }

  size_t workspace_bytes() const override { return choice_.workspace_bytes; }

 private:
  ConvOp() = default;

  // Whether `choice` leaves bias, residual or activation to the epilogue kernel.
  bool NeedsEpilogue(const ConvChoice& choice) const {
    return !choice.fused &&
           (bias_ != nullptr || z_ != nullptr || attrs_.activation != graph::Activation::kNone);
  }

  // The conv as `choice` runs it, and the epilogue kernel where it needs one.
  Status EnqueueWith(cudnnHandle_t handle, cudaStream_t stream, const ConvChoice& choice,
                     void* workspace) const {
    RETURN_IF_ERROR(CudnnCall(
        Launch(handle, choice.fused, choice.algo, workspace, choice.workspace_bytes),
        choice.fused ? "cudnnConvolutionBiasActivationForward" : "cudnnConvolutionForward"));
    if (!NeedsEpilogue(choice)) return absl::OkStatus();
    if (z_ != nullptr) {
      return CudaCall(LaunchBiasResidualActivation(y_, bias_, z_, elements_, channels_, plane_,
                                                   ConvActivationParams(attrs_), stream),
                      "bias/residual/activation kernel");
    }
    return CudaCall(LaunchBiasActivation(y_, bias_, elements_, channels_, plane_,
                                         ConvActivationParams(attrs_), stream),
                    "bias/activation kernel");
  }

  // The raw cuDNN call (status not converted: the search tries the next
  // algorithm on "not supported").
  cudnnStatus_t Launch(cudnnHandle_t handle, bool fused, cudnnConvolutionFwdAlgo_t algo,
                       void* workspace, size_t workspace_bytes) const {
    const float one = 1.0f, zero = 0.0f;
    if (fused) {
      // y = act(1 * conv(x) + alpha2 * z + bias): z is the residual, or y
      // itself with alpha2 = 0.
      const bool residual = z_ != nullptr;
      return cudnnConvolutionBiasActivationForward(
          handle, &one, x_desc_.get(), x_, w_desc_.get(), w_, conv_desc_.get(), algo, workspace,
          workspace_bytes, residual ? &one : &zero, y_desc_.get(), residual ? z_ : y_,
          bias_desc_.get(), bias_, act_desc_.get(), y_desc_.get(), y_);
    }
    return cudnnConvolutionForward(handle, &one, x_desc_.get(), x_, w_desc_.get(), w_,
                                   conv_desc_.get(), algo, workspace, workspace_bytes, &zero,
                                   y_desc_.get(), y_);
  }

  cudnnMathType_t MathFor(cudnnMathType_t candidate, bool tf32) const {
    return tf32 ? candidate : CUDNN_FMA_MATH;
  }

  StatusOr<ConvChoice> Search(const DeviceOpContext& ctx, bool want_fused) {
    const Lane& lane = ctx.setup_lane();
    const CudaExecutionOptions& options = ctx.device->options();
    const size_t limit = options.max_conv_workspace_bytes;
    int max_count = 0;
    RETURN_IF_ERROR(CudnnCall(cudnnGetConvolutionForwardAlgorithmMaxCount(lane.cudnn, &max_count),
                              "cudnnGetConvolutionForwardAlgorithmMaxCount"));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
    int returned = 0;
    if (options.conv_algo_search == ConvAlgoSearch::kExhaustive) {
      ASSIGN_OR_RETURN(void* scratch, ctx.device->Scratch(limit));
      RETURN_IF_ERROR(CudnnCall(
          cudnnFindConvolutionForwardAlgorithmEx(
              lane.cudnn, x_desc_.get(), x_, w_desc_.get(), w_, conv_desc_.get(), y_desc_.get(),
              y_, static_cast<int>(perf.size()), &returned, perf.data(), scratch, limit),
          "cudnnFindConvolutionForwardAlgorithmEx"));
    } else {
      RETURN_IF_ERROR(CudnnCall(cudnnGetConvolutionForwardAlgorithm_v7(
                                    lane.cudnn, x_desc_.get(), w_desc_.get(), conv_desc_.get(),
                                    y_desc_.get(), static_cast<int>(perf.size()), &returned,
                                    perf.data()),
                                "cudnnGetConvolutionForwardAlgorithm_v7"));
    }
    RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(lane.stream), "cudaStreamSynchronize"));
    // Successful candidates in cuDNN's order (fastest or most promising
    // first); an algorithm listed twice (several math types) is tried once
    // per math type we would actually use.
    std::vector<std::pair<cudnnConvolutionFwdAlgo_t, cudnnMathType_t>> candidates;
    for (int i = 0; i < returned && i < static_cast<int>(perf.size()); ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      const auto candidate = std::make_pair(perf[i].algo, MathFor(perf[i].mathType,
                                                                 options.allow_tf32));
      if (std::find(candidates.begin(), candidates.end(), candidate) == candidates.end()) {
        candidates.push_back(candidate);
      }
    }
    std::vector<bool> fused_modes = {false};
    if (want_fused) fused_modes = {true, false};
    ASSIGN_OR_RETURN(StreamTimer timer, StreamTimer::Create());
    std::optional<ConvChoice> best;
    double best_ms = 0;
    for (bool fused : fused_modes) {
      int timed = 0;
      for (const auto& [algo, math] : candidates) {
        if (timed == kConvTimedCandidates) break;
        RETURN_IF_ERROR(CudnnCall(cudnnSetConvolutionMathType(conv_desc_.get(), math),
                                  "cudnnSetConvolutionMathType"));
        size_t workspace = 0;
        const cudnnStatus_t sized = cudnnGetConvolutionForwardWorkspaceSize(
            lane.cudnn, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), algo,
            &workspace);
        if (IsUnsupported(sized)) continue;
        RETURN_IF_ERROR(CudnnCall(sized, "cudnnGetConvolutionForwardWorkspaceSize"));
        if (workspace > limit) continue;
        ASSIGN_OR_RETURN(void* scratch, ctx.device->Scratch(workspace));
        const cudnnStatus_t ran = Launch(lane.cudnn, fused, algo, scratch, workspace);
        if (IsUnsupported(ran)) continue;
        RETURN_IF_ERROR(CudnnCall(ran, fused ? "cudnnConvolutionBiasActivationForward (trial)"
                                             : "cudnnConvolutionForward (trial)"));
        RETURN_IF_ERROR(
            CudaCall(cudaStreamSynchronize(lane.stream), "cudaStreamSynchronize (conv trial)"));
        ConvChoice choice;
        choice.algo = algo;
        choice.math = math;
        choice.workspace_bytes = workspace;
        choice.fused = fused;
        ++timed;
        double fastest = 0;
        for (int sample = 0; sample < kConvTimingSamples; ++sample) {
          ASSIGN_OR_RETURN(
              double ms, timer.TimeDeviceOnly(
                             lane.stream,
                             [&] { return EnqueueWith(lane.cudnn, lane.stream, choice, scratch); },
                             kConvLaunchesPerSample));
          fastest = sample == 0 ? ms : std::min(fastest, ms);
        }
        if (!best || fastest < best_ms) {
          best = choice;
          best_ms = fastest;
        }
      }
    }
    if (best) return *best;
    return absl::InternalError(StrCat("no cuDNN algorithm runs this convolution (",
                                      candidates.size(), " candidates, workspace limit ", limit,
                                      " bytes)"));
  }

  Status Use(const ConvChoice& choice) {
    choice_ = choice;
    RETURN_IF_ERROR(CudnnCall(cudnnSetConvolutionMathType(conv_desc_.get(), choice.math),
                              "cudnnSetConvolutionMathType"));
    return absl::OkStatus();
  }

  graph::ConvAttrs attrs_;
  const float* x_ = nullptr;
  const float* w_ = nullptr;
  const float* bias_ = nullptr;
  const float* z_ = nullptr;  // residual input, or null
  float* y_ = nullptr;
  int64_t elements_ = 0, channels_ = 0, plane_ = 0;
  UniqueTensorDesc x_desc_, y_desc_, bias_desc_;
  UniqueFilterDesc w_desc_;
  UniqueConvDesc conv_desc_;
  UniqueActivationDesc act_desc_;
  ConvChoice choice_;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceOp>> MakeConvOp(const Step& step, const DeviceOpContext& ctx) {
  return ConvOp::Create(step, ctx);
}

}  // namespace iosfarm::worker::cuda
