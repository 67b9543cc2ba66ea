// libFuzzer target: ImportOnnxBytes on arbitrary bytes must return a Status,
// never crash, abort, hang or exhaust memory. Limits are lowered so that a
// valid-but-huge input fails fast instead of hitting libFuzzer's RSS limit.
// Build and run: see FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iosfarm::graph::onnx_import::OnnxImportOptions options;
  options.max_model_bytes = 4 << 20;
  options.max_nodes = 4000;
  options.max_tensor_elements = 1 << 22;
  if (size % 3 == 0) options.batch = 1 + static_cast<int64_t>(size % 5);
  auto graph = iosfarm::graph::onnx_import::ImportOnnxBytes(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", options);
  (void)graph;
  return 0;
}
