// Test helper: real third-party models for tests. Exports torchvision CNNs to
// ONNX (opset 13, random weights) with tests/onnx/export_torchvision.py and
// /usr/bin/python3 ($IOSFARM_PYTHON when set) into <build dir>/onnx_models (IOSFARM_BINARY_DIR;
// without it, next to the test binary), once: a file already there is reused. Test processes
// running in parallel share the folder under a file lock (one exports, the others wait and reuse
// its files).
#ifndef IOSFARM_GRAPH_ONNX_TORCHVISION_EXPORT_H_
#define IOSFARM_GRAPH_ONNX_TORCHVISION_EXPORT_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace iosfarm::graph::onnx_import::testing {

// The path of torchvision model `model` exported to ONNX. When it must be
// exported, the models of `export_together` are exported in the same python
// run (which costs about as much as one). FailedPrecondition when python3,
// torch or torchvision are missing (the caller skips); Internal, with the
// exporter's output, when the export fails.
StatusOr<std::string> ExportTorchvisionModel(const std::string& model,
                                             const std::vector<std::string>& export_together);

// A torchvision model for numerical truth tests, in <build dir>/onnx_models/
// reference: its ONNX export (weights drawn from seed 0 whatever is exported
// with it), a seeded random input and PyTorch's own output on it (float32
// .npy files). Exported like ExportTorchvisionModel when a file is missing.
struct TorchReference {
  std::string onnx;
  std::string input;   // .npy
  std::string output;  // .npy, what torch's forward computes
};
StatusOr<TorchReference> ExportTorchvisionReference(
    const std::string& model, const std::vector<std::string>& export_together);

}  // namespace iosfarm::graph::onnx_import::testing

#endif  // IOSFARM_GRAPH_ONNX_TORCHVISION_EXPORT_H_
