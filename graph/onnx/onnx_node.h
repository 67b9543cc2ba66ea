// NodeView: read access to one ONNX NodeProto with typed, checked attributes.
//
// Every accessor that can fail returns a Status naming the node and the field,
// e.g. "node 'conv1' (Conv): attribute 'strides' must be INTS, got FLOAT".
// A NodeView borrows the NodeProto, which must outlive it. Thread-compatible.
#ifndef IOSFARM_GRAPH_ONNX_ONNX_NODE_H_
#define IOSFARM_GRAPH_ONNX_ONNX_NODE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/strings.h"
#include "onnx/onnx_pb.h"

namespace iosfarm::graph::onnx_import {

class NodeView {
 public:
  // `name` is the node's display name (never empty: the importer synthesises
  // one for unnamed nodes); `opset` is the model's default-domain opset.
  NodeView(const onnx::NodeProto& proto, std::string name, int64_t opset)
      : proto_(proto), name_(std::move(name)), opset_(opset) {}

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& op_type() const { return proto_.op_type(); }
  const std::string& name() const { return name_; }
  int64_t opset() const { return opset_; }

  int num_inputs() const { return proto_.input_size(); }
  // True when input i exists and is not the empty "absent optional" name.
  bool has_input(int i) const { return i < proto_.input_size() && !proto_.input(i).empty(); }
  // Input name, or "" when absent.
  const std::string& input(int i) const;
  int num_outputs() const { return proto_.output_size(); }
  const std::string& output(int i) const { return proto_.output(i); }

  // Fails when an attribute name repeats or an attribute has no name.
  Status CheckAttributesUnique() const;

  const onnx::AttributeProto* FindAttribute(std::string_view name) const;
  bool HasAttribute(std::string_view name) const { return FindAttribute(name) != nullptr; }

  // Typed getters: an absent attribute gives the default (or nullopt); an
  // attribute of another type is an error.
  StatusOr<int64_t> GetInt(std::string_view name, int64_t default_value) const;
  StatusOr<float> GetFloat(std::string_view name, float default_value) const;
  StatusOr<std::string> GetString(std::string_view name, std::string default_value) const;
  StatusOr<std::optional<std::vector<int64_t>>> GetInts(std::string_view name) const;
  StatusOr<std::optional<std::vector<float>>> GetFloats(std::string_view name) const;
  // nullptr when absent.
  StatusOr<const onnx::TensorProto*> GetTensor(std::string_view name) const;

  // GetInts that also requires exactly `size` entries when present.
  StatusOr<std::optional<std::vector<int64_t>>> GetIntsOfSize(std::string_view name,
                                                              size_t size) const;

  // InvalidArgument "node '<name>' (<op>): <message>".
  Status Error(std::string_view message) const;
  template <typename... Args>
  Status Errorf(const Args&... args) const {
    return Error(StrCat(args...));
  }
  // "node '<name>' (<op>)", for composing messages elsewhere.
  std::string Label() const;

 private:
  StatusOr<const onnx::AttributeProto*> FindTyped(std::string_view name,
                                                  onnx::AttributeProto::AttributeType type) const;

  const onnx::NodeProto& proto_;
  std::string name_;
  int64_t opset_;
};

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_ONNX_NODE_H_
