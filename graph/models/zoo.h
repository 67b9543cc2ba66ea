// The built-in model zoo: the CNNs the IOS and IOPS papers measure, built as
// graphs for a given batch size.
//
// Every model takes input "input" [batch, 3, image_size, image_size] and has
// one output "logits" [batch, 1000]. BatchNorm is folded into convolutions and
// weights have shapes only (see graph/models/layers.h for the conventions and
// each model's header for its exact architecture and cost).
//
// ZooModels() is a constant table built once (thread-safe static init) and
// never modified; BuildZooModel is a pure function and thread-safe.
#ifndef IOSFARM_GRAPH_MODELS_ZOO_H_
#define IOSFARM_GRAPH_MODELS_ZOO_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

struct ZooModel {
  std::string_view name;         // e.g. "inception_v3"
  std::string_view description;  // one line, for CLI listings
  int64_t image_size;            // input height = width
  // Builds the model; InvalidArgument unless 1 <= batch <= 4096.
  StatusOr<Graph> (*build)(int64_t batch);
};

// The zoo in a fixed order: inception_v3, resnet50, squeezenet, randwire,
// nasnet_a, nasnet_a_mobile.
const std::vector<ZooModel>& ZooModels();

// Builds the named model. NotFound (listing the valid names) for an unknown
// name; InvalidArgument for batch < 1 or batch > 4096.
StatusOr<Graph> BuildZooModel(std::string_view name, int64_t batch);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_ZOO_H_
