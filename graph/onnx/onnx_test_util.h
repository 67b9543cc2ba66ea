// Test helper: builds small ONNX ModelProtos in C++ (tests and fuzz seeds).
#ifndef IOSFARM_GRAPH_ONNX_ONNX_TEST_UTIL_H_
#define IOSFARM_GRAPH_ONNX_ONNX_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace iosfarm::graph::onnx_import::testing {

inline int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Float tensor stored as raw_data; empty `values` are filled with a ramp.
inline onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                                     std::vector<float> values = {}) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (values.empty()) {
    for (int64_t i = 0; i < Count(dims); ++i) values.push_back(0.01f * static_cast<float>(i % 97));
  }
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

// INT64 tensor in int64_data.
inline onnx::TensorProto IntTensor(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

inline void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name, float value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name, const char* value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name,
                    const std::vector<int64_t>& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : value) a->add_ints(v);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name,
                    const onnx::TensorProto& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = value;
}

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(7);
    model_.set_producer_name("iosfarm-test");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // dims: positive values are static, -1 is a dim_param "N", 0 is unknown.
  OnnxModelBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                          int32_t elem_type = onnx::TensorProto::FLOAT) {
    AddValueInfo(model_.mutable_graph()->add_input(), name, &dims, elem_type);
    return *this;
  }
  OnnxModelBuilder& Output(const std::string& name) {
    AddValueInfo(model_.mutable_graph()->add_output(), name, nullptr, onnx::TensorProto::FLOAT);
    return *this;
  }
  OnnxModelBuilder& Output(const std::string& name, const std::vector<int64_t>& dims) {
    AddValueInfo(model_.mutable_graph()->add_output(), name, &dims, onnx::TensorProto::FLOAT);
    return *this;
  }
  OnnxModelBuilder& Weight(const std::string& name, const std::vector<int64_t>& dims,
                           std::vector<float> values = {}) {
    *model_.mutable_graph()->add_initializer() = FloatTensor(name, dims, std::move(values));
    return *this;
  }
  OnnxModelBuilder& Ints(const std::string& name, const std::vector<int64_t>& values) {
    *model_.mutable_graph()->add_initializer() =
        IntTensor(name, {static_cast<int64_t>(values.size())}, values);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name.empty() ? outputs.empty() ? op : outputs[0] : name);
    for (const auto& i : inputs) node->add_input(i);
    for (const auto& o : outputs) node->add_output(o);
    return *node;
  }
  // A Constant node producing an INT64 1-D tensor.
  onnx::NodeProto& IntConstant(const std::string& output, const std::vector<int64_t>& values) {
    onnx::NodeProto& node = Node("Constant", {}, {output});
    SetAttr(node, "value", IntTensor("", {static_cast<int64_t>(values.size())}, values));
    return node;
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  std::string Serialize() const { return model_.SerializeAsString(); }

 private:
  static void AddValueInfo(onnx::ValueInfoProto* info, const std::string& name,
                           const std::vector<int64_t>* dims, int32_t elem_type) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    if (dims == nullptr) return;
    auto* shape = tensor->mutable_shape();
    for (int64_t d : *dims) {
      auto* dim = shape->add_dim();
      if (d > 0) {
        dim->set_dim_value(d);
      } else if (d == -1) {
        dim->set_dim_param("N");
      }
    }
  }

  onnx::ModelProto model_;
};

}  // namespace iosfarm::graph::onnx_import::testing

#endif  // IOSFARM_GRAPH_ONNX_ONNX_TEST_UTIL_H_
