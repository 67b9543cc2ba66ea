// Runs one graph node with the reference kernels (kernels.h).
#ifndef IOSFARM_WORKER_BACKENDS_REFERENCE_NODE_KERNEL_H_
#define IOSFARM_WORKER_BACKENDS_REFERENCE_NODE_KERNEL_H_

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "worker/backends/reference/kernels.h"

namespace iosfarm::worker::reference {

// Computes `node`'s outputs from `inputs` (in node.inputs order) with the
// weights `weights` (roles as in graph::Node::weights, all with data).
// `outputs` (in node.outputs order) have the inferred output shapes and are
// written in full. InvalidArgument naming the node when the input/output
// counts are wrong or a needed weight is missing or has no data; shapes are
// otherwise trusted (the graph passed shape inference). Thread-safe.
Status RunNode(const graph::Node& node, const std::map<std::string, graph::Tensor>& weights,
               const std::vector<ConstView>& inputs, const std::vector<MutableView>& outputs);

}  // namespace iosfarm::worker::reference

#endif  // IOSFARM_WORKER_BACKENDS_REFERENCE_NODE_KERNEL_H_
