// libFuzzer target: ImportOnnxBytes on arbitrary bytes must return a Status,
// never crash, abort, hang or exhaust memory. Limits are lowered so that a
// valid-but-huge input fails fast instead of hitting libFuzzer's RSS limit.
//
// Half of the mutations are structure-aware: the input is parsed as a
// ModelProto and one semantic field is changed (an op type, a node input, an
// attribute value, a tensor dimension or element type, an input dimension,
// the opset), so that the fuzzer reaches the importer's checks instead of
// stopping at the protobuf parser. The other half are libFuzzer's byte
// mutations. Build and run: see FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "graph/onnx/onnx_importer.h"
#include "onnx/onnx_pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

constexpr const char* kOpTypes[] = {"Conv",
                                    "MaxPool",
                                    "AveragePool",
                                    "GlobalAveragePool",
                                    "Relu",
                                    "Clip",
                                    "Sigmoid",
                                    "HardSigmoid",
                                    "HardSwish",
                                    "Add",
                                    "Sub",
                                    "Mul",
                                    "Div",
                                    "Concat",
                                    "Split",
                                    "Slice",
                                    "Pad",
                                    "Reshape",
                                    "Flatten",
                                    "Transpose",
                                    "ReduceMean",
                                    "Gemm",
                                    "MatMul",
                                    "Softmax",
                                    "BatchNormalization",
                                    "Identity",
                                    "Dropout",
                                    "Constant",
                                    "ConstantOfShape",
                                    "Shape",
                                    "Gather",
                                    "Unsqueeze",
                                    "Squeeze",
                                    "Cast",
                                    "Range",
                                    "Equal",
                                    "Where",
                                    "Expand",
                                    "Min",
                                    "Neg",
                                    "Unknown"};

constexpr int64_t kInterestingInts[] = {0,
                                        1,
                                        -1,
                                        2,
                                        3,
                                        -2,
                                        7,
                                        64,
                                        1 << 20,
                                        int64_t{1} << 31,
                                        int64_t{1} << 40,
                                        std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min()};

class Mutator {
 public:
  explicit Mutator(unsigned seed) : rng_(seed) {}

  // Changes one semantic field of `model`; false when it found nothing to change.
  bool Mutate(onnx::ModelProto& model) {
    onnx::GraphProto& graph = *model.mutable_graph();
    switch (Pick(7)) {
      case 0:
        if (graph.node_size() == 0) return false;
        Node(graph).set_op_type(kOpTypes[Pick(std::size(kOpTypes))]);
        return true;
      case 1:
        return MutateInputName(graph);
      case 2:
        return MutateAttribute(graph);
      case 3:
        return MutateInitializer(graph);
      case 4:
        return MutateGraphInput(graph);
      case 5:
        if (model.opset_import_size() == 0) return false;
        model.mutable_opset_import(0)->set_version(9 + static_cast<int64_t>(Pick(11)));
        return true;
      default:
        if (graph.node_size() < 2) return false;
        graph.mutable_node()->SwapElements(static_cast<int>(Pick(graph.node_size())),
                                           static_cast<int>(Pick(graph.node_size())));
        return true;
    }
  }

 private:
  size_t Pick(size_t n) { return n == 0 ? 0 : rng_() % n; }
  int64_t Interesting() { return kInterestingInts[Pick(std::size(kInterestingInts))]; }
  onnx::NodeProto& Node(onnx::GraphProto& graph) {
    return *graph.mutable_node(static_cast<int>(Pick(graph.node_size())));
  }

  bool MutateInputName(onnx::GraphProto& graph) {
    if (graph.node_size() == 0) return false;
    std::vector<std::string> names;
    for (const auto& node : graph.node())
      names.insert(names.end(), node.output().begin(), node.output().end());
    for (const auto& init : graph.initializer()) names.push_back(init.name());
    for (const auto& input : graph.input()) names.push_back(input.name());
    names.push_back("");
    onnx::NodeProto& node = Node(graph);
    const std::string& name = names[Pick(names.size())];
    if (node.input_size() == 0 || Pick(3) == 0) {
      node.add_input(name);
    } else {
      node.set_input(static_cast<int>(Pick(node.input_size())), name);
    }
    return true;
  }

  bool MutateAttribute(onnx::GraphProto& graph) {
    if (graph.node_size() == 0) return false;
    onnx::NodeProto& node = Node(graph);
    if (node.attribute_size() == 0) return false;
    onnx::AttributeProto& attr =
        *node.mutable_attribute(static_cast<int>(Pick(node.attribute_size())));
    switch (attr.type()) {
      case onnx::AttributeProto::INT:
        attr.set_i(Interesting());
        return true;
      case onnx::AttributeProto::INTS:
        if (attr.ints_size() == 0 || Pick(4) == 0) {
          attr.add_ints(Interesting());
        } else {
          attr.set_ints(static_cast<int>(Pick(attr.ints_size())), Interesting());
        }
        return true;
      case onnx::AttributeProto::FLOAT:
        attr.set_f(static_cast<float>(Interesting()));
        return true;
      case onnx::AttributeProto::TENSOR:
        return MutateTensor(*attr.mutable_t());
      default:
        attr.set_type(static_cast<onnx::AttributeProto::AttributeType>(Pick(12)));
        return true;
    }
  }

  bool MutateTensor(onnx::TensorProto& tensor) {
    switch (Pick(4)) {
      case 0:
        if (tensor.dims_size() == 0) return false;
        tensor.set_dims(static_cast<int>(Pick(tensor.dims_size())), Interesting());
        return true;
      case 1:
        tensor.set_data_type(static_cast<int32_t>(Pick(17)));
        return true;
      case 2:
        tensor.add_dims(1 + static_cast<int64_t>(Pick(3)));
        return true;
      default:
        if (tensor.raw_data().empty()) return false;
        tensor.mutable_raw_data()->resize(Pick(tensor.raw_data().size() + 8));
        return true;
    }
  }

  bool MutateInitializer(onnx::GraphProto& graph) {
    if (graph.initializer_size() == 0) return false;
    return MutateTensor(
        *graph.mutable_initializer(static_cast<int>(Pick(graph.initializer_size()))));
  }

  bool MutateGraphInput(onnx::GraphProto& graph) {
    if (graph.input_size() == 0) return false;
    auto* shape = graph.mutable_input(static_cast<int>(Pick(graph.input_size())))
                      ->mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape();
    if (shape->dim_size() == 0 || Pick(5) == 0) {
      shape->add_dim()->set_dim_value(1 + static_cast<int64_t>(Pick(4)));
      return true;
    }
    auto* dim = shape->mutable_dim(static_cast<int>(Pick(shape->dim_size())));
    if (Pick(4) == 0) {
      dim->set_dim_param("N");
    } else {
      dim->set_dim_value(Interesting());
    }
    return true;
  }

  std::mt19937_64 rng_;
};

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 2 == 0) {
    onnx::ModelProto model;
    if (model.ParseFromArray(data, static_cast<int>(size))) {
      Mutator mutator(seed);
      bool changed = false;
      for (int i = 0; i < 1 + static_cast<int>(seed % 3); ++i) changed |= mutator.Mutate(model);
      const std::string bytes = model.SerializeAsString();
      if (changed && bytes.size() <= max_size) {
        std::memcpy(data, bytes.data(), bytes.size());
        return bytes.size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

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
