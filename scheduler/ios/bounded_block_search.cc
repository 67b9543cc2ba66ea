#include "scheduler/ios/bounded_block_search.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "scheduler/ios/block_stages.h"
#include "scheduler/ios/ending_guesses.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/issue_chains.h"
#include "scheduler/ios/op_bits_map.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/stage_floor.h"
#include "scheduler/ios/state_drops.h"
#include "scheduler/ios/table_mapping.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNever = std::numeric_limits<double>::infinity();
// Endings whose child's cost to go is prefetched before it is read (the
// tables are far larger than the caches).
constexpr int kInFlight = 8;

// The last kInFlight entries written, each read back kInFlight writes after
// it (long enough for what was prefetched when it was written to arrive),
// in the order written.
template <typename T>
class InFlight {
 public:
  // The slot to fill next; settles the entry written kInFlight writes ago
  // (settle(slot)) first.
  template <typename Settle>
  int Next(Settle&& settle) {
    const int slot = static_cast<int>(written_ % kInFlight);
    if (written_ >= kInFlight) settle(slot);
    ++written_;
    return slot;
  }
  // Settles the entries not settled yet, in the order written; returns how
  // many were written, and starts over.
  template <typename Settle>
  uint64_t Drain(Settle&& settle) {
    for (uint64_t i = written_ > kInFlight ? written_ - kInFlight : 0; i < written_; ++i) {
      settle(static_cast<int>(i % kInFlight));
    }
    const uint64_t written = written_;
    written_ = 0;
    return written;
  }
  T& operator[](int slot) { return slots_[slot]; }

 private:
  std::array<T, kInFlight> slots_;
  uint64_t written_ = 0;
};
// GroupIndex of a set that is no group of the block.
constexpr int32_t kNoGroup = std::numeric_limits<int32_t>::max();
// Endings a state first puts on the open list (then as many again as are
// on it, each time its kMoreEndings entry comes up).
constexpr int32_t kFirstSlice = 4;
// Stages of at most this many groups look up every measured sub-stage for a
// tighter bound (2^k probes); wider ones only those of all but one group.
constexpr int kMaxSubsetGroups = 8;

template <int W>
class Search final : public BoundedBlockSearch {
 public:
  Search(const BlockGraph& block, const BoundedSearchOptions& options)
      : block_(block),
        options_(options),
        enumerator_(block_, options.dp.bounds),
        stages_(block_),
        ending_ids_(options.dp.bounds.max_groups) {
    enumerator_.SetCheck([this](uint64_t) {
      if (status_.ok()) CheckBudget();
      return status_.ok();
    });
    if (options_.floor_samples > 0) {
      for (int v = 0; v < block_.size(); ++v) {
        op_features_.push_back(
            ComputeOpFeatures(block_.graph(), block_.graph().node(block_.node(v))));
      }
    }
    if (options_.device_floor.bounds_anything()) ComputeOpFloors();
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
  std::shared_ptr<const BoundTable> bound_table() override {
    if (!has_bound_cost_) return nullptr;
    if (bound_table_ == nullptr) {  // the walk's costs by state, for a later block
      bound_table_ = std::make_shared<BoundTableOf>(block_.size());
      walk_rows_->rows.ForEach([&](const OpBits<W>& ops, int32_t row) {
        bound_table_->costs.Insert(ops, ops.Hash(), row_cost_[row]);
      });
    }
    return bound_table_;
  }
  DpStats stats() const override {
    DpStats stats = stats_;
    stats.states = static_cast<int64_t>(closed_.size());
    stats.distinct_stages += stats.bound_groups;  // the groups are looked up too
    return stats;
  }

  // WalkBoundDps for searches of width W (all paused, of one shape).
  static void WalkTogether(std::span<Search* const> searches) { Walk(searches, false); }

 private:
  // The bound DP of `searches` (blocks of one shape; one where `alone`: a
  // search's own walk, BoundCostToGo) in one walk of their state graph:
  // every state's shortest remaining schedule where each ending costs its
  // group bound, raised to the other terms of the cost to go (PathCostToGo)
  // where they are larger, in order of growing size (an ending's child is
  // smaller). Its states are ForEachRemainingSet's. The endings are
  // enumerated and the children's costs read once for all searches, each
  // search's bounds taken side by side. A walk `alone` takes the states
  // its prefix block's table holds from it (PrefixCosts) and counts its
  // transitions as it goes (its budget sees them); a shared walk adds them
  // to each search once done. A walk stopped by the first's budget or the
  // stop flag leaves every search's table untouched (the first has the
  // error in status_), as does a block of more states than
  // bound_dp_max_states.
  static void Walk(std::span<Search* const> searches, bool alone) {
    Search& first = *searches[0];
    const int64_t cap = first.options_.bound_dp_max_states;
    if (cap <= 0) return;
    std::vector<OpBits<W>> states;
    ForEachRemainingSet<W>(first.block_, cap + 1,
                           [&](const OpBits<W>& set) { states.push_back(set); });
    if (static_cast<int64_t>(states.size()) > cap) return;
    std::stable_sort(states.begin(), states.end(),
                     [](const OpBits<W>& a, const OpBits<W>& b) { return a.Count() < b.Count(); });
    const size_t k_count = searches.size();
    const OpBitsMap<W, double>* prefix = alone ? first.PrefixCosts() : nullptr;
    const OpBits<W> prefix_ops =
        prefix != nullptr ? OpBits<W>::FirstN(first.options_.prefix_bounds->ops()) : OpBits<W>();
    // Each state's row of costs, one per search, in the order walked, and
    // per search the ending its cost comes from (empty: none). The rows
    // of every state are known before the walk, and their drops
    // (StateDrops) lead each ending to its child's row; both are kept for
    // A*'s expansions (WalkRows).
    auto walk_rows = std::make_shared<WalkRows>();
    OpBitsMap<W, int32_t>& rows = walk_rows->rows;
    for (size_t row = 0; row < states.size(); ++row) {
      rows.Insert(states[row], states[row].Hash(), static_cast<int32_t>(row));
    }
    const StateDrops<W>& drops = walk_rows->drops.emplace(
        first.block_, states, [&](const OpBits<W>& set) { return *rows.Find(set, set.Hash()); });
    if (!drops.ok()) return;  // billions of (state, sink) pairs: as over the cap
    MappedArray<double> costs(states.size() * k_count);
    std::vector<OpBits<W>> best_ending(states.size() * k_count);
    // Per search: the state's best so far, the cutoff its guesses give,
    // and the lesser of the two (an ending at or above it lowers nothing).
    std::vector<double> best(k_count), limit(k_count), cut(k_count);
    const std::vector<double> no_costs(k_count, 0.0);  // the empty child's
    const int s = first.options_.dp.bounds.max_groups;
    InFlight<Pending> pending;
    std::vector<int32_t> pending_ids(static_cast<size_t>(kInFlight) * s);
    int64_t transitions = 0;
    // A bound under every search's (LeastBound), taken first: for one
    // search it is the cheap part of its own, and drops most endings before
    // the call (NASNet-A's walks alone: 221 M calls become 9.9 M).
    const bool shared_bound = SameKernels(searches);
    const std::vector<GroupTerms> least =
        shared_bound ? LeastTerms(searches) : std::vector<GroupTerms>();
    EndingGuesses<W> guesses(first.block_, first.options_.dp.bounds);
    std::vector<int32_t> guess_ids(static_cast<size_t>(s));
    // The walk's own tables count against the first's budget while it runs.
    first.walk_bytes_ =
        static_cast<int64_t>((states.capacity() + best_ending.capacity()) * sizeof(OpBits<W>) +
                             costs.memory_bytes() + rows.memory_bytes() + drops.memory_bytes());
    struct Done {
      int64_t& bytes;
      ~Done() { bytes = 0; }
    } done{first.walk_bytes_};
    // The walk's states count into walk_progress as they are walked, and
    // those left when it stops early as well.
    struct Counted {
      WalkProgress* progress;
      int64_t left;
      ~Counted() {
        if (progress != nullptr) progress->states_walked.fetch_add(left, std::memory_order_relaxed);
      }
    } counted{first.options_.walk_progress, static_cast<int64_t>(states.size())};
    if (counted.progress != nullptr) {
      counted.progress->states_total.fetch_add(counted.left, std::memory_order_relaxed);
    }
    for (size_t row = 0; row < states.size(); ++row) {
      if (counted.progress != nullptr) {
        counted.progress->states_walked.fetch_add(1, std::memory_order_relaxed);
        --counted.left;
      }
      const OpBits<W>& state = states[row];
      const uint64_t state_hash = state.Hash();
      if (prefix != nullptr && state.SubsetOf(prefix_ops)) {
        if (const double* cost = prefix->Find(state, state_hash)) {
          costs[row] = std::max(*cost, first.PathCostToGo(state));
          ++first.stats_.prefix_bound_states;
          continue;
        }
      }
      std::fill(best.begin(), best.end(), kNever);
      // Each search's cutoff starts just above its least guess: the ending
      // its cost comes from stays under it (a guess is an ending listed
      // below too), and most others are dropped from the first on.
      std::fill(limit.begin(), limit.end(), kNever);
      guesses.ForEach(
          state,
          [&](const OpBits<W>& child) -> std::span<const OpBits<W>> {
            const int32_t* found = rows.Find(child, child.Hash());
            if (found == nullptr) return {};
            return {&best_ending[*found * k_count], k_count};
          },
          [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
            const int found = first.GroupIds(groups, num_groups, guess_ids.data());
            const OpBits<W> child = state.Minus(ops);
            const int32_t* child_row = child.Empty() ? nullptr : rows.Find(child, child.Hash());
            if (found < num_groups || (!child.Empty() && child_row == nullptr)) return;
            for (size_t k = 0; k < k_count; ++k) {
              const double after = child_row ? costs[*child_row * k_count + k] : 0.0;
              limit[k] = std::min(limit[k], searches[k]->IdsBound(ops, guess_ids.data(), found,
                                                                  num_groups, limit[k] - after) +
                                                after);
            }
          });
      for (double& cutoff : limit) cutoff = cutoff * (1 + 1e-9) + 1e-12;
      cut = limit;
      OpBits<W>* best_ops = &best_ending[row * k_count];
      // As an ending is listed, its child's costs are prefetched (a row of
      // a large table: a miss per ending was a third of the walk), and a
      // bound of the ending's for every block (LeastBound) is taken once: a
      // block whose cutoff it already reaches needs no bound of its own (it
      // would not lower the best). Taken here, kInFlight endings before
      // settle reads it, its chain of terms overlaps the enumeration.
      auto listed = [&](int slot) {
        Pending& ending = pending[slot];
        if (ending.row >= 0) {
          const char* begin = reinterpret_cast<const char*>(&costs[ending.row * k_count]);
          for (size_t line = 0; line < k_count * sizeof(double); line += 64) {
            __builtin_prefetch(begin + line, 0, 3);
          }
          __builtin_prefetch(begin + k_count * sizeof(double) - 1, 0, 3);
        }
        ending.shared = shared_bound ? first.LeastBound(least, &pending_ids[slot * s], ending.found,
                                                        ending.num_groups)
                                     : 0.0;
      };
      auto settle = [&](int slot) {
        const Pending& ending = pending[slot];
        const int32_t* ids = &pending_ids[slot * s];
        const double shared = ending.shared;
        const double* after = ending.row >= 0 ? &costs[ending.row * k_count] : no_costs.data();
        // The blocks the ending may lower, as bits, without a branch per
        // block: most endings lower none.
        for (size_t base = 0; base < k_count; base += 64) {
          const size_t end = std::min(k_count, base + 64);
          uint64_t lower = 0;
          for (size_t k = base; k < end; ++k) {
            lower |= uint64_t{shared + after[k] < cut[k]} << (k - base);
          }
          for (; lower != 0; lower &= lower - 1) {
            const size_t k = base + static_cast<size_t>(std::countr_zero(lower));
            const double value = searches[k]->IdsBound(ending.ops, ids, ending.found,
                                                       ending.num_groups, cut[k] - after[k]) +
                                 after[k];
            if (value < best[k]) {
              best[k] = value;
              best_ops[k] = ending.ops;
              cut[k] = std::min(value, limit[k]);
            }
          }
        }
      };
      const auto count = static_cast<int64_t>(
          first.ListEndings(state, drops, drops.Root(static_cast<int32_t>(row)), pending,
                            pending_ids, settle, listed));
      (alone ? first.stats_.transitions : transitions) += count;
      if (!first.status_.ok()) return;
      for (size_t k = 0; k < k_count; ++k) {
        costs[row * k_count + k] = std::max(best[k], searches[k]->PathCostToGo(state));
      }
    }
    for (size_t k = 0; k < k_count; ++k) {
      Search& search = *searches[k];
      search.row_cost_.resize(states.size());
      for (size_t row = 0; row < states.size(); ++row) {
        search.row_cost_[row] = costs[row * k_count + k];
      }
      search.walk_rows_ = walk_rows;
      search.stats_.transitions += transitions;
      search.has_bound_cost_ = true;
    }
  }

  // kReady: paused before the bound DP (pause_before_bound_dp).
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
    int32_t row = -1;  // in walk_rows_ (-1: none)
  };

  // Per group, packed for IdsBound (PackGroupTerms): its latency and, with
  // the device floor, its floor terms (else no kernels, no work, no last
  // kernel).
  struct GroupTerms {
    double latency = 0;
    double kernels = 0;
    double work_ms = 0;
    double last_kernel_ms = kNever;
    bool one_op = false;
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
    if (groups_.empty()) {
      RETURN_IF_ERROR(EnumerateGroups());
      group_latency_.assign(groups_.size(), kNaN);
      core_latency_.assign(groups_.size(), by_cores() ? kNaN : 0.0);
    }
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (!std::isnan(group_latency_[i]) && !std::isnan(core_latency_[i])) continue;
      const OpBits<W>& bits = groups_[i];
      const Signature signature = stages_.HashStage(bits);
      if (std::isnan(group_latency_[i])) {
        RETURN_IF_ERROR(LookUpGroup(bits, signature, false, source, &group_latency_[i]));
      }
      if (std::isnan(core_latency_[i])) {
        RETURN_IF_ERROR(
            LookUpGroup(bits, SingleCoreSignature(signature), true, source, &core_latency_[i]));
      }
    }
    return absl::OkStatus();
  }

  // Looks up one group alone (single_core: on one core) into *latency, or
  // queues its signature.
  Status LookUpGroup(const OpBits<W>& bits, Signature signature, bool single_core,
                     LatencySource& source, double* latency) {
    std::optional<double> known = source.Lookup(signature, [&]() {
      stages_.HashStage(bits);
      Stage stage = stages_.CanonicalStage(Strategy::kConcurrent);
      stage.single_core = single_core;
      return stage;
    });
    RETURN_IF_ERROR(source.status());
    if (known) {
      *latency = *known;
    } else {
      waiting_.push_back(signature);
    }
    return absl::OkStatus();
  }

  bool by_cores() const { return options_.cores >= 2; }

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
              const bool sample = num_groups > 1 && !Mergeable(ops, num_groups);
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

  // Per op: its share of a non-merged stage's device floor (stage_floor_)
  // and of a cost to go that may merge it with the other convolutions of its
  // input, up to s of them (togo_floor_; their work counts their FLOPs, or
  // their bytes, whichever all of them together take longer for).
  void ComputeOpFloors() {
    const int n = block_.size();
    has_device_floor_ = true;
    const DeviceFloor& device = options_.device_floor;
    std::vector<OpFloor> shares(n);
    std::vector<bool> merges(n, false);
    for (int v = 0; v < n; ++v) {
      const graph::Node& node = block_.graph().node(block_.node(v));
      const OpFloor alone = ComputeOpFloor(block_.graph(), node, device);
      stage_floor_.push_back({alone.kernels, alone.work_ms()});
      shares[v] = alone;
      const uint64_t key = block_.merge_key(v);
      if (!options_.dp.enable_merge || key == 0) continue;
      int same = 0;
      for (int u = 0; u < n; ++u) same += block_.merge_key(u) == key;
      const int width = std::min(same, options_.dp.bounds.max_groups);
      if (width < 2) continue;
      merges[v] = true;
      shares[v] = ComputeOpFloor(block_.graph(), node, device, width);
    }
    togo_floor_.resize(n);
    std::vector<bool> done(n, false);
    for (int v = 0; v < n; ++v) {
      if (done[v]) continue;
      if (!merges[v]) {
        togo_floor_[v] = stage_floor_[v];
        continue;
      }
      double compute = 0, memory = 0;
      for (int u = v; u < n; ++u) {
        if (!merges[u] || block_.merge_key(u) != block_.merge_key(v)) continue;
        compute += shares[u].compute_ms;
        memory += shares[u].memory_ms;
      }
      for (int u = v; u < n; ++u) {
        if (!merges[u] || block_.merge_key(u) != block_.merge_key(v)) continue;
        togo_floor_[u] = {shares[u].kernels,
                          memory > compute ? shares[u].memory_ms : shares[u].compute_ms};
        done[u] = true;
      }
    }
  }

  // OpShare::last_kernel_ms from the ops measured alone.
  void LastKernelTimes() {
    const DeviceFloor& device = options_.device_floor;
    for (int v = 0; v < block_.size(); ++v) {
      OpShare& alone = stage_floor_[v];
      if (alone.kernels <= 0) {
        alone.last_kernel_ms = togo_floor_[v].last_kernel_ms = kNever;
        continue;
      }
      alone.last_kernel_ms =
          std::max(0.0, single_latency_[v] - device.stage_ms - alone.kernels * device.launch_ms);
      togo_floor_[v].last_kernel_ms =
          togo_floor_[v].kernels < alone.kernels ? 0.0 : alone.last_kernel_ms;
    }
  }

  OpFeatures SumFeatures(const OpBits<W>& ops) const {
    OpFeatures sum;
    ops.ForEach([&](int v) {
      const OpFeatures& op = op_features_[v];
      sum.kernels += op.kernels;
      sum.gflops += op.gflops;
      sum.mbytes += op.mbytes;
      sum.roofline_ms += op.roofline_ms;
    });
    return sum;
  }

  void FitFloor() {
    std::vector<StageFloor::Features> x;
    for (const OpBits<W>& ops : samples_) {
      stages_.HashStage(ops);
      x.push_back(
          StageFloor::StageFeatures(SumFeatures(ops), static_cast<int>(stages_.groups().size())));
    }
    floor_.Fit(x, sample_latency_);
    has_floor_ = floor_.fitted();
  }

  // Every connected set of at most r ops that is convex (no path leaves it
  // and comes back): exactly the groups an ending can have.
  Status EnumerateGroups() {
    const int n = block_.size();
    const int r = options_.dp.bounds.max_group_ops;
    std::vector<OpBits<W>> desc(n), anc(n), adjacent(n);
    for (int i = n - 1; i >= 0; --i) {
      for (int s : block_.succs(i)) {
        desc[i].Set(s);
        desc[i] |= desc[s];
      }
    }
    for (int i = 0; i < n; ++i) {
      for (int p : block_.preds(i)) {
        anc[i].Set(p);
        anc[i] |= anc[p];
        adjacent[i].Set(p);
        adjacent[p].Set(i);
      }
    }
    OpBitsMap<W, char> seen;
    std::vector<OpBits<W>> frontier;
    for (int v = 0; v < n; ++v) {
      OpBits<W> single;
      single.Set(v);
      seen.Insert(single, single.Hash(), 1);
      frontier.push_back(single);
    }
    std::vector<OpBits<W>> next;
    for (int size = 1; !frontier.empty(); ++size) {
      next.clear();
      for (const OpBits<W>& set : frontier) {
        OpBits<W> ancestors, descendants;
        set.ForEach([&](int i) {
          ancestors |= anc[i];
          descendants |= desc[i];
        });
        if ((ancestors & descendants).SubsetOf(set)) {
          groups_.push_back(set);
          if (static_cast<int64_t>(groups_.size()) > options_.max_groups) {
            return Over(StrCat("more than ", options_.max_groups, " groups"));
          }
        }
        if (size == r) continue;
        OpBits<W> around;
        set.ForEach([&](int i) { around |= adjacent[i]; });
        around = around.Minus(set);
        around.ForEach([&](int j) {
          OpBits<W> grown = set;
          grown.Set(j);
          const uint64_t hash = grown.Hash();
          if (seen.Find(grown, hash) != nullptr) return;
          seen.Insert(grown, hash, 1);
          next.push_back(grown);
        });
      }
      frontier.swap(next);
    }
    for (size_t i = 0; i < groups_.size(); ++i) {
      group_index_.Insert(groups_[i], groups_[i].Hash(), static_cast<int32_t>(i));
    }
    stats_.bound_groups = static_cast<int64_t>(groups_.size()) * (by_cores() ? 2 : 1);
    return absl::OkStatus();
  }

  // Op weights for the critical-path bound, the sequential schedule's
  // latency (every op alone: an upper bound), the device floor's tables,
  // then (Begin) the bound DP and the root state.
  void Start() {
    const int n = block_.size();
    weight_.assign(n, std::numeric_limits<double>::infinity());
    work_.assign(n, by_cores() ? std::numeric_limits<double>::infinity() : 0.0);
    single_latency_.assign(n, 0);
    sequential_ms_ = 0;
    for (size_t i = 0; i < groups_.size(); ++i) {
      const int count = groups_[i].Count();
      const double per_op = group_latency_[i] / count;
      const double work_per_op = core_latency_[i] / count / std::max(options_.cores, 1);
      groups_[i].ForEach([&](int v) {
        weight_[v] = std::min(weight_[v], per_op);
        work_[v] = std::min(work_[v], work_per_op);
      });
      if (count == 1) {
        sequential_ms_ += group_latency_[i];
        single_latency_[groups_[i].First()] = group_latency_[i];
      }
    }
    upper_limit_ = Limit(sequential_ms_);
    path_.assign(n, 0);
    depth_.assign(n, 0);
    kernel_depth_.assign(n, 0);
    if (has_device_floor_) {
      // Timed back to back, no run waits for its last kernel's issue.
      if (!options_.device_floor.back_to_back) LastKernelTimes();
      if (options_.device_floor.issue_order != DeviceFloor::IssueOrder::kUnknown &&
          options_.device_floor.issue_overlaps_work && !options_.device_floor.back_to_back) {
        BuildIssueChains();
      }
    }
    PackGroupTerms();
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
    if (!has_bound_cost_) BoundCostToGo();
    phase_ = Phase::kSearch;
    if (n == 0) {
      Finish(-1);
      return;
    }
    Closed root;
    root.ops = OpBits<W>::FirstN(n);
    root.h = CostToGo(root.ops);
    root.sequential = sequential_ms_;
    root.row = WalkRow(root.ops);
    closed_.push_back(root);
    closed_index_.Insert(root.ops, root.ops.Hash(), 0);
    Expand(0);
  }

  // A stage's lower bound: its slowest group alone; with cores (not for one
  // group: that stage is the group, measured), also its groups' one-core
  // latencies over the cores, and, unless it merges into one convolution on
  // every core, its slowest group's one-core latency over the most cores
  // one of k groups gets (the lanes split the P cores evenly: ceil(P / k));
  // with the calibrated floor, unless it merges, also the floor; with the
  // device floor, unless it merges, also its floor (StageFloorMs) and, with
  // a known issue order, its kernels' chains (IssuedChainsFloorMs). The
  // floors are taken only while the bound is below `cutoff`: a caller that
  // drops or ignores an ending at or above it needs no more. `ops`: the
  // ending's ops (its groups together).
  double GroupBound(const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                    double cutoff = kNever) {
    const int found = GroupIds(groups, num_groups, ending_ids_.data());
    return IdsBound(ops, ending_ids_.data(), found, num_groups, cutoff);
  }

  // The indices in groups_ of an ending's groups, into `ids` (room for
  // num_groups): how many were found (every group of an ending was
  // enumerated). Tags the groups with them, for the larger endings that
  // hold them too.
  int GroupIds(EndingGroup<W>* groups, int num_groups, int32_t* ids) {
    int found = 0;
    for (int g = 0; g < num_groups; ++g) {
      if (groups[g].tag < 0) groups[g].tag = GroupIndex(groups[g].ops);
      if (groups[g].tag != kNoGroup) ids[found++] = groups[g].tag;
    }
    return found;
  }

  // GroupBound of the ending of ops `ops` and num_groups groups, of which
  // GroupIds found `found`, ids[0..found); a group not found adds nothing
  // (0 stays a valid bound).
  double IdsBound(const OpBits<W>& ops, const int32_t* ids, int found, int num_groups,
                  double cutoff) {
    // One pass over the groups' packed terms (the bound DP's walk calls
    // this for every ending of every state).
    double bound = 0, kernels = 0, work_ms = 0, last = kNever;
    bool one_op_each = true;  // of the groups found
    for (int g = 0; g < found; ++g) {
      const GroupTerms& group = group_terms_[ids[g]];
      bound = std::max(bound, group.latency);
      kernels += group.kernels;
      work_ms += group.work_ms;
      last = std::min(last, group.last_kernel_ms);
      one_op_each = one_op_each && group.one_op;
    }
    if (num_groups < 2 || !(has_floor_ || has_device_floor_ || by_cores()) || bound >= cutoff) {
      return bound;
    }
    // Only a stage of one-op groups can merge (IsMergeableStage; a group
    // not found leaves it to Mergeable).
    const bool merges = one_op_each && Mergeable(ops, num_groups);
    if (has_floor_ && !merges) {
      bound = std::max(bound, floor_(StageFloor::StageFeatures(SumFeatures(ops), num_groups)));
    }
    if (has_device_floor_ && !merges) {
      bound = std::max(bound, StageFloorMs(options_.device_floor, kernels, work_ms,
                                           last == kNever ? 0.0 : last));
      if (has_issue_order_ && bound < cutoff && found == num_groups) {
        bound = std::max(bound, issue_chains_->FloorMs(ids, found));
      }
    }
    if (by_cores()) {
      double work = 0, slowest_core = 0;
      for (int g = 0; g < found; ++g) {
        work += core_latency_[ids[g]];
        slowest_core = std::max(slowest_core, core_latency_[ids[g]]);
      }
      bound = std::max(bound, work / options_.cores);
      if (!merges) {
        const int lane_cores = (options_.cores + num_groups - 1) / num_groups;
        bound = std::max(bound, slowest_core / lane_cores);
      }
    }
    return bound;
  }

  // Whether every search's groups launch the same kernels (one_op and
  // kernels alike, group by group) on the same device floor, so that
  // LeastBound over their least terms bounds every search's endings.
  static bool SameKernels(std::span<Search* const> searches) {
    const Search& first = *searches[0];
    if (!first.has_device_floor_) return false;
    const DeviceFloor& device = first.options_.device_floor;
    for (const Search* search : searches) {
      const DeviceFloor& other = search->options_.device_floor;
      if (!search->has_device_floor_ || other.stage_ms != device.stage_ms ||
          other.launch_ms != device.launch_ms ||
          other.issue_overlaps_work != device.issue_overlaps_work ||
          other.back_to_back != device.back_to_back ||
          search->group_terms_.size() != first.group_terms_.size()) {
        return false;
      }
      for (size_t i = 0; i < first.group_terms_.size(); ++i) {
        if (search->group_terms_[i].kernels != first.group_terms_[i].kernels ||
            search->group_terms_[i].one_op != first.group_terms_[i].one_op) {
          return false;
        }
      }
    }
    return true;
  }

  // Per group, the least of each of its terms over the searches (of one
  // shape, SameKernels): kernels and one_op are theirs, latency, work and
  // last kernel the least of theirs.
  static std::vector<GroupTerms> LeastTerms(std::span<Search* const> searches) {
    std::vector<GroupTerms> least = searches[0]->group_terms_;
    for (const Search* search : searches) {
      for (size_t i = 0; i < least.size(); ++i) {
        const GroupTerms& terms = search->group_terms_[i];
        least[i].latency = std::min(least[i].latency, terms.latency);
        least[i].work_ms = std::min(least[i].work_ms, terms.work_ms);
        least[i].last_kernel_ms = std::min(least[i].last_kernel_ms, terms.last_kernel_ms);
      }
    }
    return least;
  }

  // At most the bound IdsBound of every search of a shared walk finds for
  // the ending of groups ids[0..found) of num_groups (where it stops at its
  // cutoff instead, it returns that much or more, so a caller that skips an
  // ending where this reaches the cutoff loses nothing), from the least
  // terms of its groups (LeastTerms): the slowest group and, with the
  // device floor, for a stage of two or more groups that cannot merge (not
  // all of one op), StageFloorMs (its kernels are every search's, its work
  // and last kernel at most any one's). Without chains or cores.
  double LeastBound(const std::vector<GroupTerms>& least, const int32_t* ids, int found,
                    int num_groups) const {
    double bound = 0, kernels = 0, work_ms = 0, last = kNever;
    bool one_op_each = true;
    for (int g = 0; g < found; ++g) {
      const GroupTerms& group = least[ids[g]];
      bound = std::max(bound, group.latency);
      kernels += group.kernels;
      work_ms += group.work_ms;
      last = std::min(last, group.last_kernel_ms);
      one_op_each = one_op_each && group.one_op;
    }
    if (num_groups < 2 || !has_device_floor_ || one_op_each) return bound;
    return std::max(
        bound, StageFloorMs(options_.device_floor, kernels, work_ms, last == kNever ? 0.0 : last));
  }

  // group_terms_: each group's latency and, with the device floor, its
  // kernels, work and least last-kernel time (its ops' stage_floor_
  // together: a stage's floor from its groups).
  void PackGroupTerms() {
    group_terms_.assign(groups_.size(), GroupTerms{});
    for (size_t i = 0; i < groups_.size(); ++i) {
      GroupTerms& terms = group_terms_[i];
      terms.latency = group_latency_[i];
      terms.one_op = groups_[i].Count() == 1;
      if (!has_device_floor_) continue;
      groups_[i].ForEach([&](int v) {
        terms.kernels += stage_floor_[v].kernels;
        terms.work_ms += stage_floor_[v].work_ms;
        terms.last_kernel_ms = std::min(terms.last_kernel_ms, stage_floor_[v].last_kernel_ms);
      });
    }
  }

  // The index of a group in groups_, or kNoGroup.
  int32_t GroupIndex(const OpBits<W>& group) {
    const int32_t* index = group_index_.Find(group, group.Hash());
    return index == nullptr ? kNoGroup : *index;
  }

  // Per group (has_issue_order_): its rank in the order CanonicalStage
  // sorts groups by, and the run times of its kernels in its canonical op
  // order (each op's time alone less the stage and its launch), for
  // IssuedChainsFloorMs of the endings (issue_chains_).
  void BuildIssueChains() {
    std::vector<std::pair<uint64_t, graph::NodeId>> keys(groups_.size());
    std::vector<std::vector<double>> runs(groups_.size());
    std::vector<int> order;
    for (size_t i = 0; i < groups_.size(); ++i) {
      order.clear();
      keys[i] = stages_.GroupOrder(groups_[i], &order);
      for (int v : order) {
        if (stage_floor_[v].kernels > 0) runs[i].push_back(stage_floor_[v].last_kernel_ms);
      }
    }
    std::vector<int32_t> sorted(groups_.size());
    for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = static_cast<int32_t>(i);
    std::sort(sorted.begin(), sorted.end(),
              [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    std::vector<int32_t> rank(groups_.size());
    for (size_t r = 0; r < sorted.size(); ++r) rank[sorted[r]] = static_cast<int32_t>(r);
    issue_chains_.emplace(options_.device_floor);
    for (size_t i = 0; i < groups_.size(); ++i) issue_chains_->AddGroup(rank[i], runs[i]);
    has_issue_order_ = true;
  }

  // IsMergeableStage of an ending (its ops, its number of groups): the hot
  // path has not hashed the stage, which BlockStages::IsMergeable needs.
  bool Mergeable(const OpBits<W>& ops, int num_groups) const {
    return options_.dp.enable_merge && IsMergeableStage(block_, ops, num_groups);
  }

  // The open list keeps what can still beat a schedule of latency `ms`
  // (rounding aside).
  static double Limit(double ms) { return ms * (1 + 1e-9) + 1e-12; }

  // What a bound DP walk leaves for A*: its states' rows and drops.
  struct WalkRows {
    OpBitsMap<W, int32_t> rows;
    std::optional<StateDrops<W>> drops;
    size_t memory_bytes() const {
      return rows.memory_bytes() + (drops ? drops->memory_bytes() : 0);
    }
  };

  // The row of state `ops` in walk_rows_, or -1 (no walk, or no such state).
  int32_t WalkRow(const OpBits<W>& ops) const {
    if (walk_rows_ == nullptr || ops.Empty()) return -1;
    const int32_t* row = walk_rows_->rows.Find(ops, ops.Hash());
    return row != nullptr ? *row : -1;
  }

  // An ending of the bound DP's walk whose child's cost is still to be read.
  struct Pending {
    OpBits<W> ops;
    int num_groups, found;
    int32_t row;    // the child's row of costs, or -1 (empty)
    double shared;  // the walk's: a bound under every block's
  };

  // Lists the endings of `state` (node `root` of `drops`) for the bound DP:
  // each one's groups (by index: into ids, max_groups per slot) and child's
  // row go into a slot of `pending`, listed(slot) is called, and
  // settle(slot) kInFlight endings later (the table of costs is far larger
  // than the caches), and for the last ones at the end. Returns the number
  // of endings.
  template <typename Settle, typename Listed>
  uint64_t ListEndings(const OpBits<W>& state, const StateDrops<W>& drops,
                       typename StateDrops<W>::Node root, InFlight<Pending>& pending,
                       std::vector<int32_t>& ids, Settle&& settle, Listed&& listed) {
    const int s = options_.dp.bounds.max_groups;
    auto list = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                    typename StateDrops<W>::Node child) {
      const int slot = pending.Next(settle);
      Pending& ending = pending[slot];
      ending.ops = ops;
      ending.row = child.row;
      ending.num_groups = num_groups;
      ending.found = GroupIds(groups, num_groups, &ids[slot * s]);
      listed(slot);
    };
    enumerator_.EnumerateFollowing(state, drops, root, list);
    return pending.Drain(settle);
  }

  // The bound DP of this search alone (Walk).
  void BoundCostToGo() {
    Search* self = this;
    Walk({&self, 1}, /*alone=*/true);
  }

  // The table of BoundedSearchOptions::prefix_bounds where it serves this
  // block (of this width, of fewer ops), else null.
  const OpBitsMap<W, double>* PrefixCosts() const {
    const auto* table = dynamic_cast<const BoundTableOf*>(options_.prefix_bounds.get());
    return table != nullptr && table->size < block_.size() ? &table->costs : nullptr;
  }

  // h(S): the bound DP's (which holds the terms below too), else the
  // largest of the heaviest dependency path inside `ops` under weight_, with
  // cores the ops' work over the cores, and the device floor's: the ops'
  // kernels and work (togo_floor_) and a stage's floor for each stage they
  // need at least (a stage holds at most r*s ops and, its groups being
  // independent, at most r ops of a path). Each term drops by no more than
  // one stage's bound along an edge, so the largest is consistent too.
  double CostToGo(const OpBits<W>& ops) {
    if (has_bound_cost_) {
      const int32_t row = WalkRow(ops);  // every non-empty state has one
      if (row >= 0) return row_cost_[row];
    }
    return PathCostToGo(ops);
  }

  // CostToGo without the bound DP.
  double PathCostToGo(const OpBits<W>& ops) {
    double heaviest = 0, work = 0;
    ops.ForEach([&](int v) {
      work += work_[v];
      double before = 0;
      for (int p : block_.preds(v)) {
        if (ops.Test(p)) before = std::max(before, path_[p]);
      }
      path_[v] = before + weight_[v];
      heaviest = std::max(heaviest, path_[v]);
    });
    const double floor = has_device_floor_ ? FloorCostToGo(ops) : 0.0;
    return std::max({heaviest, work, floor});
  }

  // The device floor's cost to go: the ops' kernels and work (togo_floor_),
  // a stage's floor for each stage they need at least (a stage holds at
  // most r*s ops and, its groups being independent, at most r ops of a
  // path), and for each stage that must hold one of their kernels (counted
  // the same way over the ops that launch one) the least time a last kernel
  // of theirs runs once issued; where issue overlaps work, also their work
  // after one launch for each such stage (StageFloorMs).
  // Along an edge each term drops by no more than that stage's floor.
  double FloorCostToGo(const OpBits<W>& ops) {
    if (ops.Empty()) return 0;
    int deepest = 0, deepest_kernels = 0, launching = 0;
    double kernels = 0, work = 0, last = kNever;
    ops.ForEach([&](int v) {
      int depth = 0, kernel_depth = 0;
      for (int p : block_.preds(v)) {
        if (ops.Test(p)) {
          depth = std::max(depth, depth_[p]);
          kernel_depth = std::max(kernel_depth, kernel_depth_[p]);
        }
      }
      const OpShare& op = togo_floor_[v];
      const bool launches = stage_floor_[v].kernels > 0;
      depth_[v] = depth + 1;
      kernel_depth_[v] = kernel_depth + (launches ? 1 : 0);
      deepest = std::max(deepest, depth_[v]);
      deepest_kernels = std::max(deepest_kernels, kernel_depth_[v]);
      launching += launches ? 1 : 0;
      kernels += op.kernels;
      work += op.work_ms;
      last = std::min(last, op.last_kernel_ms);
    });
    const int r = options_.dp.bounds.max_group_ops;
    const int per_stage = r * options_.dp.bounds.max_groups;
    auto stages_for = [&](int depth, int count) {
      return std::max((depth + r - 1) / r, (count + per_stage - 1) / per_stage);
    };
    const int stages = stages_for(deepest, ops.Count());
    const int kernel_stages = stages_for(deepest_kernels, launching);
    const DeviceFloor& device = options_.device_floor;
    const double issue =
        StageFloorMs(device, kernels, work, last == kNever ? 0.0 : kernel_stages * last) +
        (stages - 1) * device.stage_ms;
    if (!device.issue_overlaps_work) return issue;
    // Each stage that holds a kernel does its work after its first launch
    // (timed back to back, that launch overlaps the run before).
    const double first_launches = device.back_to_back ? 0.0 : kernel_stages * device.launch_ms;
    return std::max(issue, stages * device.stage_ms + first_launches + work);
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
      int32_t row;  // the child's in walk_rows_ (-1: none, or empty)
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
        h = row_cost_[ending.row];
      } else if (!ending.child.Empty()) {
        h = CostToGo(ending.child);  // (with a walk, a state's endings go by_row)
      }
      const bool first = from == 0;
      const double slice =
          first && whole_keys_.size() == kWholeRanks ? Limit(whole_keys_.front()) : slice_limit;
      const double to_limit = upper_limit_ - parent.g - h;
      const double to_slice = slice - parent.g - h;
      const double bound = IdsBound(ending.ops, &expand_ids_[static_cast<size_t>(slot) * s],
                                    ending.found, ending.num_groups, std::min(to_limit, to_slice));
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
      ending.found = GroupIds(groups, num_groups, &expand_ids_[static_cast<size_t>(slot) * s]);
      return ending;
    };
    // With the walk's rows its drops lead each ending to its child's row (no
    // hashing); without, the child is hashed into the table of costs to go.
    auto by_row = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                      typename StateDrops<W>::Node child) {
      Pending& ending = list(ops, groups, num_groups);
      ending.child = OpBits<W>();
      ending.row = child.row;
      if (child.row >= 0) __builtin_prefetch(&row_cost_[child.row], 0, 3);
    };
    auto by_hash = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
      Pending& ending = list(ops, groups, num_groups);
      ending.child = parent.ops.Minus(ops);
      ending.row = -1;
    };
    if (parent.row >= 0) {
      const StateDrops<W>& drops = *walk_rows_->drops;
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
  // some of `stage`'s groups (of all but one where it has many) (a lower bound of its concurrent latency
  // when adding a group never makes a stage faster), or 0. A mergeable stage
  // gets 0: the assumption bounds a merged conv by its slowest conv only, so
  // its cost (the cheaper strategy) keeps the group bound.
  double SubStageBound(const OpBits<W>& stage) {
    stages_.HashStage(stage);
    const std::vector<OpBits<W>>& groups = stages_.groups();
    if (groups.size() < 3) return 0;  // pairs: their groups' bound already
    if (options_.dp.enable_merge && stages_.IsMergeable(stage)) return 0;
    double bound = 0;
    const int k = static_cast<int>(groups.size());
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
    entry.stage.ForEach([&](int v) { state.sequential -= single_latency_[v]; });
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
    state.row = WalkRow(child);
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
        add(op, false, single_latency_[v]);
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
                         closed_index_.memory_bytes() + group_index_.memory_bytes() +
                         stages_.memory_bytes() + groups_.capacity() * sizeof(OpBits<W>) +
                         row_cost_.capacity() * sizeof(double) +
                         (walk_rows_ != nullptr ? walk_rows_->memory_bytes() : 0);
    return static_cast<int64_t>(bytes) + slice_cache_bytes_ + walk_bytes_;
  }

  const BlockGraph block_;
  const BoundedSearchOptions options_;
  EndingEnumerator<W> enumerator_;
  BlockStages<W> stages_;
  Phase phase_ = Phase::kGroups;
  Status status_;
  std::vector<Signature> waiting_;
  // The groups, their latencies (NaN while unknown) and index by ops.
  std::vector<OpBits<W>> groups_;
  std::vector<double> group_latency_;
  std::vector<double> core_latency_;  // on one core (0 without cores)
  OpBitsMap<W, int32_t> group_index_;
  // Per op: the critical-path weight, the work over the cores (0 without
  // cores), scratch of CostToGo, its latency alone.
  std::vector<double> weight_, work_, path_, single_latency_;
  // Scratch of FloorCostToGo: ops, and ops that launch a kernel, on the
  // longest path.
  std::vector<int> depth_, kernel_depth_;
  // The device floor (BoundedSearchOptions::device_floor), per op: in a
  // stage that does not merge, and in the cost to go.
  struct OpShare {
    double kernels = 0;
    double work_ms = 0;
    // Run time once issued (its latency alone less the stage and its
    // launches) where it may be a stage's last kernel; infinity for an op
    // that launches none, 0 for a convolution that may merge (the merged
    // kernel is another). Known once the groups are (Start).
    double last_kernel_ms = 0;
  };
  std::vector<OpShare> stage_floor_, togo_floor_;
  std::vector<GroupTerms> group_terms_;
  bool has_device_floor_ = false;
  std::vector<int32_t> ending_ids_;  // scratch of GroupBound: an ending's groups
  // With a known issue order (BuildIssueChains): the groups' ranks and kernel
  // run times.
  std::optional<IssueChains> issue_chains_;
  bool has_issue_order_ = false;
  // Once the bound DP ran (has_bound_cost_): the walk's states and drops
  // (shared by the searches of one walk) and this search's cost to go by
  // row, every non-empty state having one. A*'s expansions follow an
  // ending's child through the drops instead of hashing it (WalkRow).
  bool has_bound_cost_ = false;
  std::shared_ptr<const WalkRows> walk_rows_;
  std::vector<double> row_cost_;
  // The same costs by state, made only when a later block asks for them
  // (bound_table(), its prefix_bounds); it outlives the search.
  struct BoundTableOf final : BoundTable {
    explicit BoundTableOf(int size) : size(size) {}
    int ops() const override { return size; }
    const int size;
    OpBitsMap<W, double> costs;
  };
  std::shared_ptr<BoundTableOf> bound_table_;
  // The calibrated floor (floor_samples): per-op features, the sampled
  // stages and their latencies (NaN while unknown), the fitted envelope.
  std::vector<OpFeatures> op_features_;
  std::vector<OpBits<W>> samples_;
  std::vector<double> sample_latency_;
  StageFloor floor_;
  bool has_floor_ = false;
  double sequential_ms_ = 0, upper_limit_ = 0;
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
  int64_t walk_bytes_ = 0;  // the tables of a running Walk (this search its first)
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
