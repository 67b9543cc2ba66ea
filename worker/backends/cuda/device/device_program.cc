#include "worker/backends/cuda/device/device_program.h"

#include <cuda_runtime_api.h>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {
namespace {

float* RefPtr(const DeviceBuffer& arena, const ExecutionPlan& plan, const TensorRef& ref) {
  return reinterpret_cast<float*>(static_cast<char*>(arena.data()) +
                                  plan.buffers[ref.buffer].byte_offset) +
         ref.offset;
}

// The stream a __cuda_array_interface__-style integer names.
cudaStream_t StreamFromHandle(std::uintptr_t handle) {
  if (handle == 1) return cudaStreamLegacy;
  if (handle == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(handle);
}

}  // namespace

Status CheckDeviceMemory(const void* data, int device, const std::string& what) {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, data);
  if (error != cudaSuccess) {
    cudaGetLastError();  // a non-sticky error: clear it so the next call starts clean
    return absl::InvalidArgumentError(StrCat(what,
                                             " was passed as device memory, but CUDA does "
                                             "not know the pointer (",
                                             cudaGetErrorString(error), ")"));
  }
  if (attributes.type == cudaMemoryTypeManaged) return absl::OkStatus();
  if (attributes.type != cudaMemoryTypeDevice) {
    return absl::InvalidArgumentError(StrCat(what, " was passed as device memory, but it is ",
                                             "host memory (pass it as host memory instead)"));
  }
  if (attributes.device != device) {
    return absl::InvalidArgumentError(StrCat(what, " is memory of CUDA device ", attributes.device,
                                             ", but the session runs on device ", device));
  }
  return absl::OkStatus();
}

StatusOr<std::unique_ptr<DeviceProgram>> DeviceProgram::Create(CudaDeviceContext& device,
                                                               const ExecutionPlan& plan) {
  std::unique_ptr<DeviceProgram> program(new DeviceProgram(device, plan));
  const cudaStream_t stream = device.lanes().lane(0).stream;
  ASSIGN_OR_RETURN(program->arena_,
                   DeviceBuffer::Allocate(static_cast<size_t>(plan.arena_bytes), "activations"));
  ASSIGN_OR_RETURN(program->weights_,
                   DeviceBuffer::Allocate(plan.weights.size() * sizeof(float), "weights"));
  // Zero-filled, so that nothing ever reads NaN garbage (cuDNN's fused
  // conv reads its z input, which is y, with a factor of zero).
  if (program->arena_.bytes() > 0) {
    RETURN_IF_ERROR(CudaCall(
        cudaMemsetAsync(program->arena_.data(), 0, program->arena_.bytes(), stream),
        "cudaMemsetAsync (arena)"));
  }
  if (!plan.weights.empty()) {
    RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(program->weights_.data(), plan.weights.data(),
                                             plan.weights.size() * sizeof(float),
                                             cudaMemcpyHostToDevice, stream),
                             "cudaMemcpyAsync (weights)"));
  }
  for (const Preset& preset : plan.presets) {
    if (static_cast<int64_t>(preset.data.size()) != preset.ref.num_elements()) {
      return absl::InternalError(StrCat("preset '", preset.label, "' has ", preset.data.size(),
                                        " values for ", preset.ref.num_elements()));
    }
    RETURN_IF_ERROR(CudaCall(
        cudaMemcpyAsync(RefPtr(program->arena_, plan, preset.ref), preset.data.data(),
                        preset.data.size() * sizeof(float), cudaMemcpyHostToDevice, stream),
        StrCat("cudaMemcpyAsync (preset '", preset.label, "')")));
  }
  // The uploads read pageable host memory: finish them before anything else.
  RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(stream), "cudaStreamSynchronize (uploads)"));
  DeviceOpContext ctx;
  ctx.device = &device;
  ctx.plan = &plan;
  ctx.arena = static_cast<char*>(program->arena_.data());
  ctx.weights = static_cast<const float*>(program->weights_.data());
  ASSIGN_OR_RETURN(program->executor_, StageExecutor::Create(ctx));
  RETURN_IF_ERROR(device.lanes().SynchronizeAll());
  return program;
}

Status DeviceProgram::WriteRuntimeInputs(const std::vector<graph::Tensor>& graph_inputs) {
  std::vector<std::span<const float>> spans;
  spans.reserve(graph_inputs.size());
  for (const graph::Tensor& t : graph_inputs) spans.emplace_back(t.data);
  return WriteRuntimeInputs(spans);
}

Status DeviceProgram::WriteRuntimeInputs(const std::vector<std::span<const float>>& graph_inputs,
                                         const std::vector<bool>& on_device,
                                         const std::vector<std::uintptr_t>& ready_streams) {
  const cudaStream_t stream = device_.lanes().lane(0).stream;
  for (size_t i = 0; i < ready_streams.size(); ++i) {
    if (ready_streams[i] == 0) continue;
    RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(StreamFromHandle(ready_streams[i])),
                             StrCat("cudaStreamSynchronize (the stream of graph input ", i, ")")));
  }
  for (const RuntimeInput& input : plan_.runtime_inputs) {
    if (input.input_index < 0 || input.input_index >= static_cast<int>(graph_inputs.size())) {
      return absl::InvalidArgumentError(StrCat("graph input ", input.input_index, " missing"));
    }
    const std::span<const float> data = graph_inputs[input.input_index];
    if (static_cast<int64_t>(data.size()) != input.ref.num_elements()) {
      return absl::InvalidArgumentError(StrCat("graph input ", input.input_index, " has ",
                                               data.size(), " values, expected ",
                                               input.ref.num_elements()));
    }
    const bool device =
        static_cast<size_t>(input.input_index) < on_device.size() && on_device[input.input_index];
    RETURN_IF_ERROR(CudaCall(
        cudaMemcpyAsync(RefPtr(arena_, plan_, input.ref), data.data(), data.size() * sizeof(float),
                        device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (graph input)"));
  }
  return CudaCall(cudaStreamSynchronize(stream), "cudaStreamSynchronize (graph inputs)");
}

Status DeviceProgram::Enqueue() const { return executor_->Enqueue(device_.lanes()); }

StatusOr<std::vector<graph::Tensor>> DeviceProgram::ReadOutputs() const {
  std::vector<graph::Tensor> outputs(plan_.outputs.size());
  std::vector<std::span<float>> spans;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorRef& ref = plan_.outputs[i];
    outputs[i].shape = ref.shape;
    outputs[i].data.resize(static_cast<size_t>(ref.num_elements()));
    spans.emplace_back(outputs[i].data);
  }
  RETURN_IF_ERROR(ReadOutputsInto(spans));
  return outputs;
}

Status DeviceProgram::ReadOutputsInto(const std::vector<std::span<float>>& outputs,
                                      const std::vector<bool>& on_device) const {
  if (outputs.size() != plan_.outputs.size()) {
    return absl::InvalidArgumentError(
        StrCat(outputs.size(), " output buffers for ", plan_.outputs.size(), " outputs"));
  }
  const cudaStream_t stream = device_.lanes().lane(0).stream;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorRef& ref = plan_.outputs[i];
    if (static_cast<int64_t>(outputs[i].size()) != ref.num_elements()) {
      return absl::InvalidArgumentError(StrCat("output ", i, " buffer has ", outputs[i].size(),
                                               " values, expected ", ref.num_elements()));
    }
    const bool device = i < on_device.size() && on_device[i];
    RETURN_IF_ERROR(CudaCall(
        cudaMemcpyAsync(outputs[i].data(), RefPtr(arena_, plan_, ref),
                        outputs[i].size() * sizeof(float),
                        device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (output)"));
  }
  return CudaCall(cudaStreamSynchronize(stream), "cudaStreamSynchronize (outputs)");
}

}  // namespace iosfarm::worker::cuda
