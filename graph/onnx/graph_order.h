// Structure of an ONNX GraphProto: name resolution, cycle check, liveness.
//
// OrderGraph checks that every value has one definition (graph input,
// initializer or node output), that every node input and graph output refers
// to a defined value, and that the nodes form a DAG; then returns the nodes
// the graph outputs depend on, in a topological order (ONNX files are meant
// to be sorted, but not all are). Errors are InvalidArgument naming the node
// and value. Thread-compatible; the GraphProto must outlive the result.
#ifndef IOSFARM_GRAPH_ONNX_GRAPH_ORDER_H_
#define IOSFARM_GRAPH_ONNX_GRAPH_ORDER_H_

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "onnx/onnx_pb.h"

namespace iosfarm::graph::onnx_import {

struct GraphOrder {
  // Indices into graph.node() of the live nodes, producers first.
  std::vector<int> order;
  // Per node index (all nodes): a unique, non-empty display name (the node's
  // name, or "<op_type>_<index>" when it has none or repeats one).
  std::vector<std::string> names;
  // Names read by live nodes or graph outputs.
  std::set<std::string> used;
};

// `defined` holds the graph input and initializer names.
StatusOr<GraphOrder> OrderGraph(const onnx::GraphProto& graph,
                                const std::set<std::string>& defined);

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_GRAPH_ORDER_H_
