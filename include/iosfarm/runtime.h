// iosfarm runtime: runs a CNN with its tuned IOS schedule on real inputs.
//
//   #include <iosfarm/runtime.h>
//
//   iosfarm::SessionOptions options;
//   options.schedule = "resnet50.schedule.json";   // from `iosfarm search -o` or `iosfarm tune`
//   iosfarm::Session session("resnet50.onnx", options);
//   std::vector<float> image(1 * 3 * 224 * 224);
//   auto outputs = session.Run({{"input", iosfarm::TensorView(image, {1, 3, 224, 224})}});
//   const iosfarm::Tensor& logits = outputs.at("output");
//
// Models: an ONNX file (its real weights are used), ONNX bytes, or a name of
// the built-in zoo (`iosfarm models`; deterministic pseudo-random weights,
// the same on every backend). Tensors are fp32, row-major (NCHW for images),
// in host memory or, on the cuda backend, in the GPU's memory (Memory::kCuda:
// inputs and outputs then never cross to the host).
//
// Schedules (SessionOptions::schedule): empty or "sequential" (one operator
// per stage), "greedy" (every ready operator in one stage), a schedule file
// written by `iosfarm search -o` / `iosfarm tune -o`, the JSON text of one
// (anything starting with '{'), or, with
// SessionOptions::tune_if_missing, a file that does not exist yet: the
// session then runs the IOS search on its own backend and writes the
// schedule to that file, so the next session on the same model and batch
// starts at once. Tuning takes its stage latencies from the latency database
// that `iosfarm tune` keeps on this machine (SessionOptions::latency_db) and
// measures only the stages it lacks there (minutes on a CPU for a model that
// is new to it), storing them for the next tuning by either. A schedule
// made for another model, batch or version of the model is refused, saying
// which ("schedule is for squeezenet, batch 1; this model is resnet50, batch
// 1").
//
// Tuned model files (".iosfarm", from `iosfarm tune MODEL --batch 1,8
// --save model.iosfarm`; docs/tuned-model-format.md) hold the model and a
// schedule per batch size: Session("model.iosfarm") prepares every one and
// each Run takes the schedule of its input's batch (the first dimension).
// A batch the file lacks, a file tuned for another device key, or written by
// an iosfarm whose schedules this one does not read (another major version;
// before 1.0, another minor one) is refused with kFailedPrecondition saying
// how to tune it, unless SessionOptions::sequential_fallback runs it with
// the sequential schedule instead (Session::fallback() says why). A changed
// or truncated file is refused with kInvalidArgument naming it.
//
// Backends: "cpu" (oneDNN, every core unless SessionOptions::cpu_threads),
// "cuda" or "cuda:N" (device N; with SessionOptions::cuda_graph the whole
// schedule is captured once and replayed as one CUDA graph). A cuda session
// with cuda_graph (the default) tunes with every stage timed as a CUDA graph,
// under the device key "<gpu>-graph-stages" that `iosfarm tune
// --cuda-graph-stages` uses: eager stage latencies carry host enqueueing that
// a graph never pays, and schedules searched with them run slower as one
// graph (docs/results.md). Without cuda_graph it tunes eagerly
// under the GPU's key, as plain `iosfarm tune` does.
//
// Errors: every failure throws iosfarm::Error, whose message names what is
// wrong (the file, the input and its shape, the operator) and whose code()
// tells the kind.
//
// Thread safety: a Session may be used from many threads; Run calls on one
// Session are serialised (one runs at a time, the others wait). Different
// Sessions run independently. Session is movable, not copyable; a
// moved-from Session may only be destroyed or assigned to.
#ifndef IOSFARM_RUNTIME_H_
#define IOSFARM_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace iosfarm {

// The version of the library, e.g. "0.1.0".
std::string Version();

enum class ErrorCode {
  kInvalidArgument,     // a bad model, schedule, option, input name or shape
  kNotFound,            // a missing file, model or device
  kFailedPrecondition,  // e.g. a schedule made for another model
  kUnimplemented,       // an operator or backend this build lacks
  kUnavailable,         // e.g. no GPU answers; a file that cannot be written
  kInternal,            // a library (oneDNN, CUDA) failed
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ~Error() override;
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A graph input or output: its name in the model and its shape.
struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
};

// Where a caller's buffer lives. kCuda: memory of the session's CUDA device
// (cudaMalloc, a torch.cuda tensor's data_ptr(), CuPy), copied device to
// device; only sessions on a "cuda" backend take it (others throw
// kInvalidArgument naming the buffer), and they check that the pointer is
// memory of their device.
enum class Memory { kHost, kCuda };

// fp32 data the caller owns, row-major, viewed for one Run call.
struct TensorView {
  TensorView(std::span<const float> data, std::vector<int64_t> shape, Memory memory = Memory::kHost,
             std::uintptr_t cuda_stream = 0)
      : data(data), shape(std::move(shape)), memory(memory), cuda_stream(cuda_stream) {}
  std::span<const float> data;
  std::vector<int64_t> shape;
  Memory memory = Memory::kHost;
  // With kCuda: the cudaStream_t (as an integer; 0: none, the data is
  // ready; 1 and 2: the legacy and per-thread default streams, as in
  // __cuda_array_interface__) whose queued work writes the data. Run waits
  // for that work before it reads.
  std::uintptr_t cuda_stream = 0;
};

// Caller memory one graph output is written into: a span of exactly the
// output's element count, in host or (kCuda) device memory. Device outputs
// are complete when Run returns.
struct OutputBuffer {
  explicit OutputBuffer(std::span<float> data, Memory memory = Memory::kHost)
      : data(data), memory(memory) {}
  std::span<float> data;
  Memory memory = Memory::kHost;
};

// fp32 data owned by the tensor, row-major.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Reads a .npy file (NumPy's format): float32 or float64 (narrowed to
// float32), C or Fortran order. Throws kNotFound, or kInvalidArgument naming
// the file (not .npy, truncated, another dtype).
Tensor ReadNpy(const std::string& path);
// Writes `tensor` as a float32 .npy file. Throws kUnavailable naming the file.
void WriteNpy(const std::string& path, const Tensor& tensor);

// Robust statistics of timed runs, milliseconds.
struct ScheduleTiming {
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  int runs = 0;
};

struct SessionOptions {
  std::string backend = "cpu";   // "cpu", "cuda" or "cuda:N"
  std::string schedule;          // a name, a file or JSON text: see the top of the file
  bool tune_if_missing = false;  // tune and write `schedule` when it does not exist
  // Tuning: the latency database shared with `iosfarm tune` ("" = its
  // default, $XDG_CACHE_HOME/iosfarm/latency.db or ~/.cache/iosfarm/latency.db;
  // "none" = measure every stage and store nothing), and the device key of
  // the latencies in it ("" = the one `iosfarm tune` uses for this backend on
  // this machine, e.g. "local-cpu", or on cuda "nvidia-h100-80gb-hbm3" and,
  // with cuda_graph, "nvidia-h100-80gb-hbm3-graph-stages"; latencies of
  // another key are never used).
  std::string latency_db;
  std::string device_key;
  int64_t batch = 0;             // 0: the model's own (zoo models: 1); else override it
  int cpu_threads = 0;           // cpu: 0 means every core
  bool cuda_graph = true;        // cuda: replay the schedule as one CUDA graph
  // A tuned model file: run what it holds no usable schedule for (a batch it
  // lacks, another device key or version) with the sequential schedule
  // rather than refuse it (see the top of the file).
  bool sequential_fallback = false;
};

// What tuning on first use did (SessionOptions::tune_if_missing).
struct TuningReport {
  bool tuned = false;                // this session ran the IOS search
  int64_t stages_from_database = 0;  // stage latencies the database held
  int64_t stages_measured = 0;       // measured on this session's backend (and stored)
  std::string latency_db;            // the database file ("" with "none")
  std::string device_key;
};

class Session {
 public:
  // Opens `model`: a path to an .onnx file or a tuned model file
  // (.iosfarm), or a zoo model name.
  explicit Session(const std::string& model, const SessionOptions& options = {});
  // Opens ONNX `bytes` (a serialized ModelProto) named `name` in messages.
  static Session FromOnnxBytes(std::string_view bytes, std::string_view name,
                               const SessionOptions& options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // The graph's inputs and outputs at the session's batch (a tuned model
  // file's: SessionOptions::batch if set, else its smallest).
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The batch sizes Run takes: a tuned model file's, else the one of
  // inputs(). With sequential_fallback a tuned model file's session also
  // takes any other (preparing it on first use, sequentially).
  std::vector<int64_t> batches() const;
  // Why a tuned model file's session runs the sequential schedule where the
  // file holds a tuned one (another device key or version); "" otherwise.
  const std::string& fallback() const;
  // The model's name: the zoo name or the ONNX file's stem.
  const std::string& model_name() const;
  // "sequential", "greedy" or "ios": the schedule of the session's batch.
  const std::string& schedule_kind() const;
  // Stages of that schedule.
  int num_stages() const;
  // E.g. "cpu: CPU (oneDNN 3.0, avx2, 8 threads, nChw8c activations)".
  const std::string& device() const;
  // Whether and how this session tuned its schedule.
  const TuningReport& tuning() const;

  // Runs the model once. `inputs` names every graph input exactly once, with
  // its shape; returns every graph output by name. Throws kInvalidArgument
  // naming a missing, unknown or misshapen input (a tuned model file's
  // session: kFailedPrecondition for a batch it does not take).
  std::map<std::string, Tensor> Run(const std::map<std::string, TensorView>& inputs);

  // The outputs a Run with `inputs` writes, with their shapes (a tuned model
  // file's session: those of the inputs' batch), for sizing caller buffers.
  // Reads only the shapes of `inputs` (their data may be empty). Throws as
  // Run does for a batch the session does not take.
  std::vector<TensorInfo> OutputsFor(const std::map<std::string, TensorView>& inputs);

  // The same, writing each output into caller host memory: `outputs` names
  // every graph output with a span of exactly its element count (no
  // allocation).
  void Run(const std::map<std::string, TensorView>& inputs,
           const std::map<std::string, std::span<float>>& outputs);
  // The same into host or device memory (OutputBuffer). With device inputs
  // and outputs on cuda, nothing crosses to the host.
  void Run(const std::map<std::string, TensorView>& inputs,
           const std::map<std::string, OutputBuffer>& outputs);

  // Times the schedule of the session's batch alone, as `iosfarm run --iterations` does: `warmup`
  // untimed then `runs` timed executions with the inputs already in place
  // and nothing copied in or out (on cuda, device time). What a Run call
  // costs beyond this is the runtime's own overhead (bench/runtime_bench).
  ScheduleTiming TimeSchedule(int runs, int warmup = 3);

 private:
  struct Impl;
  friend struct SessionOpener;  // the library's own, in session.cc
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace iosfarm

#endif  // IOSFARM_RUNTIME_H_
