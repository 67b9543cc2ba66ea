#include "scheduler/ios/block_dp.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>

#include "common/strings.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/stages/block_stages.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// SolvedStates of a block of width W.
template <int W>
class SolvedStatesOf : public SolvedStates {
 public:
  struct Entry {
    double cost = 0;        // of the state's best schedule
    double latency_ms = 0;  // of its last stage
    OpBits<W> last;         // the last stage's ops
    uint8_t merge = 0;      // the last stage is merged
  };

  explicit SolvedStatesOf(int size) : size_(size) {}
  int size() const override { return size_; }
  int words() const override { return W; }
  int64_t states() const override { return static_cast<int64_t>(table_.size()); }

  void Add(const OpBits<W>& state, const Entry& entry) {
    table_.Insert(state, state.Hash(), entry);
  }
  const Entry* Find(const OpBits<W>& state, uint64_t hash) const {
    return table_.Find(state, hash);
  }
  template <typename F>
  void ForEach(F&& f) const {
    table_.ForEach(f);
  }

 private:
  int size_;
  mutable OpBitsMap<W, Entry> table_;  // Find does not change it
};

// The DP over K blocks of one shape (SameShape) at once: one walk of their
// common state graph, whose tables hold each block's values side by side
// (slot k for block k). K = 1 is the plain DP of one block.
template <int W, int K>
class BlockDp {
 public:
  // `prefix` (K = 1 only; may be null): SolveBlock's.
  BlockDp(absl::Span<const BlockGraph* const> blocks, const DpOptions& options,
          LatencySource& source, const SolvedStatesOf<W>* prefix = nullptr)
      : block_(*blocks[0]),
        options_(options),
        source_(source),
        prefix_(prefix),
        enumerator_(block_, options.bounds),
        scratch_(block_.size() + 2) {
    for (int k = 0; k < K; ++k) {
      stages_.emplace_back(*blocks[k]);
      complete_[k] = true;
    }
    if (prefix_ != nullptr) {
      beyond_ = OpBits<W>::FirstN(block_.size()).Minus(OpBits<W>::FirstN(prefix_->size()));
    }
    enumerator_.SetCheck([this](uint64_t) {
      if (status_.ok()) CheckBudget(static_cast<int64_t>(scratch_pending_));
      return status_.ok();
    });
  }

  StatusOr<std::vector<BlockSolution>> Run() {
    const OpBits<W> all = OpBits<W>::FirstN(block_.size());
    if (block_.size() > 0) Visit(all, 0);
    RETURN_IF_ERROR(status_);
    std::vector<BlockSolution> solutions(K);
    for (int k = 0; k < K; ++k) {
      BlockSolution& solution = solutions[k];
      solution.stats = stats_;
      solution.stats.states = static_cast<int64_t>(states_.size());
      solution.stats.distinct_stages = static_cast<int64_t>(endings_.size()) + merges_[k];
      solution.stats.merge_stages = merges_[k];
      solution.complete = complete_[k];
      if (!solution.complete || block_.size() == 0) continue;
      // Read the schedule back from the argmins (they give the last stage first).
      OpBits<W> remaining = all;
      while (!remaining.Empty()) {
        if (InPrefix(remaining) && prefix_->Find(remaining, remaining.Hash()) == nullptr) {
          NotThePrefix();
          return status_;
        }
        const LastStage last = LastOf(remaining, k);
        PlannedStage planned;
        planned.stage = stages_[k].BuildStage(
            last.ops, last.merge ? Strategy::kMerge : Strategy::kConcurrent, &planned.signature);
        planned.latency_ms = last.latency_ms;
        solution.stages.push_back(std::move(planned));
        remaining = remaining.Minus(last.ops);
      }
      std::reverse(solution.stages.begin(), solution.stages.end());
      solution.latency_ms = (*states_.Find(all, all.Hash()))[k];
      if (options_.keep_states) solution.states = KeepStates(k);
    }
    return solutions;
  }

 private:
  using Costs = std::array<double, K>;
  // A state's argmins, per block: the last stage of its best schedule and
  // whether it is merged. Apart from the costs (states_), which the walk
  // probes for every transition, so that their table is half as large.
  struct Choice {
    OpBits<W> best[K];
    uint8_t merge[K] = {};
  };
  // An ending's cost as the last stage, per block: its concurrent latency
  // or, where it is mergeable and the merge is faster, its merge latency (an
  // unknown one counts as 0: such a pass is incomplete anyway). 8 bytes a
  // block keep the table of millions of endings a third smaller than both
  // latencies would; the few mergeable endings keep both in mergeable_.
  struct EndingValue {
    double v[K];
  };
  // A state's and a mergeable ending's values in the pass of one block
  // (MemoryBytes).
  struct SingleChoice {
    OpBits<W> best;
    uint8_t merge;
  };
  struct SingleMerge {
    double latency, merge_latency;
  };
  struct MergeValue {
    double latency[K];        // NaN while unknown
    double merge_latency[K];  // NaN while unknown; +inf where that block cannot merge it
  };
  // A solved state's last stage in block k's best schedule.
  struct LastStage {
    OpBits<W> ops;
    bool merge = false;
    double latency_ms = 0;
  };

  bool InPrefix(const OpBits<W>& state) const {
    return prefix_ != nullptr && !state.Intersects(beyond_);
  }

  // A solved state's (one of the prefix's: in its table).
  LastStage LastOf(const OpBits<W>& state, int k) {
    LastStage last;
    if (InPrefix(state)) {
      const typename SolvedStatesOf<W>::Entry& entry = *prefix_->Find(state, state.Hash());
      last.ops = entry.last;
      last.merge = entry.merge != 0;
      last.latency_ms = entry.latency_ms;
      return last;
    }
    const Choice& choice = *choices_.Find(state, state.Hash());
    last.ops = choice.best[k];
    last.merge = choice.merge[k] != 0;
    if (const MergeValue* both = mergeable_.Find(last.ops, last.ops.Hash())) {
      last.latency_ms = last.merge ? both->merge_latency[k] : both->latency[k];
    } else {
      last.latency_ms = endings_.Find(last.ops, last.ops.Hash())->v[k];
    }
    return last;
  }

  // Block k's states (those of the prefix included), for a block that
  // extends it.
  std::shared_ptr<const SolvedStates> KeepStates(int k) {
    auto kept = std::make_shared<SolvedStatesOf<W>>(block_.size());
    auto add = [&](const OpBits<W>& state, double cost) {
      const LastStage last = LastOf(state, k);
      kept->Add(state, {cost, last.latency_ms, last.ops, static_cast<uint8_t>(last.merge)});
    };
    states_.ForEach([&](const OpBits<W>& state, const Costs& costs) { add(state, costs[k]); });
    if (prefix_ != nullptr) {
      prefix_->ForEach([&](const OpBits<W>& state, const typename SolvedStatesOf<W>::Entry& e) {
        kept->Add(state, e);
      });
    }
    return kept;
  }

  // Per recursion depth: the state's endings and their children.
  struct Scratch {
    std::vector<OpBits<W>> endings;
    std::vector<uint64_t> hashes;
    std::vector<EndingValue> values;
  };

  // Solves `remaining` (non-empty, not solved yet) and returns its costs.
  Costs Visit(const OpBits<W>& remaining, int depth) {
    // The full check every 4 Ki states or new endings; the state cap and the
    // stop flag at every state.
    if (status_.ok() && (++since_check_ >= 4096 ||
                         (options_.max_states > 0 &&
                          static_cast<int64_t>(states_.size()) >= options_.max_states) ||
                         (options_.stop != nullptr &&
                          options_.stop->load(std::memory_order_relaxed)))) {
      since_check_ = 0;
      CheckBudget(0);
    }
    if (!status_.ok()) return {};
    Scratch& sc = scratch_[depth];
    sc.endings.clear();
    sc.hashes.clear();
    enumerator_.Enumerate(remaining, [&](const OpBits<W>& ops, const EndingGroup<W>*, int) {
      sc.endings.push_back(ops);
      sc.hashes.push_back(ops.Hash());
      const int64_t pending = static_cast<int64_t>(sc.endings.size());
      scratch_pending_ = static_cast<size_t>(pending);
      if (options_.max_transitions > 0 &&
          stats_.transitions + pending > options_.max_transitions) {
        CheckBudget(pending);
      } else if ((pending & 0xffff) == 0) {
        CheckBudget(pending);
      }
      if (!status_.ok()) enumerator_.Stop();
    });
    scratch_pending_ = 0;
    if (!status_.ok()) return {};
    const size_t count = sc.endings.size();
    stats_.transitions += static_cast<int64_t>(count);
    // Latencies of the endings; prefetch the children's states meanwhile.
    // The ending table is far larger than the caches: keep kLookahead of its
    // probes in flight ahead of the one being read.
    constexpr size_t kLookahead = 12;
    for (size_t i = 0; i < std::min(count, kLookahead); ++i) endings_.Prefetch(sc.hashes[i]);
    sc.values.resize(count);
    fresh_.clear();
    for (size_t i = 0; i < count; ++i) {
      if (i + kLookahead < count) endings_.Prefetch(sc.hashes[i + kLookahead]);
      if (const EndingValue* value = endings_.Find(sc.endings[i], sc.hashes[i])) {
        sc.values[i] = *value;
      } else {
        fresh_.push_back({i, sc.hashes[i]});
      }
      const OpBits<W> child = remaining.Minus(sc.endings[i]);
      sc.hashes[i] = child.Hash();
      states_.Prefetch(sc.hashes[i]);
    }
    if (!fresh_.empty()) {
      AddEndings(sc);
      since_check_ += static_cast<int64_t>(fresh_.size());
    }
    Costs best, best_child{};
    best.fill(kInfinity);
    size_t best_index[K] = {};
    for (size_t i = 0; i < count; ++i) {
      const OpBits<W> child = remaining.Minus(sc.endings[i]);
      Costs child_cost{};
      if (InPrefix(child)) {
        // K = 1 (SolveBlock): the prefix's cost.
        if (!child.Empty()) {
          const auto* entry = prefix_->Find(child, sc.hashes[i]);
          if (entry == nullptr) return NotThePrefix();
          child_cost[0] = entry->cost;
        }
      } else if (!child.Empty()) {
        const Costs* known = states_.Find(child, sc.hashes[i]);
        child_cost = known != nullptr ? *known : Visit(child, depth + 1);
        if (!status_.ok()) return {};
      }
      // child + min(concurrent, merge) is the smaller of the two sums (a
      // rounded sum is monotone): the ending that wins and the cost are
      // those of comparing both strategies one after the other.
      for (int k = 0; k < K; ++k) {
        const double cost = child_cost[k] + sc.values[i].v[k];
        if (cost < best[k]) {
          best[k] = cost;
          best_child[k] = child_cost[k];
          best_index[k] = i;
        }
      }
    }
    Choice choice;
    for (int k = 0; k < K; ++k) {
      const OpBits<W>& ending = sc.endings[best_index[k]];
      choice.best[k] = ending;
      // The merge wins where its sum is strictly the smaller (ties go to the
      // concurrent stage).
      if (merges_[k] > 0) {
        if (const MergeValue* both = mergeable_.Find(ending, ending.Hash())) {
          choice.merge[k] = best_child[k] + KnownOr0(both->merge_latency[k]) <
                            best_child[k] + KnownOr0(both->latency[k]);
        }
      }
    }
    const uint64_t hash = remaining.Hash();
    states_.Insert(remaining, hash, best);
    choices_.Insert(remaining, hash, choice);
    return best;
  }

  // A state made of the prefix's ops that its table lacks: the table is not
  // of a block identical to this block's first ops (SolveBlock's contract).
  Costs NotThePrefix() {
    status_ = absl::InvalidArgumentError(StrCat(
        "SolveBlock: the prefix table of ", prefix_->size(),
        " ops lacks a state of the block starting at '", block_.graph().node(block_.node(0)).name,
        "': it is not of a block identical to the block's first ops"));
    return {};
  }

  // Sets status_ when the stop flag is up or the pass is over a budget,
  // counting `pending` endings of the state being enumerated.
  void CheckBudget(int64_t pending) {
    if (options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed)) {
      status_ = absl::CancelledError("search stopped (job cancelled or server shutting down)");
      return;
    }
    const int64_t states = static_cast<int64_t>(states_.size());
    if (options_.max_states > 0 && states >= options_.max_states) {
      OverBudget(StrCat("more than ", options_.max_states, " DP states"));
    } else if (options_.max_transitions > 0 &&
               stats_.transitions + pending > options_.max_transitions) {
      OverBudget(StrCat("more than ", options_.max_transitions, " transitions"));
    } else if (options_.max_steps > 0 &&
               static_cast<int64_t>(enumerator_.steps()) > options_.max_steps) {
      OverBudget(StrCat("more than ", options_.max_steps, " ending enumeration steps"));
    } else if (options_.max_bytes > 0 && MemoryBytes() > options_.max_bytes) {
      OverBudget(StrCat("more than ", options_.max_bytes >> 20, " MiB"));
    }
  }

  void OverBudget(const std::string& what) {
    status_ = SearchBudgetError(
        StrCat("block starting at '", block_.graph().node(block_.node(0)).name, "' (",
               block_.size(), " ops) needs ", what, " in one search pass (the search budget)"));
  }

  // Bytes the largest pass of one block alone would hold (its tables and
  // scratch, plus the source's): the budget of a shared walk is each
  // block's, so that it stops where the first of their own passes would.
  // The walk itself holds less than its blocks' passes together (one key
  // per slot for K values).
  int64_t MemoryBytes() const {
    size_t bytes =
        states_.capacity() * (2 * sizeof(OpBits<W>) + sizeof(double) + sizeof(SingleChoice)) +
        endings_.capacity() * (sizeof(OpBits<W>) + sizeof(double));
    size_t most_merges = 0, most_groups = 0;
    for (int k = 0; k < K; ++k) {
      most_merges = std::max(most_merges, static_cast<size_t>(merges_[k]));
      most_groups = std::max(most_groups, stages_[k].memory_bytes());
    }
    bytes += OpBitsMap<W, SingleMerge>::BytesFor(most_merges) + most_groups;
    for (const Scratch& sc : scratch_) {
      bytes += sc.endings.capacity() * sizeof(OpBits<W>) + sc.hashes.capacity() * sizeof(uint64_t) +
               sc.values.capacity() * sizeof(double);
    }
    return static_cast<int64_t>(bytes) + source_.memory_bytes();
  }

  // An ending of the current state not in endings_ yet.
  struct FreshEnding {
    size_t index = 0;   // in the state's Scratch
    uint64_t hash = 0;  // of the ending
    bool mergeable[K] = {};  // per block
  };

  // Creates the records of the state's fresh_ endings: their signatures
  // first (hinting the source about each), then their latencies in one
  // batch, so that the source's lookups overlap instead of missing the caches
  // one by one (and a source shared by threads locks once).
  void AddEndings(Scratch& sc) {
    // Item j of the batch: its signature, and the ending, block and
    // strategy it stands for.
    batch_signatures_.clear();
    batch_items_.clear();
    for (size_t f = 0; f < fresh_.size(); ++f) {
      const OpBits<W>& ops = sc.endings[fresh_[f].index];
      for (int k = 0; k < K; ++k) {
        BlockStages<W>& stages = stages_[k];
        batch_signatures_.push_back(HashStage(k, ops));
        batch_items_.push_back({f, k, Strategy::kConcurrent});
        source_.Prefetch(batch_signatures_.back());
        if (options_.enable_merge && stages.IsMergeable(ops)) {
          fresh_[f].mergeable[k] = true;
          batch_signatures_.push_back(stages.MergeSignature());
          batch_items_.push_back({f, k, Strategy::kMerge});
          source_.Prefetch(batch_signatures_.back());
        }
      }
    }
    batch_latencies_.assign(batch_signatures_.size(), std::nullopt);
    source_.LookupBatch(
        batch_signatures_,
        [&](size_t j) {
          const BatchItem& item = batch_items_[j];
          HashStage(item.block, sc.endings[fresh_[item.fresh].index]);
          return stages_[item.block].CanonicalStage(item.strategy);
        },
        absl::MakeSpan(batch_latencies_));
    if (!source_.status().ok() && status_.ok()) status_ = source_.status();
    size_t j = 0;
    for (const FreshEnding& fresh : fresh_) {
      const OpBits<W>& ops = sc.endings[fresh.index];
      MergeValue both;
      EndingValue value;
      bool mergeable = false;
      for (int k = 0; k < K; ++k) {
        both.latency[k] = Known(batch_latencies_[j++], k);
        value.v[k] = KnownOr0(both.latency[k]);
        both.merge_latency[k] = kInfinity;
        if (fresh.mergeable[k]) {
          both.merge_latency[k] = Known(batch_latencies_[j++], k);
          value.v[k] = std::min(value.v[k], KnownOr0(both.merge_latency[k]));
          ++merges_[k];
          mergeable = true;
        }
      }
      if (mergeable) mergeable_.Insert(ops, fresh.hash, both);
      endings_.Insert(ops, fresh.hash, value);
      sc.values[fresh.index] = value;
    }
  }

  // Block k's concurrent signature of `ops` (its BlockStages then holds
  // their groups). One shape: where block 0 has just split `ops`, the other
  // blocks take its groups.
  Signature HashStage(int k, const OpBits<W>& ops) {
    return k == 0 ? stages_[0].HashStage(ops) : stages_[k].HashStageAs(ops, stages_[0]);
  }

  // A looked-up latency of block k, or NaN (its pass is then incomplete).
  double Known(const std::optional<double>& latency, int k) {
    if (latency) return *latency;
    complete_[k] = false;
    return std::numeric_limits<double>::quiet_NaN();
  }

  static double KnownOr0(double latency) { return std::isnan(latency) ? 0 : latency; }

  struct BatchItem {
    size_t fresh = 0;  // index in fresh_
    int block = 0;
    Strategy strategy = Strategy::kConcurrent;
  };

  const BlockGraph& block_;  // the first block (all have its shape)
  const DpOptions& options_;
  LatencySource& source_;
  const SolvedStatesOf<W>* prefix_;  // K = 1 only; may be null
  OpBits<W> beyond_;                 // with prefix_: the ops after it
  EndingEnumerator<W> enumerator_;
  std::deque<BlockStages<W>> stages_;  // per block (not movable)
  std::vector<Scratch> scratch_;
  std::vector<FreshEnding> fresh_;
  // AddEndings' batch: signatures, what they stand for, latencies.
  std::vector<Signature> batch_signatures_;
  std::vector<BatchItem> batch_items_;
  std::vector<std::optional<double>> batch_latencies_;
  OpBitsMap<W, Costs> states_;
  OpBitsMap<W, Choice> choices_;  // the same keys as states_
  OpBitsMap<W, EndingValue> endings_;
  OpBitsMap<W, MergeValue> mergeable_;  // the mergeable endings' two latencies
  int64_t merges_[K] = {};
  int64_t since_check_ = 0;  // states and endings added since CheckBudget
  size_t scratch_pending_ = 0;  // endings of the state being enumerated
  DpStats stats_;
  bool complete_[K];
  Status status_;
};

template <int W, int K>
StatusOr<std::vector<BlockSolution>> Solve(absl::Span<const BlockGraph* const> blocks,
                                           const DpOptions& options, LatencySource& latencies,
                                           const SolvedStates* prefix = nullptr) {
  BlockDp<W, K> dp(blocks, options, latencies, static_cast<const SolvedStatesOf<W>*>(prefix));
  return dp.Run();
}

// SolveBlocks for K blocks of width W (K <= kMaxSharedBlocks).
template <int W>
StatusOr<std::vector<BlockSolution>> SolveShared(absl::Span<const BlockGraph* const> blocks,
                                                 const DpOptions& options,
                                                 LatencySource& latencies) {
  static_assert(kMaxSharedBlocks == 6);
  switch (blocks.size()) {
    case 2:
      return Solve<W, 2>(blocks, options, latencies);
    case 3:
      return Solve<W, 3>(blocks, options, latencies);
    case 4:
      return Solve<W, 4>(blocks, options, latencies);
    case 5:
      return Solve<W, 5>(blocks, options, latencies);
    default:
      return Solve<W, 6>(blocks, options, latencies);
  }
}

Status CheckBounds(const DpOptions& options) {
  if (options.bounds.max_group_ops < 1 || options.bounds.max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("r and s must be >= 1, got r=",
                                             options.bounds.max_group_ops,
                                             " s=", options.bounds.max_groups));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::vector<BlockSolution>> SolveBlocks(absl::Span<const BlockGraph* const> blocks,
                                                 const DpOptions& options,
                                                 LatencySource& latencies) {
  RETURN_IF_ERROR(CheckBounds(options));
  for (const BlockGraph* block : blocks) {
    if (!SameShape(*blocks[0], *block)) {
      return absl::InvalidArgumentError(StrCat("SolveBlocks: the block starting at '",
                                               block->graph().node(block->node(0)).name,
                                               "' does not have the shape of the first block"));
    }
  }
  std::vector<BlockSolution> solutions;
  if (blocks.empty() || blocks[0]->words() > 2) {
    for (const BlockGraph* block : blocks) {  // one at a time
      ASSIGN_OR_RETURN(BlockSolution solution, SolveBlock(*block, options, latencies));
      solutions.push_back(std::move(solution));
    }
    return solutions;
  }
  size_t begin = 0;
  for (size_t end : SharedPieceEnds(blocks.size())) {
    const absl::Span<const BlockGraph* const> piece = blocks.subspan(begin, end - begin);
    begin = end;
    std::vector<BlockSolution> solved;
    if (piece.size() == 1) {
      ASSIGN_OR_RETURN(BlockSolution solution, SolveBlock(*piece[0], options, latencies));
      solved.push_back(std::move(solution));
    } else if (piece[0]->words() == 1) {
      ASSIGN_OR_RETURN(solved, SolveShared<1>(piece, options, latencies));
    } else {
      ASSIGN_OR_RETURN(solved, SolveShared<2>(piece, options, latencies));
    }
    for (BlockSolution& solution : solved) solutions.push_back(std::move(solution));
  }
  return solutions;
}

StatusOr<BlockSolution> SolveBlock(const BlockGraph& block, const DpOptions& options,
                                   LatencySource& latencies, const SolvedStates* prefix) {
  RETURN_IF_ERROR(CheckBounds(options));
  if (prefix != nullptr && (prefix->words() != block.words() || prefix->size() >= block.size())) {
    return absl::InvalidArgumentError(StrCat("SolveBlock: a prefix of ", prefix->size(), " ops (",
                                             prefix->words(), " words) for a block of ",
                                             block.size(), " ops (", block.words(), " words)"));
  }
  const BlockGraph* const one[] = {&block};
  StatusOr<std::vector<BlockSolution>> solved;
  switch (block.words()) {
    case 1:
      solved = Solve<1, 1>(one, options, latencies, prefix);
      break;
    case 2:
      solved = Solve<2, 1>(one, options, latencies, prefix);
      break;
    case 4:
      solved = Solve<4, 1>(one, options, latencies, prefix);
      break;
    case 8:
      solved = Solve<8, 1>(one, options, latencies, prefix);
      break;
    default:
      solved = Solve<16, 1>(one, options, latencies, prefix);
  }
  if (!solved.ok()) return solved.status();
  return std::move(solved->front());
}

}  // namespace iosfarm::scheduler::ios
