// The native part of the Python package `iosfarm` (iosfarm._native, re-exported
// by python/iosfarm/__init__.py): the public runtime API
// (include/iosfarm/runtime.h) for numpy users.
//
//   import iosfarm, numpy as np
//   s = iosfarm.Session("model.onnx", schedule="model.schedule.json", backend="cpu")
//   y = s.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["output"]
//
// Inputs may be any array numpy can turn into float32 (copied only when it
// is not already C-contiguous float32) or, on a cuda session, a CUDA array
// (__cuda_array_interface__: torch.cuda tensors, CuPy), read on the GPU;
// outputs are new float32 arrays, or written into the caller's buffers
// (numpy or CUDA arrays) with run(inputs, outputs={...}).
// Errors raise iosfarm.Error (a RuntimeError) with the library's message and
// a `code` attribute ("invalid_argument", "not_found", ...). The GIL is
// released while a session opens or runs, so threads run sessions in parallel.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>

#include "iosfarm/runtime.h"

namespace py = pybind11;

namespace {

const char* CodeName(iosfarm::ErrorCode code) {
  switch (code) {
    case iosfarm::ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case iosfarm::ErrorCode::kNotFound:
      return "not_found";
    case iosfarm::ErrorCode::kFailedPrecondition:
      return "failed_precondition";
    case iosfarm::ErrorCode::kUnimplemented:
      return "unimplemented";
    case iosfarm::ErrorCode::kUnavailable:
      return "unavailable";
    case iosfarm::ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

py::dict Shapes(const std::vector<iosfarm::TensorInfo>& infos) {
  py::dict shapes;
  for (const iosfarm::TensorInfo& info : infos) {
    shapes[py::str(info.name)] = py::tuple(py::cast(info.shape));
  }
  return shapes;
}

// What an object's __cuda_array_interface__ (a torch.cuda tensor, a CuPy
// array, Numba's) describes, checked for what the runtime reads and writes:
// contiguous float32, no mask.
struct CudaArray {
  float* data = nullptr;
  size_t size = 0;
  std::vector<int64_t> shape;
  std::uintptr_t stream = 0;  // the producer's stream (0: none given)
  bool readonly = false;
};

std::optional<CudaArray> AsCudaArray(const py::handle& object, const std::string& what) {
  if (!py::hasattr(object, "__cuda_array_interface__")) return std::nullopt;
  const py::dict cai = object.attr("__cuda_array_interface__");
  const std::string typestr = py::str(cai["typestr"]);
  if (typestr != "<f4") {
    throw py::type_error(what + " is a CUDA array of type '" + typestr +
                         "'; the runtime reads and writes float32 ('<f4') only");
  }
  if (cai.contains("mask") && !cai["mask"].is_none()) {
    throw py::type_error(what + " is a masked CUDA array; the runtime takes no masks");
  }
  CudaArray array;
  size_t size = 1;
  for (const py::handle& extent : py::tuple(cai["shape"])) {
    array.shape.push_back(extent.cast<int64_t>());
    size *= static_cast<size_t>(array.shape.back());
  }
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    const py::tuple strides(cai["strides"]);
    int64_t expected = sizeof(float);
    for (size_t i = array.shape.size(); i-- > 0;) {
      if (array.shape[i] > 1 && strides[i].cast<int64_t>() != expected) {
        throw py::type_error(what +
                             " is a CUDA array that is not C-contiguous (call "
                             ".contiguous() first)");
      }
      expected *= array.shape[i];
    }
  }
  const py::tuple data(cai["data"]);
  array.data = reinterpret_cast<float*>(data[0].cast<std::uintptr_t>());
  array.readonly = data[1].cast<bool>();
  array.size = size;
  if (cai.contains("stream") && !cai["stream"].is_none()) {
    array.stream = cai["stream"].cast<std::uintptr_t>();
  }
  return array;
}

py::object Run(iosfarm::Session& session, const py::dict& feed, const py::object& into) {
  std::vector<FloatArray> arrays;  // keeps converted inputs alive
  arrays.reserve(feed.size());
  std::map<std::string, iosfarm::TensorView> inputs;
  for (const auto& [key, value] : feed) {
    const std::string name = py::str(key).cast<std::string>();
    if (std::optional<CudaArray> cuda = AsCudaArray(value, "input '" + name + "'")) {
      inputs.emplace(name, iosfarm::TensorView({cuda->data, cuda->size}, std::move(cuda->shape),
                                               iosfarm::Memory::kCuda, cuda->stream));
      continue;
    }
    arrays.push_back(FloatArray::ensure(value));
    if (!arrays.back()) {
      throw py::type_error("input '" + name + "' cannot be converted to a float32 array");
    }
    const FloatArray& array = arrays.back();
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    inputs.emplace(name, iosfarm::TensorView({array.data(), static_cast<size_t>(array.size())},
                                             std::move(shape)));
  }
  std::map<std::string, iosfarm::OutputBuffer> outputs;
  py::dict result;
  if (into.is_none()) {
    for (const iosfarm::TensorInfo& info : session.OutputsFor(inputs)) {
      FloatArray array(std::vector<py::ssize_t>(info.shape.begin(), info.shape.end()));
      outputs.emplace(info.name, iosfarm::OutputBuffer(std::span<float>(
                                     array.mutable_data(), static_cast<size_t>(array.size()))));
      result[py::str(info.name)] = std::move(array);
    }
  } else {
    // Caller buffers: written in place, never converted (a copy would
    // receive the outputs instead of the caller's array).
    for (const auto& [key, value] : py::dict(into)) {
      const std::string name = py::str(key).cast<std::string>();
      const std::string what = "output '" + name + "'";
      if (std::optional<CudaArray> cuda = AsCudaArray(value, what)) {
        if (cuda->readonly) throw py::type_error(what + " is a read-only CUDA array");
        outputs.emplace(name,
                        iosfarm::OutputBuffer({cuda->data, cuda->size}, iosfarm::Memory::kCuda));
        continue;
      }
      if (!py::isinstance<py::array>(value)) {
        throw py::type_error(what + " must be a float32 numpy array or a CUDA array");
      }
      py::array array = py::reinterpret_borrow<py::array>(value);
      // array_t's check compares dtypes by equivalence (any native float32).
      if (!py::isinstance<py::array_t<float>>(value) || !(array.flags() & py::array::c_style) ||
          !array.writeable()) {
        throw py::type_error(what + " must be a writable, C-contiguous float32 array");
      }
      outputs.emplace(
          name, iosfarm::OutputBuffer(std::span<float>(static_cast<float*>(array.mutable_data()),
                                                       static_cast<size_t>(array.size()))));
    }
  }
  {
    py::gil_scoped_release release;
    session.Run(inputs, outputs);
  }
  if (!into.is_none()) return into;
  return result;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "iosfarm: run CNNs with their tuned IOS schedules (see include/iosfarm/runtime.h)";
  m.attr("__version__") = iosfarm::Version();

  static py::exception<iosfarm::Error> error(m, "Error", PyExc_RuntimeError);
  error.attr("__module__") = "iosfarm";  // re-exported by the package
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const iosfarm::Error& e) {
      py::object instance = py::handle(error.ptr())(e.what());
      instance.attr("code") = CodeName(e.code());
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });

  py::class_<iosfarm::Session>(m, "Session", R"doc(
A model opened with a schedule on a backend, ready to run.

Session(model, *, schedule=None, backend="cpu", batch=0, threads=0,
        cuda_graph=True, tune_if_missing=False, latency_db=None, device_key=None,
        sequential_fallback=False)

model: path to an .onnx file or a tuned model file (.iosfarm, from
  `iosfarm tune --batch 1,8 --save FILE`; str or os.PathLike), or a zoo model
  name. A tuned model file's session runs each input batch with the schedule
  tuned for it (`batches`); a batch it lacks, or a file tuned for another
  device, raises iosfarm.Error saying how to tune it, unless
  sequential_fallback=True runs those sequentially (`fallback` says why).
schedule: None or "sequential", "greedy", or a schedule file from
  `iosfarm search -o`; with tune_if_missing=True a missing file is tuned on
  this backend and written.
backend: "cpu", "cuda" or "cuda:N".
latency_db, device_key: where tuning finds and stores stage latencies (by
  default the database and device key of `iosfarm tune` on this machine;
  on cuda with cuda_graph=True stages are timed as CUDA graphs, under the key
  of `iosfarm tune --cuda-graph-stages`; latency_db="none" measures every
  stage and stores nothing). The `tuning`
  property says what the last tuning measured.)doc")
      .def(py::init([](const py::object& model, const py::object& schedule,
                       const std::string& backend, int64_t batch, int threads, bool cuda_graph,
                       bool tune_if_missing, const py::object& latency_db,
                       const std::string& device_key, bool sequential_fallback) {
             const py::object fspath = py::module_::import("os").attr("fspath");
             const std::string path = py::str(fspath(model)).cast<std::string>();
             iosfarm::SessionOptions options;
             if (!schedule.is_none()) options.schedule = py::str(fspath(schedule));
             options.backend = backend;
             options.batch = batch;
             options.cpu_threads = threads;
             options.cuda_graph = cuda_graph;
             options.tune_if_missing = tune_if_missing;
             if (!latency_db.is_none()) options.latency_db = py::str(fspath(latency_db));
             options.device_key = device_key;
             options.sequential_fallback = sequential_fallback;
             py::gil_scoped_release release;
             return iosfarm::Session(path, options);
           }),
           py::arg("model"), py::kw_only(), py::arg("schedule") = py::none(),
           py::arg("backend") = "cpu", py::arg("batch") = 0, py::arg("threads") = 0,
           py::arg("cuda_graph") = true, py::arg("tune_if_missing") = false,
           py::arg("latency_db") = py::none(), py::arg("device_key") = "",
           py::arg("sequential_fallback") = false)
      .def("run", &Run, py::arg("inputs"), py::arg("outputs") = py::none(),
           R"doc(Runs the model once: {input name: array} -> {output name: float32 array}.

Inputs are numpy arrays (or anything numpy turns into float32) or, on a cuda
session, CUDA arrays (objects with __cuda_array_interface__: torch.cuda
tensors, CuPy), read in place on the GPU after their stream's queued work.
outputs: None (new numpy arrays are returned) or {output name: buffer}, each
a writable C-contiguous float32 numpy array or, on cuda, a CUDA array, written
in place; the dict is returned.)doc")
      .def_property_readonly(
          "inputs", [](const iosfarm::Session& s) { return Shapes(s.inputs()); },
          "{input name: shape}")
      .def_property_readonly(
          "outputs", [](const iosfarm::Session& s) { return Shapes(s.outputs()); },
          "{output name: shape}")
      .def(
          "outputs_at",
          [](iosfarm::Session& s, int64_t batch) {
            std::map<std::string, iosfarm::TensorView> probe;  // shapes only
            if (!s.inputs().empty()) {
              std::vector<int64_t> shape = s.inputs().front().shape;
              if (!shape.empty()) shape.front() = batch;
              probe.emplace(s.inputs().front().name, iosfarm::TensorView({}, std::move(shape)));
            }
            std::vector<iosfarm::TensorInfo> outputs;
            {
              py::gil_scoped_release release;
              outputs = s.OutputsFor(probe);
            }
            return Shapes(outputs);
          },
          py::arg("batch"),
          "{output name: shape} of a run at `batch` (raises iosfarm.Error for a batch the "
          "session does not take)")
      .def_property_readonly("batches", &iosfarm::Session::batches,
                             "the batch sizes run takes: a tuned model file's, else the model's")
      .def_property_readonly("fallback", &iosfarm::Session::fallback,
                             "why a tuned model file's session runs the sequential schedule "
                             "(another device or version); '' when it runs the tuned ones")
      .def_property_readonly("model_name", &iosfarm::Session::model_name)
      .def_property_readonly("schedule_kind", &iosfarm::Session::schedule_kind)
      .def_property_readonly("num_stages", &iosfarm::Session::num_stages)
      .def_property_readonly("device", &iosfarm::Session::device)
      .def_property_readonly(
          "tuning",
          [](const iosfarm::Session& s) {
            const iosfarm::TuningReport& t = s.tuning();
            py::dict report;
            report["tuned"] = t.tuned;
            report["stages_from_database"] = t.stages_from_database;
            report["stages_measured"] = t.stages_measured;
            report["latency_db"] = t.latency_db;
            report["device_key"] = t.device_key;
            return report;
          },
          "what tuning on first use did: tuned, stages_from_database, stages_measured, "
          "latency_db, device_key")
      .def("__repr__", [](const iosfarm::Session& s) {
        return "<iosfarm.Session " + s.model_name() + ", " + s.schedule_kind() + " schedule of " +
               std::to_string(s.num_stages()) + " stages on " + s.device() + ">";
      });
  m.attr("Session").attr("__module__") = "iosfarm";
}
