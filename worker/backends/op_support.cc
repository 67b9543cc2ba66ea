#include "worker/backends/op_support.h"

#include "common/strings.h"

namespace iosfarm::worker {

OpTypeSet AllOpTypes() { return OpTypeSet().set(); }

Status CheckOpSupported(std::string_view backend, const OpTypeSet& supported,
                        const graph::Node& node) {
  const int type = static_cast<int>(node.type);
  if (type < 0 || type >= graph::kNumOpTypes || !supported.test(static_cast<size_t>(type))) {
    return absl::UnimplementedError(StrCat(backend, " backend: node '", node.name, "' (",
                                           graph::OpTypeName(node.type),
                                           "): op type not implemented"));
  }
  if (!graph::AttributesMatch(node.type, node.attrs)) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "' (",
                                             graph::OpTypeName(node.type),
                                             "): attributes do not match the op type"));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker
