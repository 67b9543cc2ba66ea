// Small graphs shared by the graph/ tests.
#ifndef IOSFARM_GRAPH_TEST_GRAPHS_H_
#define IOSFARM_GRAPH_TEST_GRAPHS_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "graph/graph.h"
#include "graph/graph_builder.h"

namespace iosfarm::graph::testing {

// The id of the node called `name`, kNoNode when there is none.
NodeId NodeNamed(const Graph& graph, std::string_view name);

// The conv the stage tests build most: `out` channels, `kernel`, stride 1,
// symmetric `padding`, activation `act` (Relu unless told) and a bias unless
// `bias` is false.
ConvSpec ConvSpecOf(int64_t out, std::array<int64_t, 2> kernel, std::array<int64_t, 2> padding,
                    Activation act = Activation::kRelu, bool bias = true);

// input [1,8,16,16] -> conv3x3(16)+BN+Relu -> {conv1x1(8), maxpool} -> concat
// -> Identity -> GAP -> flatten -> fc(10). 9 nodes. Weights have data when
// `with_data` (deterministic values).
Graph SmallBranchyGraph(bool with_data);

// Three residual blocks on input [batch,8,10,10], nodes in topological order
// (ids in brackets), weights without data:
//   [0] stem conv3x3(8)+Relu -> s
//   [1] b1/conv1 1x1(8)+Relu, [2] b1/conv2 3x3(8) (no activation),
//   [3] b1/add(conv2, s), [4] b1/relu -> r1               (identity shortcut)
//   [5] b2/conv 3x3(16), [6] b2/proj 1x1(16) without bias,
//   [7] b2/add(conv, proj), [8] b2/relu -> r2              (projection shortcut)
//   [9] b3/conv 2x2(16) without bias, pads {0,0,1,1}, [10] b3/add(r2, conv)
//       -> output                                          (no Relu after)
// All 11 nodes in one group of one stage fuse three Conv+Add(+Relu) chains.
Graph ResidualBlocksGraph(int64_t batch);

// Conv -> Add patterns on x, z [1,8,6,6] that residual fusion must leave
// alone, and one it takes; all weights without data, nodes in order:
//   [0] shared_conv, [1] shared_add(+z), [2] other_reader (Relu of the conv)
//   [3] bcast_conv, [4] bcast_add with a [1,8,1,1] input (broadcast)
//   [5] relu_conv (own Relu), [6] relu_add
//   [7] kept_conv (a graph output), [8] kept_add
//   [9] twice_conv, [10] twice_add(conv, conv)
//   [11] out_conv, [12] out_add (a graph output), [13] out_relu: fusable as
//        conv + add only (the Add's output must be stored).
Graph NonFusableResidualGraph();

}  // namespace iosfarm::graph::testing

#endif  // IOSFARM_GRAPH_TEST_GRAPHS_H_
