#include "scheduler/ios/blocks.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>

#include "common/strings.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {
namespace {

// A dynamic bitset over dense indices, enough for reachability sets.
class DenseBits {
 public:
  explicit DenseBits(int n = 0) : words_((n + 63) / 64, 0) {}
  void Set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  void Or(const DenseBits& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
  }
  int Count() const {
    int c = 0;
    for (uint64_t w : words_) c += std::popcount(w);
    return c;
  }

 private:
  std::vector<uint64_t> words_;
};

// Positions (in the OpDag) of the ops of one piece, ascending, with local
// adjacency.
struct Piece {
  std::vector<int> positions;
  BlockStart start;
};

// Tensors produced inside `in_cut` and read by ops outside it (within the
// piece). `local_of` maps dag positions to local indices or -1.
int CrossingTensors(const graph::Graph& graph, const OpDag& dag,
                    const std::vector<int>& positions, const std::vector<int>& local_of,
                    const std::vector<char>& in_cut) {
  std::set<graph::ValueId> crossing;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (in_cut[i]) continue;
    for (graph::ValueId v : graph.node(dag.order[positions[i]]).inputs) {
      const graph::NodeId producer = graph.value(v).producer;
      if (producer == graph::kNoNode) continue;
      const int p = dag.position[producer];
      if (p < 0) continue;
      const int local = local_of[p];
      if (local >= 0 && in_cut[local]) crossing.insert(v);
    }
  }
  return static_cast<int>(crossing.size());
}

// Splits `piece` recursively until every part has at most `max_ops` ops;
// appends the parts in execution order to `out`.
void SplitBySize(const graph::Graph& graph, const OpDag& dag, const Piece& piece, int max_ops,
                 std::vector<int>& local_of, std::vector<Piece>& out) {
  const std::vector<int>& pos = piece.positions;
  const int m = static_cast<int>(pos.size());
  if (m <= max_ops) {
    out.push_back(piece);
    return;
  }
  for (int i = 0; i < m; ++i) local_of[pos[i]] = i;
  std::vector<std::vector<int>> preds(m), succs(m);
  for (int i = 0; i < m; ++i) {
    for (int p : dag.preds[pos[i]]) {
      if (local_of[p] >= 0) preds[i].push_back(local_of[p]);
    }
    for (int s : dag.succs[pos[i]]) {
      if (local_of[s] >= 0) succs[i].push_back(local_of[s]);
    }
  }
  // Local indices are topologically ordered (positions ascend).
  std::vector<DenseBits> anc(m, DenseBits(m)), desc(m, DenseBits(m));
  std::vector<int> asap(m, 0), height(m, 0);
  for (int i = 0; i < m; ++i) {
    for (int p : preds[i]) {
      anc[i].Or(anc[p]);
      anc[i].Set(p);
      asap[i] = std::max(asap[i], asap[p] + 1);
    }
  }
  int depth = 0;
  for (int i = m - 1; i >= 0; --i) {
    for (int s : succs[i]) {
      desc[i].Or(desc[s]);
      desc[i].Set(s);
      height[i] = std::max(height[i], height[s] + 1);
    }
    depth = std::max(depth, asap[i] + height[i]);
  }

  // Candidate down-closed cuts, as membership vectors, each scored as it is
  // made (materialising all 2m + 2 depth of them would take O(m^2) memory).
  const int min_side = std::max(1, m / 4);
  std::vector<char> best_cut;
  bool best_in_window = false;
  int best_crossing = std::numeric_limits<int>::max();
  int best_balance = std::numeric_limits<int>::max();
  std::vector<char> c(m, 0);
  auto consider = [&]() {
    const int size = static_cast<int>(std::count(c.begin(), c.end(), 1));
    if (size == 0 || size == m) return;
    if (std::min(size, m - size) < min_side) return;  // outside the window
    const int balance = std::abs(m - 2 * size);
    const int crossing = CrossingTensors(graph, dag, pos, local_of, c);
    if (!best_in_window || crossing < best_crossing ||
        (crossing == best_crossing && balance < best_balance)) {
      best_cut = c;
      best_in_window = true;
      best_crossing = crossing;
      best_balance = balance;
    }
  };
  for (int v = 0; v < m; ++v) {
    for (int i = 0; i < m; ++i) c[i] = anc[v].Test(i) || i == v;
    consider();
    for (int i = 0; i < m; ++i) c[i] = !(desc[v].Test(i) || i == v);
    consider();
  }
  for (int level = 0; level < depth; ++level) {
    for (int i = 0; i < m; ++i) c[i] = asap[i] <= level;
    consider();
    for (int i = 0; i < m; ++i) c[i] = depth - height[i] <= level;  // ALAP level
    consider();
  }

  for (int i = 0; i < m; ++i) local_of[pos[i]] = -1;
  // Without a cut in the window (e.g. hundreds of independent branches: every
  // closure or level is tiny or nearly everything), split the topological
  // order in halves (its prefixes are down-closed): lopsided fallback cuts
  // would recurse once per op.
  // The recursion below must not keep this level's O(m^2) bitsets alive.
  std::vector<DenseBits>().swap(anc);
  std::vector<DenseBits>().swap(desc);
  // m >= 2 here, so some candidate is proper (the closure of the last op
  // misses nothing but the ops that are not its ancestors, or the complement
  // of the first op's descendants is non-empty ...). Guard anyway.
  Piece before{{}, piece.start}, after{{}, BlockStart::kSizeSplit};
  if (best_cut.empty()) {
    before.positions.assign(pos.begin(), pos.begin() + m / 2);
    after.positions.assign(pos.begin() + m / 2, pos.end());
  } else {
    for (int i = 0; i < m; ++i) {
      (best_cut[i] ? before : after).positions.push_back(pos[i]);
    }
  }
  SplitBySize(graph, dag, before, max_ops, local_of, out);
  SplitBySize(graph, dag, after, max_ops, local_of, out);
}

int CountInputTensors(const graph::Graph& graph, const Block& block) {
  std::set<graph::NodeId> members(block.ops.begin(), block.ops.end());
  std::set<graph::ValueId> inputs;
  for (graph::NodeId id : block.ops) {
    for (graph::ValueId v : graph.node(id).inputs) {
      const graph::NodeId producer = graph.value(v).producer;
      if (producer != graph::kNoNode && IsFreeNode(graph.node(producer))) continue;
      if (producer == graph::kNoNode || !members.count(producer)) inputs.insert(v);
    }
  }
  return static_cast<int>(inputs.size());
}

}  // namespace

std::string_view BlockStartName(BlockStart start) {
  switch (start) {
    case BlockStart::kGraphStart:
      return "graph_start";
    case BlockStart::kArticulation:
      return "articulation";
    case BlockStart::kSizeSplit:
      return "size_split";
  }
  return "unknown";
}

StatusOr<BlockPartition> PartitionIntoBlocks(const graph::Graph& graph,
                                             const BlockOptions& options) {
  if (options.max_block_ops < 1 || options.max_block_ops > kMaxBlockOps) {
    return absl::InvalidArgumentError(StrCat("max_block_ops must be in 1..", kMaxBlockOps,
                                             ", got ", options.max_block_ops));
  }
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  const int n = dag.size();
  BlockPartition partition;
  partition.num_ops = n;
  if (n == 0) return partition;

  // Ancestor and descendant counts by reachability bitsets.
  std::vector<DenseBits> anc(n, DenseBits(n)), desc(n, DenseBits(n));
  for (int p = 0; p < n; ++p) {
    for (int q : dag.preds[p]) {
      anc[p].Or(anc[q]);
      anc[p].Set(q);
    }
  }
  for (int p = n - 1; p >= 0; --p) {
    for (int s : dag.succs[p]) {
      desc[p].Or(desc[s]);
      desc[p].Set(s);
    }
  }
  // last_use[p]: largest position reading an output of p (p if none).
  // Position p is a cut point iff its ancestors are exactly positions < p,
  // its descendants exactly positions > p, and no op before p is read after p.
  std::vector<Piece> articulation_pieces;
  Piece current{{}, BlockStart::kGraphStart};
  int max_use_before = -1;  // max last_use over positions < p
  for (int p = 0; p < n; ++p) {
    current.positions.push_back(p);
    int last_use = p;
    for (int s : dag.succs[p]) last_use = std::max(last_use, s);
    const bool is_cut = p < n - 1 && anc[p].Count() == p && desc[p].Count() == n - 1 - p &&
                        max_use_before <= p;
    max_use_before = std::max(max_use_before, last_use);
    if (is_cut) {
      articulation_pieces.push_back(std::move(current));
      current = Piece{{}, BlockStart::kArticulation};
    }
  }
  articulation_pieces.push_back(std::move(current));

  std::vector<Piece> pieces;
  std::vector<int> local_of(n, -1);
  for (const Piece& piece : articulation_pieces) {
    SplitBySize(graph, dag, piece, options.max_block_ops, local_of, pieces);
  }
  for (const Piece& piece : pieces) {
    Block block;
    block.start = piece.start;
    for (int p : piece.positions) block.ops.push_back(dag.order[p]);
    block.input_tensors = CountInputTensors(graph, block);
    if (block.start == BlockStart::kArticulation) ++partition.articulation_cuts;
    if (block.start == BlockStart::kSizeSplit) ++partition.size_cuts;
    partition.largest_block =
        std::max(partition.largest_block, static_cast<int>(block.ops.size()));
    partition.blocks.push_back(std::move(block));
  }
  return partition;
}

StatusOr<std::vector<Block>> SplitBlock(const graph::Graph& graph, const Block& block,
                                        int max_ops) {
  if (max_ops < 1) return absl::InvalidArgumentError(StrCat("max_ops must be >= 1, got ", max_ops));
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  Piece piece{{}, block.start};
  for (graph::NodeId id : block.ops) {
    const int p = id >= 0 && id < static_cast<graph::NodeId>(dag.position.size())
                      ? dag.position[id]
                      : -1;
    if (p < 0) {
      return absl::InvalidArgumentError(StrCat("node ", id, " is not an operator of the graph"));
    }
    piece.positions.push_back(p);
  }
  std::sort(piece.positions.begin(), piece.positions.end());
  std::vector<int> local_of(dag.size(), -1);
  std::vector<Piece> pieces;
  SplitBySize(graph, dag, piece, max_ops, local_of, pieces);
  std::vector<Block> out;
  for (const Piece& part : pieces) {
    Block split;
    split.start = part.start;
    for (int p : part.positions) split.ops.push_back(dag.order[p]);
    split.input_tensors = CountInputTensors(graph, split);
    out.push_back(std::move(split));
  }
  return out;
}

std::string BlockPartitionText(const graph::Graph& graph, const BlockPartition& partition) {
  std::string out = StrCat("blocks: ", partition.blocks.size(), " (", partition.num_ops,
                           " ops; ", partition.articulation_cuts, " articulation cuts, ",
                           partition.size_cuts, " size cuts; largest ",
                           partition.largest_block, " ops)\n");
  for (size_t i = 0; i < partition.blocks.size(); ++i) {
    const Block& b = partition.blocks[i];
    out += StrCat("  block ", i, ": ", b.ops.size(), " ops, ", BlockStartName(b.start), ", ",
                  b.input_tensors, " input tensor", b.input_tensors == 1 ? "" : "s", ", ",
                  graph.node(b.ops.front()).name, " .. ", graph.node(b.ops.back()).name, "\n");
  }
  return out;
}

nlohmann::json BlockPartitionJson(const graph::Graph& graph, const BlockPartition& partition,
                                  bool with_ops) {
  nlohmann::json blocks = nlohmann::json::array();
  for (size_t i = 0; i < partition.blocks.size(); ++i) {
    const Block& b = partition.blocks[i];
    nlohmann::json j = {{"index", i},
                        {"num_ops", b.ops.size()},
                        {"start", std::string(BlockStartName(b.start))},
                        {"input_tensors", b.input_tensors},
                        {"first_op", graph.node(b.ops.front()).name},
                        {"last_op", graph.node(b.ops.back()).name}};
    if (with_ops) {
      nlohmann::json ops = nlohmann::json::array();
      for (graph::NodeId id : b.ops) ops.push_back(graph.node(id).name);
      j["ops"] = std::move(ops);
    }
    blocks.push_back(std::move(j));
  }
  return {{"num_ops", partition.num_ops},
          {"num_blocks", partition.blocks.size()},
          {"articulation_cuts", partition.articulation_cuts},
          {"size_cuts", partition.size_cuts},
          {"largest_block", partition.largest_block},
          {"blocks", std::move(blocks)}};
}

}  // namespace iosfarm::scheduler::ios
