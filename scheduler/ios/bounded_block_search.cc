#include "scheduler/ios/bounded_block_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "scheduler/ios/block_bounds.h"
#include "scheduler/ios/block_stages.h"
#include "scheduler/ios/bound_dp_walk.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/in_flight.h"
#include "scheduler/ios/op_bits_map.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/state_drops.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNever = std::numeric_limits<double>::infinity();
// Endings a state first puts on the open list (then as many again as are
// on it, each time its kMoreEndings entry comes up).
constexpr int32_t kFirstSlice = 4;
// Stages of at most this many groups look up every measured sub-stage for a
// tighter bound (2^k probes); wider ones only those of all but one group.
constexpr int kMaxSubsetGroups = 8;

// A* over one block's state graph (bounded_block_search.h), its bounds from
// BlockBounds and, for a small block, the bound DP (bound_dp_walk.h).
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
    const bool resuming = phase_ == Phase::kReady;  // paused before the bound DP
    if (phase_ == Phase::kGroups) {
      RETURN_IF_ERROR(MeasureGroups(source));
      if (!waiting_.empty()) return absl::OkStatus();
      if (options_.floor_samples > 0) {
        ChooseSamples();
        RETURN_IF_ERROR(status_);
        phase_ = Phase::kCalibrate;
      } else {
        Start();
      }
    }
    if (phase_ == Phase::kCalibrate) {
      RETURN_IF_ERROR(MeasureSamples(source));
      if (!waiting_.empty()) return absl::OkStatus();
      FitFloor();
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
  bool paused_before_bound_dp() const override { return phase_ == Phase::kReady; }
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

  // WalkBoundDps for searches of width W (all paused, of one shape).
  static void WalkTogether(std::span<Search* const> searches) {
    std::vector<BoundDpPart<W>> parts;
    for (Search* search : searches) parts.push_back(search->part());
    BoundDpWalk<W>::Run(parts, /*alone=*/false);
  }

 private:
  enum class Phase { kGroups, kCalibrate, kReady, kSearch, kSolved };
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

  // Random walks from the whole block (seeded by the block's size only, so
  // the same block draws the same samples): at each state one ending of two
  // or more groups that does not merge is sampled (the widest such half of
  // the time), and the walk goes on through a random ending.
  void ChooseSamples() {
    const int n = block_.size();
    const size_t wanted = static_cast<size_t>(options_.floor_samples);
    uint64_t rng = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(n);
    auto next = [&rng]() {  // splitmix64
      uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    OpBitsMap<W, char> chosen;
    struct Candidate {
      OpBits<W> ops;
      int groups;
      bool sample;
    };
    std::vector<Candidate> endings;
    for (size_t walk = 0; walk < 4 * wanted && samples_.size() < wanted && n > 0; ++walk) {
      OpBits<W> state = OpBits<W>::FirstN(n);
      while (!state.Empty() && samples_.size() < wanted) {
        endings.clear();
        int widest = 0;
        enumerator_.Enumerate(
            state, [&](const OpBits<W>& ops, const EndingGroup<W>* /*groups*/, int num_groups) {
              const bool sample = num_groups > 1 && !bounds_.Mergeable(ops, num_groups);
              endings.push_back({ops, num_groups, sample});
              if (sample) widest = std::max(widest, num_groups);
            });
        if (!status_.ok() || endings.empty()) return;
        if (widest > 0) {
          const bool wide_only = next() & 1;
          std::vector<size_t> pool;
          for (size_t i = 0; i < endings.size(); ++i) {
            if (endings[i].sample && (!wide_only || endings[i].groups == widest)) pool.push_back(i);
          }
          const OpBits<W>& pick = endings[pool[next() % pool.size()]].ops;
          const uint64_t hash = pick.Hash();
          if (chosen.Find(pick, hash) == nullptr) {
            chosen.Insert(pick, hash, 1);
            samples_.push_back(pick);
          }
        }
        state = state.Minus(endings[next() % endings.size()].ops);
      }
    }
    sample_latency_.assign(samples_.size(), kNaN);
    stats_.floor_samples = static_cast<int64_t>(samples_.size());
  }

  // Looks up the samples' concurrent latencies (queueing the unknown ones).
  Status MeasureSamples(LatencySource& source) {
    for (size_t i = 0; i < samples_.size(); ++i) {
      if (!std::isnan(sample_latency_[i])) continue;
      const OpBits<W>& ops = samples_[i];
      const Signature signature = stages_.HashStage(ops);
      const uint64_t hash = ops.Hash();
      if (looked_up_.Find(ops, hash) == nullptr) {
        looked_up_.Insert(ops, hash, 1);
        ++stats_.distinct_stages;
      }
      std::optional<double> known = Lookup(ops, signature, Strategy::kConcurrent, source);
      RETURN_IF_ERROR(source.status());
      if (known) {
        sample_latency_[i] = *known;
        if (evaluated_.Find(ops, hash) == nullptr) evaluated_.Insert(ops, hash, *known);
      } else {
        waiting_.push_back(signature);
      }
    }
    return absl::OkStatus();
  }

  // The calibrated floor, fitted to the samples.
  void FitFloor() { bounds_.FitFloor(samples_, sample_latency_, stages_); }

  // The bounds' tables (BlockBounds::Prepare) and the incumbent's limit,
  // then (Begin) the bound DP and the root state.
  void Start() {
    bounds_.Prepare(stages_);
    upper_limit_ = Limit(bounds_.sequential_ms());
    if (options_.pause_before_bound_dp && options_.bound_dp_max_states > 0) {
      phase_ = Phase::kReady;  // WalkBoundDps, or the next Advance
      return;
    }
    Begin();
  }

  // The rest of Start: the bound DP (unless WalkBoundDps walked it) and the
  // root state.
  void Begin() {
    const int n = block_.size();
    if (!costs_.walked()) BoundCostToGo();
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

  // This search's part in a bound DP walk (BoundDpWalk).
  BoundDpPart<W> part() {
    return {&block_, &options_, &bounds_, &costs_, &stats_, &enumerator_, &status_, &walk_bytes_};
  }

  // The bound DP of this search alone.
  void BoundCostToGo() {
    const BoundDpPart<W> own = part();
    BoundDpWalk<W>::Run({&own, 1}, /*alone=*/true);
  }

  // h(S): the bound DP's (which holds the other terms too), else the
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
  void Expand(int32_t index, int32_t from = 0) {
    if (from > 0 && closed_[index].cached_from == from) {
      PushCachedSlice(index);
      return;
    }
    const Closed parent = closed_[index];
    ranked_.clear();
    closed_[index].slice_key = kNever;
    if (parent.g + parent.h > upper_limit_) return;  // no ending can beat the incumbent
    const double slice_limit = from == 0 ? kNever : Limit(parent.slice_key);
    const int s = options_.dp.bounds.max_groups;
    expand_ids_.resize(static_cast<size_t>(kInFlight) * s);
    // With the bound DP, a child's cost to go is read kInFlight endings
    // after its slot is prefetched (the misses were half of the expansion);
    // the bound comes after it, cut off where the key passes the incumbent
    // or the slice.
    struct Pending {
      OpBits<W> ops, child;  // child: where it has no row
      int32_t row;           // the child's in costs_ (-1: none, or empty)
      int num_groups, found;
    };
    InFlight<Pending> pending;
    double least_cut = kNever;  // the least key of an ending whose bound was cut off
    // A first expansion's least whole keys (a max-heap of up to kWholeRanks).
    whole_keys_.clear();
    auto settle = [&](int slot) {
      const Pending& ending = pending[slot];
      double h = 0;
      if (ending.row >= 0) {
        h = costs_.cost(ending.row);
      } else if (!ending.child.Empty()) {
        h = CostToGo(ending.child);  // (with a walk, a state's endings go by_row)
      }
      const bool first = from == 0;
      const double slice =
          first && whole_keys_.size() == kWholeRanks ? Limit(whole_keys_.front()) : slice_limit;
      const double to_limit = upper_limit_ - parent.g - h;
      const double to_slice = slice - parent.g - h;
      const double bound =
          bounds_.IdsBound(ending.ops, &expand_ids_[static_cast<size_t>(slot) * s], ending.found,
                           ending.num_groups, std::min(to_limit, to_slice));
      if (bound >= to_limit) return;
      const double key = parent.g + bound + h;
      if (ending.num_groups > 1 && bound >= to_slice) {
        least_cut = std::min(least_cut, key);
      } else if (first && (whole_keys_.size() < kWholeRanks || key < whole_keys_.front())) {
        whole_keys_.push_back(key);
        std::push_heap(whole_keys_.begin(), whole_keys_.end());
        if (whole_keys_.size() > kWholeRanks) {
          std::pop_heap(whole_keys_.begin(), whole_keys_.end());
          whole_keys_.pop_back();
        }
      }
      ranked_.push_back({key, bound, h, static_cast<int32_t>(ranked_.size()),
                         static_cast<int8_t>(ending.num_groups == 1), ending.ops});
    };
    auto list = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) -> Pending& {
      const int slot = pending.Next(settle);
      Pending& ending = pending[slot];
      ending.ops = ops;
      ending.num_groups = num_groups;
      ending.found =
          bounds_.GroupIds(groups, num_groups, &expand_ids_[static_cast<size_t>(slot) * s]);
      return ending;
    };
    // With the walk's rows its drops lead each ending to its child's row (no
    // hashing); without, the child is hashed into the table of costs to go.
    auto by_row = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                      typename StateDrops<W>::Node child) {
      Pending& ending = list(ops, groups, num_groups);
      ending.child = OpBits<W>();
      ending.row = child.row;
      if (child.row >= 0) costs_.Prefetch(child.row);
    };
    auto by_hash = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
      Pending& ending = list(ops, groups, num_groups);
      ending.child = parent.ops.Minus(ops);
      ending.row = -1;
    };
    if (parent.row >= 0) {
      const StateDrops<W>& drops = costs_.drops();
      enumerator_.EnumerateFollowing(parent.ops, drops, drops.Root(parent.row), by_row);
    } else {
      enumerator_.Enumerate(parent.ops, by_hash);
    }
    const uint64_t listed = pending.Drain(settle);  // every ending enumerated
    if (from == 0) stats_.transitions += static_cast<int64_t>(listed);
    const size_t end = std::min(ranked_.size(), SliceEnd(from));
    if (static_cast<size_t>(from) >= ranked_.size()) return;
    // Only ranks [from, end] need their place: select, then sort the slice.
    if (end < ranked_.size()) {
      std::nth_element(ranked_.begin(), ranked_.begin() + end, ranked_.end(), ByKey);
      KeepNextSlices(index, end, least_cut);
    }
    std::nth_element(ranked_.begin(), ranked_.begin() + from, ranked_.begin() + end, ByKey);
    std::sort(ranked_.begin() + from, ranked_.begin() + end, ByKey);
    for (size_t i = from; i < end; ++i) PushRanked(index, parent.g, ranked_[i]);
    // The least key of the rest (nth_element).
    if (end < ranked_.size())
      PushMore(index, parent.g, ranked_[end].key, static_cast<int32_t>(end));
  }

  // After an enumeration whose ranks up to `end` have their place (ranked_,
  // by key; least_cut: the least key whose bound was cut off): keeps the
  // slice from `end` (with the least of the rest after it) for the state's
  // next expansion where its bounds are whole, and records the key of the
  // last rank the enumeration after that one needs whole.
  void KeepNextSlices(int32_t index, size_t end, double least_cut) {
    auto whole_through = [&](size_t rank) { return ranked_[rank].key < least_cut; };
    const size_t size = ranked_.size();
    const size_t cache_end = SliceEnd(end);  // the kept slice: [end, cache_end)
    // The enumeration after it lists [cache_end, next_end) and keeps the
    // slice to key_end; without a kept slice the next one lists
    // [end, cache_end) and keeps the slice to next_end.
    const size_t next_end = SliceEnd(cache_end);
    const size_t key_end = SliceEnd(next_end);
    Closed& state = closed_[index];
    if (cache_end < size) {
      std::nth_element(ranked_.begin() + end + 1, ranked_.begin() + cache_end, ranked_.end(),
                       ByKey);
    }
    const bool keep = cache_end < size ? whole_through(cache_end) : least_cut == kNever;
    const size_t needed_end = keep ? key_end : next_end;
    if (needed_end < size) {
      const size_t after = cache_end < size ? cache_end + 1 : size;
      if (after < needed_end) {
        std::nth_element(ranked_.begin() + after, ranked_.begin() + needed_end, ranked_.end(),
                         ByKey);
      }
      if (whole_through(needed_end)) state.slice_key = ranked_[needed_end].key;
    }
    if (!keep) return;
    const size_t last = std::min(cache_end + 1, size);  // with the least of the rest
    std::sort(ranked_.begin() + end, ranked_.begin() + std::min(cache_end, size), ByKey);
    std::vector<Ranked>& slice = slice_cache_[index];
    slice.assign(ranked_.begin() + end, ranked_.begin() + last);
    slice_cache_bytes_ += static_cast<int64_t>(slice.capacity() * sizeof(Ranked));
    state.cached_from = static_cast<int32_t>(end);
  }

  // Expand from the slice KeepNextSlices kept: the entries still under the
  // incumbent, and the rest's kMoreEndings entry.
  void PushCachedSlice(int32_t index) {
    auto it = slice_cache_.find(index);
    const std::vector<Ranked> slice = std::move(it->second);
    slice_cache_.erase(it);
    slice_cache_bytes_ -= static_cast<int64_t>(slice.capacity() * sizeof(Ranked));
    Closed& state = closed_[index];
    const int32_t from = state.cached_from;
    state.cached_from = -1;
    // The slice from `from`, and the least of the rest where it has more.
    const size_t listed = std::min(slice.size(), SliceEnd(from) - from);
    auto under_limit = [&](const Ranked& ranked) {
      return ranked.bound < upper_limit_ - state.g - ranked.h;  // as the enumeration keeps it
    };
    for (size_t i = 0; i < listed; ++i) {
      if (under_limit(slice[i])) PushRanked(index, state.g, slice[i]);
    }
    if (slice.size() > listed && under_limit(slice.back())) {
      PushMore(index, state.g, slice.back().key, from + static_cast<int32_t>(listed));
    }
  }

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
  double SubStageBound(const OpBits<W>& stage) {
    if (!options_.sub_stage_bound) return 0;
    stages_.HashStage(stage);
    const std::vector<OpBits<W>>& groups = stages_.groups();
    const int k = static_cast<int>(groups.size());
    if (!TakesSubStageBound(block_, stage, k, options_.dp.enable_merge)) return 0;
    double bound = 0;
    if (k > kMaxSubsetGroups) {  // all but one group only
      for (const OpBits<W>& group : groups) {
        const OpBits<W> rest = stage.Minus(group);
        if (const double* known = evaluated_.Find(rest, rest.Hash())) {
          bound = std::max(bound, *known);
        }
      }
      return bound;
    }
    // Every proper subset of two or more groups (Gray-code order: one group
    // in or out per step).
    OpBits<W> subset;
    int count = 0;
    for (uint32_t i = 1; i < (1u << k) - 1; ++i) {
      const int flip = __builtin_ctz(i);
      const bool in = ((i ^ (i >> 1)) >> flip) & 1;
      if (in) {
        subset |= groups[flip];
        ++count;
      } else {
        subset = subset.Minus(groups[flip]);
        --count;
      }
      if (count < 2) continue;
      if (const double* known = evaluated_.Find(subset, subset.Hash())) {
        bound = std::max(bound, *known);
      }
    }
    return bound;
  }

  // The latency of the entry's stage (the cheaper strategy; *merge says
  // which, *concurrent_ms gives the concurrent one), or nullopt while one is
  // unknown (waiting_ names them).
  std::optional<double> Evaluate(const Entry& entry, LatencySource& source, bool* merge,
                                 double* concurrent_ms) {
    const Signature concurrent = stages_.HashStage(entry.stage);
    const bool mergeable = options_.dp.enable_merge && stages_.IsMergeable(entry.stage);
    const Signature merged = mergeable ? stages_.MergeSignature() : 0;
    const uint64_t hash = entry.stage.Hash();
    if (looked_up_.Find(entry.stage, hash) == nullptr) {
      looked_up_.Insert(entry.stage, hash, 1);
      stats_.distinct_stages += 1 + mergeable;
      stats_.merge_stages += mergeable;
    }
    std::optional<double> latency = Lookup(entry.stage, concurrent, Strategy::kConcurrent, source);
    std::optional<double> merge_latency;
    if (mergeable) merge_latency = Lookup(entry.stage, merged, Strategy::kMerge, source);
    if (!latency) waiting_.push_back(concurrent);
    if (mergeable && !merge_latency) waiting_.push_back(merged);
    if (!latency || (mergeable && !merge_latency)) return std::nullopt;
    *concurrent_ms = *latency;
    *merge = mergeable && *merge_latency < *latency;
    return *merge ? *merge_latency : *latency;
  }

  std::optional<double> Lookup(const OpBits<W>& ops, Signature signature, Strategy strategy,
                               LatencySource& source) {
    return source.Lookup(signature, [&]() {
      stages_.HashStage(ops);
      return stages_.CanonicalStage(strategy);
    });
  }

  // Looks up the latencies of the next `lookahead` entries after the top
  // (queueing requests for the unknown ones) and leaves the list as it was.
  void LookAhead(LatencySource& source) {
    std::vector<Entry> taken;
    while (static_cast<int>(taken.size()) <= options_.lookahead && !open_.empty()) {
      taken.push_back(open_.front());
      PopTop();
    }
    for (size_t i = 1; i < taken.size(); ++i) {
      if (taken[i].kind != Kind::kUnevaluated) continue;
      bool merge = false;
      double concurrent_ms = 0;
      std::vector<Signature> keep;
      keep.swap(waiting_);
      Evaluate(taken[i], source, &merge, &concurrent_ms);
      keep.swap(waiting_);
    }
    for (const Entry& entry : taken) Restore(entry);
  }

  // Takes the evaluated entry's child off the open list: closes it the
  // first time (its g is then optimal) and expands it, or finishes.
  void Reach(const Entry& entry) {
    const OpBits<W> child = closed_[entry.parent].ops.Minus(entry.stage);
    Closed state;
    state.ops = child;
    state.g = entry.g;
    state.h = entry.h;
    state.parent = entry.parent;
    state.stage = entry.stage;
    state.cost = entry.cost;
    state.merge = entry.merge;
    state.sequential = closed_[entry.parent].sequential;
    entry.stage.ForEach([&](int v) { state.sequential -= bounds_.single_latency(v); });
    // The stages after the state, then its ops one by one: a schedule whose
    // every latency is known, so the open list can drop what costs more.
    const double incumbent = Limit(state.g + std::max(0.0, state.sequential));
    const bool better = incumbent < upper_limit_;
    if (better) upper_limit_ = incumbent;
    if (child.Empty()) {
      closed_.push_back(state);
      Finish(static_cast<int32_t>(closed_.size()) - 1);
      return;
    }
    const uint64_t hash = child.Hash();
    if (closed_index_.Find(child, hash) != nullptr) return;
    state.row = costs_.Row(child);
    closed_.push_back(state);
    const int32_t index = static_cast<int32_t>(closed_.size()) - 1;
    if (better) incumbent_ = index;
    closed_index_.Insert(child, hash, index);
    Expand(index);
  }

  // Reads the schedule back from closed_[last] (the goal, or the incumbent
  // when nothing cheaper is left): its ops one by one in block order, then
  // the stages that lead from it back to the root (the walk gives them in
  // execution order: the root's stage is the schedule's last). -1: an
  // empty block.
  void Finish(int32_t last) {
    solution_ = BlockSolution();
    solution_.complete = true;
    auto add = [&](const OpBits<W>& ops, bool merge, double latency) {
      PlannedStage planned;
      planned.stage = stages_.BuildStage(ops, merge ? Strategy::kMerge : Strategy::kConcurrent,
                                         &planned.signature);
      planned.latency_ms = latency;
      solution_.latency_ms += latency;
      solution_.stages.push_back(std::move(planned));
    };
    if (last >= 0) {
      closed_[last].ops.ForEach([&](int v) {
        OpBits<W> op;
        op.Set(v);
        add(op, false, bounds_.single_latency(v));
      });
    }
    for (int32_t at = last; at >= 0 && closed_[at].parent >= 0; at = closed_[at].parent) {
      add(closed_[at].stage, closed_[at].merge, closed_[at].cost);
    }
    Solved();
  }

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
  // Once the bound DP ran (costs_.walked()): this search's cost to go by
  // walk row, and the walk's rows and drops (shared by the searches of one
  // walk).
  BoundCosts<W> costs_;
  // The calibrated floor (floor_samples): the sampled stages and their
  // latencies (NaN while unknown).
  std::vector<OpBits<W>> samples_;
  std::vector<double> sample_latency_;
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
};

}  // namespace

namespace {

template <int W>
Status WalkBoundDpsOf(absl::Span<BoundedBlockSearch* const> searches) {
  std::vector<Search<W>*> typed;
  for (BoundedBlockSearch* search : searches) {
    auto* of_width = dynamic_cast<Search<W>*>(search);
    if (of_width == nullptr) {
      return absl::InvalidArgumentError("WalkBoundDps: blocks of different sizes");
    }
    typed.push_back(of_width);
  }
  Search<W>::WalkTogether(typed);
  return absl::OkStatus();
}

}  // namespace

Status BoundedBlockSearch::WalkBoundDps(absl::Span<BoundedBlockSearch* const> searches) {
  if (searches.empty()) return absl::OkStatus();
  for (size_t i = 0; i < searches.size(); ++i) {
    if (!searches[i]->paused_before_bound_dp()) {
      return absl::InvalidArgumentError(
          StrCat("WalkBoundDps: search ", i, " is not paused before its bound DP"));
    }
    if (!SameShape(searches[0]->block(), searches[i]->block())) {
      return absl::InvalidArgumentError(
          StrCat("WalkBoundDps: block ", i, " is not of the first one's shape"));
    }
  }
  switch (searches[0]->block().words()) {
    case 1:
      return WalkBoundDpsOf<1>(searches);
    case 2:
      return WalkBoundDpsOf<2>(searches);
    case 4:
      return WalkBoundDpsOf<4>(searches);
    case 8:
      return WalkBoundDpsOf<8>(searches);
    default:
      return WalkBoundDpsOf<16>(searches);
  }
}

StatusOr<std::unique_ptr<BoundedBlockSearch>> BoundedBlockSearch::Create(
    const BlockGraph& block, const BoundedSearchOptions& options) {
  if (options.dp.bounds.max_group_ops < 1 || options.dp.bounds.max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("r and s must be >= 1, got r=",
                                             options.dp.bounds.max_group_ops,
                                             " s=", options.dp.bounds.max_groups));
  }
  if (options.lookahead < 0) {
    return absl::InvalidArgumentError(StrCat("lookahead must be >= 0, got ", options.lookahead));
  }
  switch (block.words()) {
    case 1:
      return std::unique_ptr<BoundedBlockSearch>(new Search<1>(block, options));
    case 2:
      return std::unique_ptr<BoundedBlockSearch>(new Search<2>(block, options));
    case 4:
      return std::unique_ptr<BoundedBlockSearch>(new Search<4>(block, options));
    case 8:
      return std::unique_ptr<BoundedBlockSearch>(new Search<8>(block, options));
    default:
      return std::unique_ptr<BoundedBlockSearch>(new Search<16>(block, options));
  }
}

}  // namespace iosfarm::scheduler::ios
