// Serialized form of a Graph (protobuf iosfarm.v1.Graph, proto/iosfarm/v1/graph.proto).
//
// The protobuf types stay inside serialize.cc: callers see bytes only.
#ifndef IOSFARM_GRAPH_SERIALIZE_H_
#define IOSFARM_GRAPH_SERIALIZE_H_

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

inline constexpr uint32_t kGraphFormatVersion = 1;

// Binary protobuf encoding of `graph`, weights included. Deterministic: the
// same graph always gives the same bytes.
std::string SerializeGraph(const Graph& graph);

// The same bytes, handed to `sink` in pieces instead of one string (hashing
// a large model without holding its encoding).
void SerializeGraphTo(const Graph& graph, absl::FunctionRef<void(std::string_view)> sink);

// Parses and validates bytes from SerializeGraph. InvalidArgument names the
// node or field that is wrong (unknown op type, missing attributes, index out
// of range, unsupported format version, ...); the result always validates.
StatusOr<Graph> ParseGraph(std::string_view bytes);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_SERIALIZE_H_
