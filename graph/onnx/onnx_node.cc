#include "graph/onnx/onnx_node.h"

#include <set>

namespace iosfarm::graph::onnx_import {
namespace {

using onnx::AttributeProto;

std::string AttributeTypeName(AttributeProto::AttributeType type) {
  if (AttributeProto::AttributeType_IsValid(type)) {
    return AttributeProto::AttributeType_Name(type);
  }
  return StrCat("type ", static_cast<int>(type));
}

// The effective type of `attr`: its declared type, or for old files that
// leave it UNDEFINED, the type of the field that is set.
AttributeProto::AttributeType EffectiveType(const AttributeProto& attr) {
  if (attr.type() != AttributeProto::UNDEFINED) return attr.type();
  if (attr.has_i()) return AttributeProto::INT;
  if (attr.has_f()) return AttributeProto::FLOAT;
  if (attr.has_s()) return AttributeProto::STRING;
  if (attr.has_t()) return AttributeProto::TENSOR;
  if (attr.has_g()) return AttributeProto::GRAPH;
  if (attr.ints_size() > 0) return AttributeProto::INTS;
  if (attr.floats_size() > 0) return AttributeProto::FLOATS;
  if (attr.strings_size() > 0) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

const std::string& EmptyString() {
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

}  // namespace

const std::string& NodeView::input(int i) const {
  return i < proto_.input_size() ? proto_.input(i) : EmptyString();
}

Status NodeView::CheckAttributesUnique() const {
  std::set<std::string_view> names;
  for (const AttributeProto& attr : proto_.attribute()) {
    if (attr.name().empty()) return Error("has an attribute with no name");
    if (!names.insert(attr.name()).second) {
      return Errorf("attribute '", attr.name(), "' appears more than once");
    }
  }
  return absl::OkStatus();
}

const AttributeProto* NodeView::FindAttribute(std::string_view name) const {
  for (const AttributeProto& attr : proto_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

StatusOr<const AttributeProto*> NodeView::FindTyped(std::string_view name,
                                                    AttributeProto::AttributeType type) const {
  const AttributeProto* attr = FindAttribute(name);
  if (attr == nullptr) return attr;
  const AttributeProto::AttributeType actual = EffectiveType(*attr);
  // An empty list may be stored with UNDEFINED type and no field set.
  if (actual == AttributeProto::UNDEFINED &&
      (type == AttributeProto::INTS || type == AttributeProto::FLOATS)) {
    return attr;
  }
  if (actual != type) {
    return Errorf("attribute '", name, "' must be ", AttributeTypeName(type), ", got ",
                  AttributeTypeName(actual));
  }
  return attr;
}

StatusOr<int64_t> NodeView::GetInt(std::string_view name, int64_t default_value) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::INT));
  return attr == nullptr ? default_value : attr->i();
}

StatusOr<float> NodeView::GetFloat(std::string_view name, float default_value) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::FLOAT));
  return attr == nullptr ? default_value : attr->f();
}

StatusOr<std::string> NodeView::GetString(std::string_view name, std::string default_value) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::STRING));
  return attr == nullptr ? default_value : attr->s();
}

StatusOr<std::optional<std::vector<int64_t>>> NodeView::GetInts(std::string_view name) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::INTS));
  if (attr == nullptr) return std::optional<std::vector<int64_t>>();
  return std::optional<std::vector<int64_t>>(
      std::vector<int64_t>(attr->ints().begin(), attr->ints().end()));
}

StatusOr<std::optional<std::vector<float>>> NodeView::GetFloats(std::string_view name) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::FLOATS));
  if (attr == nullptr) return std::optional<std::vector<float>>();
  return std::optional<std::vector<float>>(
      std::vector<float>(attr->floats().begin(), attr->floats().end()));
}

StatusOr<const onnx::TensorProto*> NodeView::GetTensor(std::string_view name) const {
  ASSIGN_OR_RETURN(const AttributeProto* attr, FindTyped(name, AttributeProto::TENSOR));
  return attr == nullptr ? nullptr : &attr->t();
}

StatusOr<std::optional<std::vector<int64_t>>> NodeView::GetIntsOfSize(std::string_view name,
                                                                      size_t size) const {
  ASSIGN_OR_RETURN(auto values, GetInts(name));
  if (values.has_value() && values->size() != size) {
    return Errorf("attribute '", name, "' has ", values->size(), " entries, expected ", size);
  }
  return values;
}

Status NodeView::Error(std::string_view message) const {
  return absl::InvalidArgumentError(StrCat(Label(), ": ", message));
}

std::string NodeView::Label() const { return StrCat("node '", name_, "' (", op_type(), ")"); }

}  // namespace iosfarm::graph::onnx_import
