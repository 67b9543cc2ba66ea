// BlockBounds: the lower bounds of the bounded search (bounded_block_search.h)
// for one block: its groups and their measured latencies, the bound of an
// ending (a candidate last stage) from its groups, and the critical-path,
// work and device-floor bounds of a set of ops' cost to go.
//
// Why its own room: the bounds are what the search's exactness rests on
// (the ASSUMPTION in bounded_block_search.h), and the cost-to-go DP's walk
// (cost_to_go_dp.h) and A*'s expansions both take them for every ending they
// list. The bound of an ending is one pass over its groups' packed terms
// (GroupTerms): the walk takes it hundreds of millions of times for
// NASNet-A, so everything here is a template inlined into its callers.
//
// Life: construct (the device floor's per-op shares), MeasureGroups until
// nothing is waiting, then Prepare; the bounds are valid after Prepare.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_BLOCK_BOUNDS_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_BLOCK_BOUNDS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/status.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/bounded/bounded_block_search.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/bounded/issued_chains_floor.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/stages/block_stages.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace iosfarm::scheduler::ios {

// `ms` raised by the rounding the bounded search tolerates: a cost at or
// under it is not above `ms` (the open list's limits, the cost-to-go DP's
// cutoffs, AuditBounds' comparisons).
inline double RoundingLimit(double ms) { return ms * (1 + 1e-9) + 1e-12; }

template <int W>
class BlockBounds {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  // GroupIds' tag of a set that is no group of the block.
  static constexpr int32_t kNoGroup = std::numeric_limits<int32_t>::max();

  // Per group, packed for IdsBound (Prepare): its latency and, with the
  // device floor, its floor terms (else no kernels, no work, no last
  // kernel).
  struct GroupTerms {
    double latency = 0;
    double kernels = 0;
    double work_ms = 0;
    double last_kernel_ms = kNever;
    bool one_op = false;
  };

  // `block` and `options` must outlive it (the search's own copies).
  BlockBounds(const BlockGraph& block, const BoundedSearchOptions& options)
      : block_(block), options_(options) {
    if (options_.device_floor.bounds_anything()) ComputeOpFloors();
  }
  BlockBounds(const BlockBounds&) = delete;
  BlockBounds& operator=(const BlockBounds&) = delete;

  // Every connected set of at most r ops that is convex (no path leaves it
  // and comes back): exactly the groups an ending can have. False (and
  // partly enumerated) past options.max_groups.
  bool EnumerateGroups() {
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
          if (static_cast<int64_t>(groups_.size()) > options_.max_groups) return false;
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
    group_latency_.assign(groups_.size(), kNaN);
    core_latency_.assign(groups_.size(), by_cores() ? kNaN : 0.0);
    return true;
  }

  // Looks up the latencies of the groups (EnumerateGroups) not known yet,
  // each alone and, with cores, on one core; queues the unknown ones'
  // signatures in *waiting.
  Status LookUpGroups(LatencySource& source, BlockStages<W>& stages,
                      std::vector<Signature>* waiting) {
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (!std::isnan(group_latency_[i]) && !std::isnan(core_latency_[i])) continue;
      const OpBits<W>& bits = groups_[i];
      const Signature signature = stages.HashStage(bits);
      if (std::isnan(group_latency_[i])) {
        RETURN_IF_ERROR(
            LookUpGroup(bits, signature, false, source, stages, waiting, &group_latency_[i]));
      }
      if (std::isnan(core_latency_[i])) {
        RETURN_IF_ERROR(LookUpGroup(bits, SingleCoreSignature(signature), true, source, stages,
                                    waiting, &core_latency_[i]));
      }
    }
    return absl::OkStatus();
  }

  // Once every group's latency is known: op weights for the critical-path
  // bound, the sequential schedule's latency (every op alone: an upper
  // bound), the device floor's tables and the groups' packed terms.
  void Prepare(BlockStages<W>& stages) {
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
    path_.assign(n, 0);
    depth_.assign(n, 0);
    kernel_depth_.assign(n, 0);
    if (has_device_floor_) {
      // Timed back to back, no run waits for its last kernel's issue.
      if (!options_.device_floor.back_to_back) LastKernelTimes();
      if (options_.device_floor.issue_order != DeviceFloor::IssueOrder::kUnknown &&
          options_.device_floor.issue_overlaps_work && !options_.device_floor.back_to_back) {
        BuildIssuedChainsFloor(stages);
      }
    }
    PackGroupTerms();
  }

  bool by_cores() const { return options_.cores >= 2; }
  const std::vector<OpBits<W>>& groups() const { return groups_; }
  // Of op v alone (Prepare).
  double single_latency(int v) const { return single_latency_[v]; }
  // Every op alone, one after another (Prepare).
  double sequential_ms() const { return sequential_ms_; }

  // The indices in groups() of an ending's groups, into `ids` (room for
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

  // A stage's lower bound: its slowest group alone; with cores (not for one
  // group: that stage is the group, measured), also its groups' one-core
  // latencies over the cores, and, unless it merges into one convolution on
  // every core, its slowest group's one-core latency over the most cores
  // one of k groups gets (the lanes split the P cores evenly: ceil(P / k));
  // with the
  // device floor, unless it merges, also its floor (StageFloorMs) and, with
  // a known issue order, its kernels' chains (IssuedChainsFloorMs). The
  // floors are taken only while the bound is below `cutoff`: a caller that
  // drops or ignores an ending at or above it needs no more. `ops`: the
  // ending's ops (its groups together), num_groups its groups, of which
  // GroupIds found `found`, ids[0..found); a group not found adds nothing
  // (0 stays a valid bound).
  double IdsBound(const OpBits<W>& ops, const int32_t* ids, int found, int num_groups,
                  double cutoff) {
    double bound = 0, kernels = 0, work_ms = 0, last = kNever;
    bool one_op_each = true;  // of the groups found
    SumTerms(group_terms_.data(), ids, found, bound, kernels, work_ms, last, one_op_each);
    if (num_groups < 2 || !(has_device_floor_ || by_cores()) || bound >= cutoff) {
      return bound;
    }
    // Only a stage of one-op groups can merge (IsMergeableStage; a group
    // not found leaves it to Mergeable).
    const bool merges = one_op_each && Mergeable(ops, num_groups);
    if (has_device_floor_ && !merges) {
      bound = std::max(bound, StageFloorMs(options_.device_floor, kernels, work_ms,
                                           last == kNever ? 0.0 : last, num_groups));
      if (has_issue_order_ && bound < cutoff && found == num_groups) {
        bound = std::max(bound, issued_chains_floor_->FloorMs(ids, found));
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

  // Whether the groups of every one of `bounds` launch the same kernels
  // (one_op and kernels alike, group by group) on the same device floor, so
  // that LeastBound over their least terms bounds every block's endings.
  static bool SameKernels(std::span<BlockBounds* const> bounds) {
    const BlockBounds& first = *bounds[0];
    if (!first.has_device_floor_) return false;
    const DeviceFloor& device = first.options_.device_floor;
    for (const BlockBounds* other : bounds) {
      const DeviceFloor& floor = other->options_.device_floor;
      if (!other->has_device_floor_ || floor.stage_ms != device.stage_ms ||
          floor.launch_ms != device.launch_ms ||
          floor.issue_overlaps_work != device.issue_overlaps_work ||
          floor.back_to_back != device.back_to_back || floor.contention != device.contention ||
          other->group_terms_.size() != first.group_terms_.size()) {
        return false;
      }
      for (size_t i = 0; i < first.group_terms_.size(); ++i) {
        if (other->group_terms_[i].kernels != first.group_terms_[i].kernels ||
            other->group_terms_[i].one_op != first.group_terms_[i].one_op) {
          return false;
        }
      }
    }
    return true;
  }

  // Per group, the least of each of its terms over `bounds` (blocks of one
  // shape, SameKernels): kernels and one_op are theirs, latency, work and
  // last kernel the least of theirs.
  static std::vector<GroupTerms> LeastTerms(std::span<BlockBounds* const> bounds) {
    std::vector<GroupTerms> least = bounds[0]->group_terms_;
    for (const BlockBounds* other : bounds) {
      for (size_t i = 0; i < least.size(); ++i) {
        const GroupTerms& terms = other->group_terms_[i];
        least[i].latency = std::min(least[i].latency, terms.latency);
        least[i].work_ms = std::min(least[i].work_ms, terms.work_ms);
        least[i].last_kernel_ms = std::min(least[i].last_kernel_ms, terms.last_kernel_ms);
      }
    }
    return least;
  }

  // At most the bound IdsBound of every block of a shared walk finds for
  // the ending of groups ids[0..found) of num_groups (where it stops at its
  // cutoff instead, it returns that much or more, so a caller that skips an
  // ending where this reaches the cutoff loses nothing), from the least
  // terms of its groups (LeastTerms): the slowest group and, with the
  // device floor, for a stage of two or more groups that cannot merge (not
  // all of one op), StageFloorMs (its kernels are every block's, its work
  // and last kernel at most any one's). Without chains or cores.
  double LeastBound(const std::vector<GroupTerms>& least, const int32_t* ids, int found,
                    int num_groups) const {
    double bound = 0, kernels = 0, work_ms = 0, last = kNever;
    bool one_op_each = true;
    SumTerms(least.data(), ids, found, bound, kernels, work_ms, last, one_op_each);
    if (num_groups < 2 || !has_device_floor_ || one_op_each) return bound;
    return std::max(bound, StageFloorMs(options_.device_floor, kernels, work_ms,
                                        last == kNever ? 0.0 : last, num_groups));
  }

  // IsMergeableStage of an ending (its ops, its number of groups): the hot
  // path has not hashed the stage, which BlockStages::IsMergeable needs.
  bool Mergeable(const OpBits<W>& ops, int num_groups) const {
    return options_.dp.enable_merge && IsMergeableStage(block_, ops, num_groups);
  }

  // The cost to go of `ops` without the cost-to-go DP: the largest of the
  // heaviest dependency path inside `ops` under the ops' weights (each the
  // least per-op latency of a group that holds it), with cores the ops'
  // work over the cores, and the device floor's (FloorCostToGo). Along an
  // edge each term drops by no more than the stage's latency under the
  // assumption, so the largest is consistent too: by no more than its
  // bound (IdsBound) for a concurrent stage, and for a merge by no more
  // than the merged kernel's share of the floor, which can be above a
  // merge's bound (its slowest branch; bound_audit.h).
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

  int64_t memory_bytes() const {
    return static_cast<int64_t>(group_index_.memory_bytes() +
                                groups_.capacity() * sizeof(OpBits<W>));
  }

 private:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // The device floor (BoundedSearchOptions::device_floor), per op: in a
  // stage that does not merge, and in the cost to go.
  struct OpShare {
    double kernels = 0;
    double work_ms = 0;
    // Run time once issued (its latency alone less the stage and its
    // launches) where it may be a stage's last kernel; infinity for an op
    // that launches none, 0 for a convolution that may merge (the merged
    // kernel is another). Known once the groups are (Prepare).
    double last_kernel_ms = 0;
  };

  // Adds the terms of an ending's groups ids[0..found) of `table` into the
  // caller's: the slowest group's latency (max), their kernels and work
  // (sums), the least last kernel (min), and whether each group is one op
  // (and). One pass; into the caller's variables so that, inlined, the loop
  // is the one the cost-to-go DP's walk ran before it was shared (a struct
  // returned cost 0.9 % more instructions on randwire).
  [[gnu::always_inline]] static void SumTerms(const GroupTerms* table, const int32_t* ids,
                                              int found, double& slowest, double& kernels,
                                              double& work_ms, double& last_kernel_ms,
                                              bool& one_op_each) {
    for (int g = 0; g < found; ++g) {
      const GroupTerms& group = table[ids[g]];
      slowest = std::max(slowest, group.latency);
      kernels += group.kernels;
      work_ms += group.work_ms;
      last_kernel_ms = std::min(last_kernel_ms, group.last_kernel_ms);
      one_op_each = one_op_each && group.one_op;
    }
  }

  // Looks up one group alone (single_core: on one core) into *latency, or
  // queues its signature.
  Status LookUpGroup(const OpBits<W>& bits, Signature signature, bool single_core,
                     LatencySource& source, BlockStages<W>& stages, std::vector<Signature>* waiting,
                     double* latency) {
    std::optional<double> known = source.Lookup(signature, [&]() {
      stages.HashStage(bits);
      Stage stage = stages.CanonicalStage(Strategy::kConcurrent);
      stage.single_core = single_core;
      return stage;
    });
    RETURN_IF_ERROR(source.status());
    if (known) {
      *latency = *known;
    } else {
      waiting->push_back(signature);
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
  // IssuedChainsFloorMs of the endings (issued_chains_floor_).
  void BuildIssuedChainsFloor(BlockStages<W>& stages) {
    std::vector<std::pair<uint64_t, graph::NodeId>> keys(groups_.size());
    std::vector<std::vector<double>> runs(groups_.size());
    std::vector<int> order;
    for (size_t i = 0; i < groups_.size(); ++i) {
      order.clear();
      keys[i] = stages.GroupOrder(groups_[i], &order);
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
    issued_chains_floor_.emplace(options_.device_floor);
    for (size_t i = 0; i < groups_.size(); ++i) issued_chains_floor_->AddGroup(rank[i], runs[i]);
    has_issue_order_ = true;
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

  const BlockGraph& block_;
  const BoundedSearchOptions& options_;
  // The groups, their latencies (NaN while unknown) and index by ops.
  std::vector<OpBits<W>> groups_;
  std::vector<double> group_latency_;
  std::vector<double> core_latency_;  // on one core (0 without cores)
  OpBitsMap<W, int32_t> group_index_;
  // Per op: the critical-path weight, the work over the cores (0 without
  // cores), scratch of PathCostToGo, its latency alone.
  std::vector<double> weight_, work_, path_, single_latency_;
  double sequential_ms_ = 0;
  // Scratch of FloorCostToGo: ops, and ops that launch a kernel, on the
  // longest path.
  std::vector<int> depth_, kernel_depth_;
  std::vector<OpShare> stage_floor_, togo_floor_;
  std::vector<GroupTerms> group_terms_;
  bool has_device_floor_ = false;
  // With a known issue order (BuildIssuedChainsFloor): the groups' ranks and kernel
  // run times.
  std::optional<IssuedChainsFloor> issued_chains_floor_;
  bool has_issue_order_ = false;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_BLOCK_BOUNDS_H_
