// The execution-relevant content of one operator, independent of its name,
// its id and where it sits in the graph.
//
// Two operators have the same content when they would run the same kernel on
// tensors of the same shapes: same op type, same attributes (every field),
// same input shapes (and which inputs are constants), same output shapes,
// same weight roles and shapes, same dtype (fp32 today). Weight *values* do
// not count: they do not change what is measured.
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_OP_CONTENT_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_OP_CONTENT_H_

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

// Canonical text of the node's content, e.g.
// "Conv|f32|in=[1,64,56,56]|const=|out=[1,64,56,56]|W=[64,64,3,3]|B=[64]|oc=64 k=3,3 ...".
// Requires inferred shapes. Deterministic and stable across runs.
std::string OpContentString(const graph::Graph& graph, const graph::Node& node);

// HashBytes(OpContentString(...)).
uint64_t OpContentHash(const graph::Graph& graph, const graph::Node& node);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_OP_CONTENT_H_
