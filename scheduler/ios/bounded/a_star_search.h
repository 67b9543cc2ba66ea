// The A* search of the bounded block search (bounded_block_search.h) over
// one block's state graph: its open list, closed states, phases and budget
// (a_star_search.h), and how it expands a state, costs an entry and reads
// the schedule back (a_star_expansion.h). Internal to
// bounded_block_search.cc, the one file that instantiates it: the bounds
// (block_bounds.h) and the cost-to-go DP (cost_to_go_dp.h) are templates
// inlined into its loops.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_SEARCH_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_SEARCH_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "scheduler/ios/bounded/block_bounds.h"
#include "scheduler/ios/bounded/child_rows.h"
#include "scheduler/ios/bounded/cost_to_go_dp.h"
#include "scheduler/ios/bounded/prefetch_ring.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/stages/block_stages.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace iosfarm::scheduler::ios::a_star {


constexpr double kNever = std::numeric_limits<double>::infinity();
// Endings a state first puts on the open list (then as many again as are
// on it, each time its kMoreEndings entry comes up).
constexpr int32_t kFirstSlice = 4;
// Stages of at most this many groups look up every measured sub-stage for a
// tighter bound (2^k probes); wider ones only those of all but one group.
constexpr int kMaxSubsetGroups = 8;

// A* over one block's state graph (bounded_block_search.h), its bounds from
// BlockBounds and, for a small block, the cost-to-go DP (cost_to_go_dp.h).
template <int W>
class Search final : public BoundedBlockSearch {
 public:
  Search(const BlockGraph& block, const BoundedSearchOptions& options)
      : block_(block),
        options_(options),
        enumerator_(block_, options.dp.bounds),
        stages_(block_),
        bounds_(block_, options_) {
    enumerator_.SetCheck([this](uint64_t) {
      if (status_.ok()) CheckBudget();
      return status_.ok();
    });
  }

  Status Advance(LatencySource& source) override {
    RETURN_IF_ERROR(status_);
    waiting_.clear();
    // Paused before the cost-to-go DP, or in its own walk.
    const bool resuming = phase_ == Phase::kReady || phase_ == Phase::kWalking;
    if (phase_ == Phase::kGroups) {
      RETURN_IF_ERROR(MeasureGroups(source));
      if (!waiting_.empty()) return absl::OkStatus();
      Start();
    }
    if (resuming) Begin();
    while (phase_ == Phase::kSearch && status_.ok()) {
      if (++since_check_ >= 256 || StopRequested()) {
        since_check_ = 0;
        CheckBudget();
        if (!status_.ok()) break;
      }
      if (open_.empty()) {  // nothing left can beat the incumbent
        Finish(incumbent_);
        break;
      }
      Entry top = open_.front();
      if (top.kind == Kind::kMoreEndings) {
        PopTop();
        Expand(top.parent, top.next_ending);
      } else if (top.kind == Kind::kUnevaluated) {
        const double tighter = SubStageBound(top.stage);
        if (tighter > top.cost * (1 + 1e-12)) {
          PopTop();
          top.g = closed_[top.parent].g + tighter;
          top.cost = tighter;
          top.f = top.g + top.h;
          PushNew(top);
          ++stats_.tightened_bounds;
          continue;
        }
        double concurrent_ms = 0;
        std::optional<double> cost = Evaluate(top, source, &top.merge, &concurrent_ms);
        RETURN_IF_ERROR(source.status());
        if (!cost) {
          LookAhead(source);
          RETURN_IF_ERROR(source.status());
          return status_;
        }
        PopTop();
        const uint64_t stage_hash = top.stage.Hash();
        if (evaluated_.Find(top.stage, stage_hash) == nullptr) {
          evaluated_.Insert(top.stage, stage_hash, concurrent_ms);
        }
        if (*cost < top.cost - 1e-12) {
          ++stats_.lower_bound_misses;
          stats_.largest_bound_miss_ms =
              std::max(stats_.largest_bound_miss_ms, top.cost - *cost);
        }
        top.g = closed_[top.parent].g + *cost;
        top.cost = *cost;
        top.f = top.g + top.h;
        top.kind = Kind::kEvaluated;
        PushNew(top);
      } else {
        PopTop();
        Reach(top);
      }
    }
    return status_;
  }

  bool solved() const override { return phase_ == Phase::kSolved; }
  bool paused_before_cost_to_go_dp() const override { return phase_ == Phase::kReady; }
  bool walking() const override { return phase_ == Phase::kWalking; }
  const BlockGraph& block() const override { return block_; }
  const std::vector<Signature>& waiting_for() const override { return waiting_; }
  const BlockSolution& solution() const override { return solution_; }
  std::shared_ptr<const BoundTable> bound_table() override { return costs_.Table(block_.size()); }
  DpStats stats() const override {
    DpStats stats = stats_;
    stats.states = static_cast<int64_t>(closed_.size());
    stats.distinct_stages += stats.bound_groups;  // the groups are looked up too
    return stats;
  }

  // StartCostToGoDpWalk for searches of width W (all paused, of one shape).
  static std::unique_ptr<CostToGoDpWalk<W>> StartTogether(std::span<Search* const> searches) {
    std::vector<CostToGoDpPart<W>> parts;
    for (Search* search : searches) parts.push_back(search->part());
    return CostToGoDpWalk<W>::Start(parts, /*alone=*/false);
  }

 private:
  // kReady: paused before the cost-to-go DP; kWalking: in its own walk, stopped by pause_walk.
  enum class Phase { kGroups, kReady, kWalking, kSearch, kSolved };
  // An open-list entry: the stage `stage` as the last one of state
  // closed_[parent]. kUnevaluated: the stage's cost is its lower bound;
  // kEvaluated: its latency. kMoreEndings: the parent's endings from rank
  // next_ending on (by key) are not on the list yet; its key is theirs.
  enum class Kind : uint8_t { kUnevaluated, kEvaluated, kMoreEndings };
  struct Entry {
    double f = 0;     // g + h: a lower bound of any schedule through it
    double g = 0;     // the parent's g plus cost
    double h = 0;     // the child's cost to go (a lower bound)
    double cost = 0;  // of the stage: its bound, or its latency once evaluated
    uint64_t seq = 0;
    int32_t parent = 0;
    int32_t next_ending = 0;
    Kind kind = Kind::kUnevaluated;
    bool merge = false;
    OpBits<W> stage;
  };
  // Order of the open list (a max-heap of this "less"): least f first, then
  // the deepest (largest g), then the oldest.
  static bool After(const Entry& a, const Entry& b) {
    if (a.f != b.f) return a.f > b.f;
    if (a.h != b.h) return a.h > b.h;
    return a.seq > b.seq;
  }
  // A state taken off the open list (its g is optimal) and how it was reached.
  struct Closed {
    OpBits<W> ops;  // still to schedule
    double g = 0;   // latency of the stages after it
    double h = 0;
    int32_t parent = -1;
    OpBits<W> stage;  // the stage that follows it (from the parent)
    double cost = 0;
    bool merge = false;
    double sequential = 0;  // its ops one by one: g + this is a schedule
    // Expand: the key of the last rank its next enumeration needs whole
    // (kNever: every rank), and the rank its kept slice starts at (-1:
    // none kept, slice_cache_).
    double slice_key = kNever;
    int32_t cached_from = -1;
    int32_t row = -1;  // the walk's (costs_; -1: none)
  };

  // An ending of Expand: its key, bound, child's cost to go and rank among equal keys.
  struct Ranked {
    double key;  // f of the entry
    double bound;
    double h;
    int32_t order;
    int8_t one_group;
    OpBits<W> ops;
  };
  // The order of Expand's ranks: by key, then enumeration order.
  static bool ByKey(const Ranked& a, const Ranked& b) {
    return a.key != b.key ? a.key < b.key : a.order < b.order;
  }
  // Where the slice of Expand's ranks from `from` ends: as many as were
  // before it, at least kFirstSlice.
  static constexpr size_t SliceEnd(size_t from) {
    return from + std::max<size_t>(kFirstSlice, from);
  }
  // The ranks a state's first expansion needs with whole bounds: its slice,
  // the one KeepNextSlices keeps after it, and the key of the last rank the
  // enumeration after that needs (ranks 0 to SliceEnd^4(0), 33 ranks).
  static constexpr size_t kWholeRanks = SliceEnd(SliceEnd(SliceEnd(SliceEnd(0)))) + 1;

  bool StopRequested() const {
    return options_.dp.stop != nullptr && options_.dp.stop->load(std::memory_order_relaxed);
  }

  // Enumerates the block's groups (once) and looks their latencies up.
  Status MeasureGroups(LatencySource& source) {
    if (bounds_.groups().empty()) {
      if (!bounds_.EnumerateGroups()) {
        return Over(StrCat("more than ", options_.max_groups, " groups"));
      }
      stats_.bound_groups =
          static_cast<int64_t>(bounds_.groups().size()) * (bounds_.by_cores() ? 2 : 1);
    }
    return bounds_.LookUpGroups(source, stages_, &waiting_);
  }

  // The bounds' tables (BlockBounds::Prepare) and the incumbent's limit,
  // then (Begin) the cost-to-go DP and the root state.
  void Start() {
    bounds_.Prepare(stages_);
    upper_limit_ = Limit(bounds_.sequential_ms());
    if (options_.pause_before_cost_to_go_dp && options_.cost_to_go_dp_max_states > 0) {
      phase_ = Phase::kReady;  // WalkCostToGoDps, or the next Advance
      return;
    }
    Begin();
  }

  // The rest of Start: the cost-to-go DP (unless WalkCostToGoDps walked it) and the
  // root state; kWalking where pause_walk stopped the walk.
  void Begin() {
    const int n = block_.size();
    if (!costs_.walked() && !BoundCostToGo()) {
      phase_ = Phase::kWalking;
      return;
    }
    phase_ = Phase::kSearch;
    if (n == 0) {
      Finish(-1);
      return;
    }
    Closed root;
    root.ops = OpBits<W>::FirstN(n);
    root.h = CostToGo(root.ops);
    root.sequential = bounds_.sequential_ms();
    root.row = costs_.Row(root.ops);
    closed_.push_back(root);
    closed_index_.Insert(root.ops, root.ops.Hash(), 0);
    Expand(0);
  }

  // The open list keeps what can still beat a schedule of latency `ms`
  // (rounding aside).
  static double Limit(double ms) { return RoundingLimit(ms); }

  // This search's part in a cost-to-go DP walk (CostToGoDpWalk).
  CostToGoDpPart<W> part() {
    return {&block_, &options_, &bounds_, &costs_, &stats_, &enumerator_, &status_, &walk_bytes_};
  }

  // The cost-to-go DP of this search alone, started or gone on with; false
  // where pause_walk stopped it (walk_ keeps it).
  bool BoundCostToGo() {
    if (walk_ == nullptr) {
      const CostToGoDpPart<W> own = part();
      walk_ = CostToGoDpWalk<W>::Start({&own, 1}, /*alone=*/true);
      if (walk_ == nullptr) return true;  // nothing to walk
    }
    if (!walk_->Continue(options_.pause_walk)) return false;
    walk_.reset();
    return true;
  }

  // h(S): the cost-to-go DP's (which holds the other terms too), else the
  // critical path, work and device floor terms (BlockBounds::PathCostToGo).
  double CostToGo(const OpBits<W>& ops) {
    if (costs_.walked()) {
      const int32_t row = costs_.Row(ops);  // every non-empty state has one
      if (row >= 0) return costs_.cost(row);
    }
    return bounds_.PathCostToGo(ops);
  }

  // Puts the endings of closed_[index] of rank `from` on (ordered by key:
  // the group bound and the parent's cost to go, then enumeration order)
  // on the open list, as many as were before them (at least kFirstSlice),
  // and a kMoreEndings entry for the rest. A state has up to thousands of
  // endings and few of them are ever taken: listing them in growing slices
  // keeps the open list small for O(log) re-enumerations per state. An
  // enumeration also keeps the next slice (slice_cache_: its next
  // expansion enumerates nothing) and finds the key of the last rank the
  // enumeration after that needs (Closed::slice_key), which then takes no
  // more of each bound (IdsBound's cutoff) than to see that an ending ranks
  // past it: for most endings that skips the issue chains. The slices and
  // the least key of the rest come out as if every bound were whole. A
  // first expansion has no such key yet: it takes each bound only while the
  // ending's key is under the kWholeRanks-th least whole key listed so far
  // (that key only falls, so every rank it needs comes out whole).
  void Expand(int32_t index, int32_t from = 0);

  // After an enumeration whose ranks up to `end` have their place (ranked_,
  // by key; least_cut: the least key whose bound was cut off): keeps the
  // slice from `end` (with the least of the rest after it) for the state's
  // next expansion where its bounds are whole, and records the key of the
  // last rank the enumeration after that one needs whole.
  void KeepNextSlices(int32_t index, size_t end, double least_cut);

  // Expand from the slice KeepNextSlices kept: the entries still under the
  // incumbent, and the rest's kMoreEndings entry.
  void PushCachedSlice(int32_t index);

  // An open-list entry for a ranked ending of closed_[index] (of g `g`).
  void PushRanked(int32_t index, double g, const Ranked& ranked) {
    Entry entry;
    entry.g = g + ranked.bound;
    entry.cost = ranked.bound;
    entry.f = ranked.key;
    entry.parent = index;
    entry.h = ranked.h;
    entry.stage = ranked.ops;
    // A one-group stage is its own bound: measured, and never mergeable.
    entry.kind = ranked.one_group ? Kind::kEvaluated : Kind::kUnevaluated;
    PushNew(entry);
  }

  // The kMoreEndings entry of closed_[index] for its endings from rank
  // `next`, the least of whose keys is `key`.
  void PushMore(int32_t index, double g, double key, int32_t next) {
    Entry more;
    more.f = key;
    more.g = g;
    more.parent = index;
    more.next_ending = next;
    more.kind = Kind::kMoreEndings;
    PushNew(more);
  }

  // The largest concurrent latency known in this block of a stage made of
  // some of `stage`'s groups (of all but one where it has many): a lower
  // bound of its concurrent latency when adding a group never makes a stage
  // faster. 0 for a stage that takes no such bound (TakesSubStageBound).
  double SubStageBound(const OpBits<W>& stage);

  // The latency of the entry's stage (the cheaper strategy; *merge says
  // which, *concurrent_ms gives the concurrent one), or nullopt while one is
  // unknown (waiting_ names them).
  std::optional<double> Evaluate(const Entry& entry, LatencySource& source, bool* merge, double* concurrent_ms);

  std::optional<double> Lookup(const OpBits<W>& ops, Signature signature, Strategy strategy,
                               LatencySource& source) {
    return source.Lookup(signature, [&]() {
      stages_.HashStage(ops);
      return stages_.CanonicalStage(strategy);
    });
  }

  // Looks up the latencies of the next `lookahead` entries after the top
  // (queueing requests for the unknown ones) and leaves the list as it was.
  void LookAhead(LatencySource& source);

  // Takes the evaluated entry's child off the open list: closes it the
  // first time (its g is then optimal) and expands it, or finishes.
  void Reach(const Entry& entry);

  // Reads the schedule back from closed_[last] (the goal, or the incumbent
  // when nothing cheaper is left): its ops one by one in block order, then
  // the stages that lead from it back to the root (the walk gives them in
  // execution order: the root's stage is the schedule's last). -1: an
  // empty block.
  void Finish(int32_t last);

  void Solved() {
    phase_ = Phase::kSolved;
    solution_.stats = stats();
    open_ = {};
    open_.shrink_to_fit();
    slice_cache_ = {};
    slice_cache_bytes_ = 0;
  }

  // A new entry takes the next sequence number; a restored one keeps its
  // own, so that looking ahead leaves the order of the list as it was.
  void PushNew(Entry entry) {
    entry.seq = next_seq_++;
    Restore(entry);
  }
  void Restore(const Entry& entry) {
    open_.push_back(entry);
    std::push_heap(open_.begin(), open_.end(), After);
  }
  void PopTop() {
    ++steps_;
    std::pop_heap(open_.begin(), open_.end(), After);
    open_.pop_back();
  }

  void CheckBudget() {
    const DpOptions& dp = options_.dp;
    if (StopRequested()) {
      status_ = absl::CancelledError("search stopped (job cancelled or server shutting down)");
    } else if (options_.max_open_steps > 0 && steps_ > options_.max_open_steps) {
      status_ = Over(StrCat("more than ", options_.max_open_steps, " open-list steps"));
    } else if (dp.max_states > 0 && static_cast<int64_t>(closed_.size()) >= dp.max_states) {
      status_ = Over(StrCat("more than ", dp.max_states, " expanded states"));
    } else if (dp.max_transitions > 0 && stats_.transitions > dp.max_transitions) {
      status_ = Over(StrCat("more than ", dp.max_transitions, " transitions"));
    } else if (dp.max_steps > 0 && static_cast<int64_t>(enumerator_.steps()) > dp.max_steps) {
      status_ = Over(StrCat("more than ", dp.max_steps, " ending enumeration steps"));
    } else if (dp.max_bytes > 0 && MemoryBytes() > dp.max_bytes) {
      status_ = Over(StrCat("more than ", dp.max_bytes >> 20, " MiB"));
    }
  }

  Status Over(const std::string& what) const {
    return SearchBudgetError(StrCat("block starting at '",
                                    block_.graph().node(block_.node(0)).name, "' (",
                                    block_.size(), " ops) needs ", what,
                                    " in its bounded search (the search budget)"));
  }

  int64_t MemoryBytes() const {
    const size_t bytes = open_.capacity() * sizeof(Entry) + closed_.capacity() * sizeof(Closed) +
                         closed_index_.memory_bytes() + stages_.memory_bytes();
    return static_cast<int64_t>(bytes) + bounds_.memory_bytes() + costs_.memory_bytes() +
           slice_cache_bytes_ + walk_bytes_;
  }

  const BlockGraph block_;
  const BoundedSearchOptions options_;
  EndingEnumerator<W> enumerator_;
  BlockStages<W> stages_;
  BlockBounds<W> bounds_;
  Phase phase_ = Phase::kGroups;
  Status status_;
  std::vector<Signature> waiting_;
  // Once the cost-to-go DP ran (costs_.walked()): this search's cost to go by
  // walk row, and the walk's rows and drops (shared by the searches of one
  // walk).
  BoundCosts<W> costs_;
  double upper_limit_ = 0;
  int32_t incumbent_ = 0;  // the closed state of the best known schedule
  std::vector<Entry> open_;
  uint64_t next_seq_ = 0;
  std::vector<Closed> closed_;
  OpBitsMap<W, int32_t> closed_index_;

  OpBitsMap<W, char> looked_up_;  // stages whose latency was looked up
  OpBitsMap<W, double> evaluated_;  // latencies of this block's stages, by ops
  std::vector<Ranked> ranked_;  // scratch of Expand
  std::vector<double> whole_keys_;   // scratch of Expand
  std::vector<int32_t> expand_ids_;  // scratch of Expand: its pending endings' groups
  // KeepNextSlices: per closed state, the next slice of its endings.
  absl::flat_hash_map<int32_t, std::vector<Ranked>> slice_cache_;
  int64_t slice_cache_bytes_ = 0;
  int64_t walk_bytes_ = 0;  // the tables of a running walk (this search its first)
  int since_check_ = 0;
  int64_t steps_ = 0;  // entries taken off the open list
  DpStats stats_;
  BlockSolution solution_;
  // Its own walk while pause_walk stops it (after what it points into).
  std::unique_ptr<CostToGoDpWalk<W>> walk_;
};

}  // namespace iosfarm::scheduler::ios::a_star

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_SEARCH_H_
