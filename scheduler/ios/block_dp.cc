#include "scheduler/ios/block_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/strings.h"
#include "scheduler/ios/block_stages.h"
#include "scheduler/ios/op_bits_map.h"
#include "scheduler/ios/search_options.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <int W>
class BlockDp {
 public:
  BlockDp(const BlockGraph& block, const DpOptions& options, LatencySource& source)
      : block_(block),
        options_(options),
        source_(source),
        enumerator_(block, options.bounds),
        stages_(block),
        scratch_(block.size() + 2) {
    enumerator_.SetCheck([this](uint64_t) {
      if (status_.ok()) CheckBudget(static_cast<int64_t>(scratch_pending_));
      return status_.ok();
    });
  }

  StatusOr<BlockSolution> Run() {
    BlockSolution solution;
    const OpBits<W> all = OpBits<W>::FirstN(block_.size());
    if (block_.size() > 0) Visit(all, 0);
    RETURN_IF_ERROR(status_);
    solution.stats = stats_;
    solution.stats.states = static_cast<int64_t>(states_.size());
    solution.stats.distinct_stages = static_cast<int64_t>(endings_.size()) + merges_;
    solution.stats.merge_stages = merges_;
    solution.complete = complete_;
    if (!complete_ || block_.size() == 0) return solution;
    // Read the schedule back from the argmins (they give the last stage first).
    OpBits<W> remaining = all;
    while (!remaining.Empty()) {
      const StateValue& state = *states_.Find(remaining, remaining.Hash());
      const bool merge = state.merge != 0;
      PlannedStage planned;
      planned.stage = stages_.BuildStage(
          state.best, merge ? Strategy::kMerge : Strategy::kConcurrent, &planned.signature);
      if (const MergeValue* both = mergeable_.Find(state.best, state.best.Hash())) {
        planned.latency_ms = merge ? both->merge_latency : both->latency;
      } else {
        planned.latency_ms = *endings_.Find(state.best, state.best.Hash());
      }
      solution.stages.push_back(std::move(planned));
      remaining = remaining.Minus(state.best);
    }
    std::reverse(solution.stages.begin(), solution.stages.end());
    solution.latency_ms = states_.Find(all, all.Hash())->cost;
    return solution;
  }

 private:
  struct StateValue {
    double cost = 0;
    OpBits<W> best;  // the last stage of the best schedule of this state
    uint8_t merge = 0;
  };
  // An ending's cost as the last stage: its concurrent latency or, where it
  // is mergeable and the merge is faster, its merge latency (an unknown one
  // counts as 0: such a pass is incomplete anyway). 8 bytes a slot keep the
  // table of millions of endings a third smaller than both latencies would;
  // the few mergeable endings keep both in mergeable_.
  using EndingValue = double;
  struct MergeValue {
    double latency = 0;        // NaN while unknown
    double merge_latency = 0;  // NaN while unknown
  };
  // Per recursion depth: the state's endings and their children.
  struct Scratch {
    std::vector<OpBits<W>> endings;
    std::vector<uint64_t> hashes;
    std::vector<EndingValue> values;
  };

  // Solves `remaining` (non-empty, not solved yet) and returns its cost.
  double Visit(const OpBits<W>& remaining, int depth) {
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
    if (!status_.ok()) return 0;
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
    if (!status_.ok()) return 0;
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
    double best = kInfinity;
    double best_child = 0;
    size_t best_index = 0;
    for (size_t i = 0; i < count; ++i) {
      const OpBits<W> child = remaining.Minus(sc.endings[i]);
      double child_cost = 0;
      if (!child.Empty()) {
        const StateValue* state = states_.Find(child, sc.hashes[i]);
        child_cost = state != nullptr ? state->cost : Visit(child, depth + 1);
        if (!status_.ok()) return 0;
      }
      // child + min(concurrent, merge) is the smaller of the two sums (a
      // rounded sum is monotone): the ending that wins and the cost are
      // those of comparing both strategies one after the other.
      const double cost = child_cost + sc.values[i];
      if (cost < best) {
        best = cost;
        best_child = child_cost;
        best_index = i;
      }
    }
    StateValue state;
    state.cost = best;
    state.best = sc.endings[best_index];
    // The merge wins where its sum is strictly the smaller (ties go to the
    // concurrent stage).
    if (merges_ > 0) {
      if (const MergeValue* both = mergeable_.Find(state.best, state.best.Hash())) {
        state.merge =
            best_child + KnownOr0(both->merge_latency) < best_child + KnownOr0(both->latency);
      }
    }
    states_.Insert(remaining, remaining.Hash(), state);
    return best;
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

  // Bytes of the pass's tables and scratch, plus the source's.
  int64_t MemoryBytes() const {
    size_t bytes = states_.memory_bytes() + endings_.memory_bytes() + mergeable_.memory_bytes() +
                   stages_.memory_bytes();
    for (const Scratch& sc : scratch_) {
      bytes += sc.endings.capacity() * sizeof(OpBits<W>) +
               sc.hashes.capacity() * sizeof(uint64_t) +
               sc.values.capacity() * sizeof(EndingValue);
    }
    return static_cast<int64_t>(bytes) + source_.memory_bytes();
  }

  // An ending of the current state not in endings_ yet.
  struct FreshEnding {
    size_t index = 0;   // in the state's Scratch
    uint64_t hash = 0;  // of the ending
    bool mergeable = false;
  };

  // Creates the records of the state's fresh_ endings: their signatures
  // first (hinting the source about each), then their latencies in one
  // batch, so that the source's lookups overlap instead of missing the caches
  // one by one (and a source shared by threads locks once).
  void AddEndings(Scratch& sc) {
    // Item k of the batch: its signature, and the ending and strategy it
    // stands for.
    batch_signatures_.clear();
    batch_items_.clear();
    for (size_t f = 0; f < fresh_.size(); ++f) {
      const OpBits<W>& ops = sc.endings[fresh_[f].index];
      batch_signatures_.push_back(stages_.HashStage(ops));
      batch_items_.push_back({f, Strategy::kConcurrent});
      source_.Prefetch(batch_signatures_.back());
      if (options_.enable_merge && stages_.IsMergeable(ops)) {
        fresh_[f].mergeable = true;
        batch_signatures_.push_back(stages_.MergeSignature());
        batch_items_.push_back({f, Strategy::kMerge});
        source_.Prefetch(batch_signatures_.back());
      }
    }
    batch_latencies_.assign(batch_signatures_.size(), std::nullopt);
    source_.LookupBatch(
        batch_signatures_,
        [&](size_t k) {
          stages_.HashStage(sc.endings[fresh_[batch_items_[k].first].index]);
          return stages_.CanonicalStage(batch_items_[k].second);
        },
        absl::MakeSpan(batch_latencies_));
    if (!source_.status().ok() && status_.ok()) status_ = source_.status();
    size_t k = 0;
    for (const FreshEnding& fresh : fresh_) {
      const OpBits<W>& ops = sc.endings[fresh.index];
      MergeValue both;
      both.latency = Known(batch_latencies_[k++]);
      EndingValue value = KnownOr0(both.latency);
      if (fresh.mergeable) {
        both.merge_latency = Known(batch_latencies_[k++]);
        value = std::min(value, KnownOr0(both.merge_latency));
        mergeable_.Insert(ops, fresh.hash, both);
        ++merges_;
      }
      endings_.Insert(ops, fresh.hash, value);
      sc.values[fresh.index] = value;
    }
  }

  // A looked-up latency, or NaN (the pass is then incomplete).
  double Known(const std::optional<double>& latency) {
    if (latency) return *latency;
    complete_ = false;
    return std::numeric_limits<double>::quiet_NaN();
  }

  static double KnownOr0(double latency) { return std::isnan(latency) ? 0 : latency; }

  const BlockGraph& block_;
  const DpOptions& options_;
  LatencySource& source_;
  EndingEnumerator<W> enumerator_;
  BlockStages<W> stages_;
  std::vector<Scratch> scratch_;
  std::vector<FreshEnding> fresh_;
  // AddEndings' batch: signatures, (fresh_ index, strategy) and latencies.
  std::vector<Signature> batch_signatures_;
  std::vector<std::pair<size_t, Strategy>> batch_items_;
  std::vector<std::optional<double>> batch_latencies_;
  OpBitsMap<W, StateValue> states_;
  OpBitsMap<W, EndingValue> endings_;
  OpBitsMap<W, MergeValue> mergeable_;  // the mergeable endings' two latencies
  int64_t merges_ = 0;
  int64_t since_check_ = 0;  // states and endings added since CheckBudget
  size_t scratch_pending_ = 0;  // endings of the state being enumerated
  DpStats stats_;
  bool complete_ = true;
  Status status_;
};

template <int W>
StatusOr<BlockSolution> Solve(const BlockGraph& block, const DpOptions& options,
                              LatencySource& latencies) {
  BlockDp<W> dp(block, options, latencies);
  return dp.Run();
}

}  // namespace

StatusOr<BlockSolution> SolveBlock(const BlockGraph& block, const DpOptions& options,
                                   LatencySource& latencies) {
  if (options.bounds.max_group_ops < 1 || options.bounds.max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("r and s must be >= 1, got r=",
                                             options.bounds.max_group_ops,
                                             " s=", options.bounds.max_groups));
  }
  switch (block.words()) {
    case 1:
      return Solve<1>(block, options, latencies);
    case 2:
      return Solve<2>(block, options, latencies);
    case 4:
      return Solve<4>(block, options, latencies);
    case 8:
      return Solve<8>(block, options, latencies);
    default:
      return Solve<16>(block, options, latencies);
  }
}

}  // namespace iosfarm::scheduler::ios
