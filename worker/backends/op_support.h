// Which op types a backend executes: each backend declares its set once
// (CpuBackend::SupportedOps, cuda's CudaSupportedOps) and checks nodes with
// CheckOpSupported, so the rule and its error text are the same everywhere.
#ifndef IOSFARM_WORKER_BACKENDS_OP_SUPPORT_H_
#define IOSFARM_WORKER_BACKENDS_OP_SUPPORT_H_

#include <bitset>
#include <string_view>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::worker {

using OpTypeSet = std::bitset<graph::kNumOpTypes>;

// Every op type of the IR (graph/op_type.h).
OpTypeSet AllOpTypes();

// OK when `supported` holds the node's op type and its attributes match the
// op type. Unimplemented "<backend> backend: node 'n' (Type): op type not
// implemented" or InvalidArgument "node 'n' (Type): attributes do not match
// the op type" otherwise.
Status CheckOpSupported(std::string_view backend, const OpTypeSet& supported,
                        const graph::Node& node);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_OP_SUPPORT_H_
