// Block partition: the parts of a graph the IOS search solves independently.
//
// Two kinds of cut, applied in order:
//   1. Articulation cuts. An operator v is a cut point when every other
//      operator is an ancestor or a descendant of v and no edge goes from an
//      ancestor of v to a descendant of v: v's outputs alone separate before
//      from after. Consecutive cut points bound a block (the cut point is the
//      last op of its block). Cutting there loses no parallelism: no op after
//      v can run before v ends.
//   2. Size cuts. A block with more than max_block_ops operators is bisected
//      recursively by a down-closed cut (every op before the cut may run
//      before every op after it) that crosses the fewest tensors, so parallel
//      branches stay together; the cut is chosen among ancestor closures,
//      complements of descendant closures and ASAP/ALAP level prefixes whose
//      smaller side holds at least a quarter of the block (ties: the more
//      balanced cut, then the first found). When none does (hundreds of
//      independent branches), the topological order is cut in halves.
// Blocks come in execution order: every op of block i may run before any op
// of block i+1, so concatenating per-block schedules gives a schedule of the
// graph. Constant nodes belong to no block (they are free inputs).
#ifndef IOSFARM_SCHEDULER_IOS_BLOCKS_H_
#define IOSFARM_SCHEDULER_IOS_BLOCKS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

struct BlockOptions {
  // Largest block the DP gets, 1 .. 1024 (IOPS's default: 50).
  int max_block_ops = 50;
};

// Why a block starts where it does.
enum class BlockStart {
  kGraphStart,    // the first block
  kArticulation,  // right after a cut point (the previous block's last op)
  kSizeSplit,     // a size cut inside a larger articulation block
};
std::string_view BlockStartName(BlockStart start);

struct Block {
  std::vector<graph::NodeId> ops;  // in topological order
  BlockStart start = BlockStart::kGraphStart;
  // Distinct activation tensors the block reads from earlier blocks or graph
  // inputs (Constant outputs excluded).
  int input_tensors = 0;
};

struct BlockPartition {
  std::vector<Block> blocks;
  int num_ops = 0;             // operators (nodes other than Constant)
  int articulation_cuts = 0;   // blocks started by an articulation cut
  int size_cuts = 0;           // blocks started by a size cut
  int largest_block = 0;       // ops in the largest block
};

// Partitions the operators of `graph` into blocks (see the file comment).
// InvalidArgument when max_block_ops is outside 1..1024 or the graph has a
// cycle. A graph without operators gives an empty partition.
StatusOr<BlockPartition> PartitionIntoBlocks(const graph::Graph& graph,
                                             const BlockOptions& options);

// Splits one block of `graph` into blocks of at most `max_ops` ops by the
// size cut above (the first keeps `block.start`, the others start with
// kSizeSplit), in execution order. Used when a block is over the search
// budget. InvalidArgument for max_ops < 1 or ops that are not operators.
StatusOr<std::vector<Block>> SplitBlock(const graph::Graph& graph, const Block& block,
                                        int max_ops);

// Human-readable summary for `iosfarm inspect`: one header line, then one line
// per block: index, op count, how it starts, input tensors, first and last op.
std::string BlockPartitionText(const graph::Graph& graph, const BlockPartition& partition);

// The same as JSON: {"num_ops", "num_blocks", "articulation_cuts",
// "size_cuts", "largest_block", "blocks": [{"index", "num_ops", "start",
// "input_tensors", "first_op", "last_op", "ops": [names]}]}. `with_ops`
// false leaves out the "ops" arrays.
nlohmann::json BlockPartitionJson(const graph::Graph& graph, const BlockPartition& partition,
                                  bool with_ops = true);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BLOCKS_H_
