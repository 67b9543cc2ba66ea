#include "scheduler/ios/testing/testing_util.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <unordered_map>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios::testing {

using graph::GraphBuilder;
using graph::ValueId;

graph::Graph WideGraph(int branches, int depth) {
  GraphBuilder b(StrCat("wide_", branches, "x", depth));
  const ValueId x = b.Input("x", {1, 4, 4, 4});
  std::vector<ValueId> ends;
  for (int i = 0; i < branches; ++i) {
    ValueId v = x;
    for (int d = 0; d < depth; ++d) v = b.Relu(v, StrCat("relu", i, "_", d));
    ends.push_back(v);
  }
  b.Output(b.Concat(ends, 1, "concat"));
  return std::move(b).Finish().value();
}

namespace {

// RandomDag's ops, reading `input` (8 channels), named prefix + "op<i>";
// returns the tensors they make that none of them reads.
std::vector<ValueId> AddRandomOps(GraphBuilder& b, ValueId input, uint64_t seed, int num_ops,
                                  const std::string& prefix) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::vector<ValueId> tensors = {input};
  std::vector<ValueId> conv_inputs;  // tensors some conv already reads
  std::vector<int> consumers(1, 0);
  auto channels = [&](ValueId v) { return b.shape(v)[1]; };
  auto pick = [&]() {
    // Mostly recent tensors, so the graph has some depth.
    const int n = static_cast<int>(tensors.size());
    const int back = std::min(n, 4);
    return uniform(3) == 0 ? tensors[uniform(n)] : tensors[n - 1 - uniform(back)];
  };
  for (int i = 0; i < num_ops; ++i) {
    const std::string name = StrCat(prefix, "op", i);
    const int kind = uniform(100);
    ValueId out;
    if (kind < 45) {
      graph::ConvSpec spec;
      spec.out_channels = uniform(2) == 0 ? 4 : 8;
      switch (uniform(4)) {
        case 0:
          spec.kernel = {1, 1};
          break;
        case 1:
          spec.kernel = {3, 3};
          spec.padding = {1, 1};
          break;
        case 2:
          spec.kernel = {1, 3};
          spec.padding = {0, 1};
          break;
        default:
          spec.kernel = {3, 1};
          spec.padding = {1, 0};
          break;
      }
      spec.activation = uniform(4) == 0 ? graph::Activation::kNone : graph::Activation::kRelu;
      const ValueId in = !conv_inputs.empty() && uniform(2) == 0
                             ? conv_inputs[uniform(static_cast<int>(conv_inputs.size()))]
                             : pick();
      conv_inputs.push_back(in);
      out = b.Conv(in, spec, name);
    } else if (kind < 60) {
      out = b.Relu(pick(), name);
    } else if (kind < 70) {
      out = b.MaxPool(pick(), {3, 3}, {1, 1}, {1, 1, 1, 1}, name);
    } else if (kind < 85) {
      const ValueId a = pick();
      std::vector<ValueId> same;
      for (ValueId t : tensors) {
        if (t != a && channels(t) == channels(a)) same.push_back(t);
      }
      out = same.empty() ? b.Relu(a, name)
                         : b.Add(a, same[uniform(static_cast<int>(same.size()))], name);
    } else {
      const ValueId a = pick();
      const ValueId c = pick();
      out = channels(a) + channels(c) > 16 || a == c ? b.Relu(a, name)
                                                     : b.Concat({a, c}, 1, name);
    }
    tensors.push_back(out);
  }
  graph::Graph partial = b.graph();
  const auto readers = partial.Consumers();
  std::vector<ValueId> unread;
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (readers[tensors[i]].empty()) unread.push_back(tensors[i]);
  }
  return unread;
}

}  // namespace

graph::Graph RandomDag(uint64_t seed, int num_ops, int spatial) {
  GraphBuilder b(StrCat("random_", seed));
  const ValueId x = b.Input("x", {1, 8, spatial, spatial});
  // Every tensor nobody reads is a graph output.
  for (ValueId t : AddRandomOps(b, x, seed, num_ops, "")) b.Output(t);
  return *std::move(b).Finish();
}

namespace {

// RepeatedCells, with a tail op after the last cell when `tail`.
graph::Graph Cells(uint64_t seed, int cells, int ops_per_cell, bool tail) {
  GraphBuilder b(StrCat("cells_", seed));
  ValueId t = b.Input("x", {1, 8, 32, 32});
  ValueId in = t;
  for (int c = 0; c < cells; ++c) {
    const std::string prefix = StrCat("cell", c, "_");
    if (c > 0 && c % 2 == 0) t = b.MaxPool(t, {2, 2}, {2, 2}, {0, 0, 0, 0}, prefix + "pool");
    graph::ConvSpec to8;
    to8.out_channels = 8;
    to8.kernel = {1, 1};
    in = b.Conv(t, to8, prefix + "in");
    const std::vector<ValueId> unread = AddRandomOps(b, in, seed, ops_per_cell, prefix);
    t = unread.size() == 1 ? unread[0] : b.Concat(unread, 1, prefix + "out");
  }
  if (tail) t = b.Concat({t, in}, 1, "tail");
  b.Output(t);
  return *std::move(b).Finish();
}

}  // namespace

graph::Graph RepeatedCells(uint64_t seed, int cells, int ops_per_cell) {
  return Cells(seed, cells, ops_per_cell, /*tail=*/false);
}

graph::Graph RepeatedCellsWithTail(uint64_t seed, int cells, int ops_per_cell) {
  return Cells(seed, cells, ops_per_cell, /*tail=*/true);
}

namespace {

// A pseudo-random value in [0, 1) (steps of 1e-4) of a signature, a seed
// and a salt: the oracles' stand-in for a measurement.
double Unit(uint64_t seed, Signature signature, uint64_t salt) {
  return static_cast<double>(Mix64(signature ^ Mix64(seed ^ salt)) % 10000) / 10000.0;
}

}  // namespace

StageLatencyFn RandomOracle(const graph::Graph& graph, uint64_t seed) {
  return [&graph, seed](const Stage& stage) -> StatusOr<double> {
    ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, stage));
    return 0.1 + static_cast<double>(Mix64(signature ^ Mix64(seed)) % 10000) / 1000.0;
  };
}

StageLatencyFn GroupMonotoneOracle(const graph::Graph& graph, uint64_t seed) {
  auto unit = [seed](Signature signature, uint64_t salt) { return Unit(seed, signature, salt); };
  return [&graph, unit](const Stage& stage) -> StatusOr<double> {
    double slowest = 0, extra = 0;
    for (const auto& group : stage.groups) {
      Stage alone;
      alone.groups = {group};
      ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, alone));
      slowest = std::max(slowest, 0.1 + 10 * unit(signature, 0));
      extra += 2 * unit(signature, 1);
    }
    if (stage.strategy == Strategy::kMerge) {
      ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, stage));
      return slowest + 3 * unit(signature, 2);
    }
    return stage.groups.size() > 1 ? slowest + extra : slowest;
  };
}

StageLatencyFn AnalyticMergeKeepingOracle(const graph::Graph& graph,
                                          const AnalyticDeviceModel& model) {
  return [&graph,
          analytic = MakeAnalyticOracle(graph, model)](const Stage& stage) -> StatusOr<double> {
    ASSIGN_OR_RETURN(double latency, analytic(stage));
    if (stage.strategy != Strategy::kMerge) return latency;
    for (const auto& group : stage.groups) {
      ASSIGN_OR_RETURN(double alone, analytic(ConcurrentStage({group})));
      latency = std::max(latency, alone);
    }
    return latency;
  };
}

StatusOr<BoundAudit> CheckSweepEndingsBound(
    const BoundedSearchOptions& options,
    const std::function<StageLatencyFn(const RandomBlockCase&)>& oracle_of) {
  BoundAudit sum;
  Status status;
  ForEachRandomBlockCase([&](const RandomBlockCase& c) {
    if (!status.ok()) return;
    BoundedSearchOptions of_case = options;
    of_case.dp.bounds = c.options.bounds;
    of_case.dp.enable_merge = c.options.enable_merge;
    StatusOr<BoundAudit> check = AuditBounds(*c.block, of_case, IgnoringSignature(oracle_of(c)));
    if (!check.ok()) {
      status = check.status();
      return;
    }
    sum.Add(*check, c.Describe());
  });
  RETURN_IF_ERROR(status);
  return sum;
}

StageLatencyFn CoresOracle(const graph::Graph& graph, uint64_t seed, int cores) {
  auto unit = [seed](Signature signature, uint64_t salt) { return Unit(seed, signature, salt); };
  const double p = cores;
  return [&graph, unit, p](const Stage& stage) -> StatusOr<double> {
    double slowest = 0, work = 0, slowest_core = 0, extra = 0;
    for (const auto& group : stage.groups) {
      Stage alone;
      alone.groups = {group};
      ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, alone));
      const double w = 0.1 + 10 * unit(signature, 0);
      slowest = std::max(slowest, w * (1 / p + (1 - 1 / p) * unit(signature, 3)));
      work += w;
      slowest_core = std::max(slowest_core, w);
      extra += 2 * unit(signature, 1);
    }
    if (stage.single_core) return work;
    const double floor = std::max(slowest, work / p);
    if (stage.strategy == Strategy::kMerge) {
      ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, stage));
      return floor + 3 * unit(signature, 2);
    }
    if (stage.groups.size() == 1) return slowest;
    // Each of k groups gets at most ceil(P / k) cores.
    const double k = static_cast<double>(stage.groups.size());
    return std::max(floor, slowest_core / std::ceil(p / k)) + extra;
  };
}

std::optional<double> FnSource::Lookup(Signature signature, absl::FunctionRef<Stage()> stage) {
  auto it = memo_.find(signature);
  if (it != memo_.end()) return it->second;
  StatusOr<double> latency = fn_(stage());
  if (!latency.ok()) {
    status_ = latency.status();
    return std::nullopt;
  }
  memo_[signature] = *latency;
  ++measured_;
  return *latency;
}

std::string RandomBlockCase::Describe() const {
  return StrCat("seed ", seed, " n ", n, " r ", options.bounds.max_group_ops, " s ",
                options.bounds.max_groups, " merge ", options.enable_merge);
}

void ForEachRandomBlockCase(const std::function<void(const RandomBlockCase&)>& fn) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const int n = 2 + static_cast<int>(seed % 11);
    const graph::Graph graph = RandomDag(seed * 7919, n);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    std::vector<std::pair<int, int>> bounds = {{1, 1}, {1, 3}, {2, 2}, {3, 8}, {n, n}};
    if (seed % 3 != 0) bounds.resize(seed % 2 == 0 ? 5 : 3);
    for (auto [r, s] : bounds) {
      for (bool merge : {true, false}) {
        if (!merge && r != 3) continue;
        RandomBlockCase c;
        c.seed = seed;
        c.n = n;
        c.graph = &graph;
        c.block = &block;
        c.options.bounds = {r, s};
        c.options.enable_merge = merge;
        fn(c);
      }
    }
  }
}

StatusOr<double> ExhaustiveOptimum(const graph::Graph& graph, int max_group_ops,
                                   int max_groups, bool enable_merge,
                                   const StageLatencyFn& oracle) {
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  const int n = dag.size();
  if (n > 20) return absl::InvalidArgumentError("ExhaustiveOptimum: too many ops");
  std::vector<uint32_t> preds(n, 0);
  for (int p = 0; p < n; ++p) {
    for (int q : dag.preds[p]) preds[p] |= 1u << q;
  }
  const uint32_t all = n == 32 ? ~0u : (1u << n) - 1;
  std::unordered_map<uint32_t, double> stage_latency;  // by op set; +inf: not allowed
  std::unordered_map<uint32_t, double> memo;
  Status status;
  constexpr double kInf = std::numeric_limits<double>::infinity();

  // Latency of stage `t` (ops whose producers are all done or in t), or +inf
  // when its components break the bounds.
  auto latency_of = [&](uint32_t t) -> double {
    auto it = stage_latency.find(t);
    if (it != stage_latency.end()) return it->second;
    // Components by naive union-find over edges inside t.
    std::vector<int> parent(n);
    for (int i = 0; i < n; ++i) parent[i] = i;
    std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
    for (int p = 0; p < n; ++p) {
      if (!(t >> p & 1)) continue;
      for (int q = 0; q < n; ++q) {
        if ((t >> q & 1) && (preds[p] >> q & 1)) parent[find(p)] = find(q);
      }
    }
    std::unordered_map<int, std::vector<graph::NodeId>> components;
    for (int p = 0; p < n; ++p) {
      if (t >> p & 1) components[find(p)].push_back(dag.order[p]);  // topological order
    }
    double latency = kInf;
    bool within = static_cast<int>(components.size()) <= max_groups;
    for (const auto& [root, ops] : components) {
      within = within && static_cast<int>(ops.size()) <= max_group_ops;
    }
    if (within) {
      Stage stage;
      for (int p = 0; p < n; ++p) {
        if ((t >> p & 1) && find(p) == p) stage.groups.push_back(components[p]);
      }
      StatusOr<double> concurrent = oracle(stage);
      if (!concurrent.ok()) {
        status = concurrent.status();
        return kInf;
      }
      latency = *concurrent;
      bool singletons = stage.groups.size() >= 2;
      std::vector<graph::NodeId> convs;
      for (const auto& group : stage.groups) {
        singletons = singletons && group.size() == 1;
        convs.push_back(group[0]);
      }
      if (enable_merge && singletons) {
        StatusOr<MergedConv> merged = MergeConvs(graph, convs);
        if (merged.ok()) {
          stage.strategy = Strategy::kMerge;
          stage.merged = *merged;
          StatusOr<double> merge = oracle(stage);
          if (!merge.ok()) {
            status = merge.status();
            return kInf;
          }
          latency = std::min(latency, *merge);
        }
      }
    }
    stage_latency.emplace(t, latency);
    return latency;
  };

  std::function<double(uint32_t)> best = [&](uint32_t done) -> double {
    if (done == all) return 0.0;
    auto it = memo.find(done);
    if (it != memo.end()) return it->second;
    const uint32_t rest = all & ~done;
    double result = kInf;
    for (uint32_t t = rest; t != 0; t = (t - 1) & rest) {
      bool ready = true;
      for (int p = 0; p < n && ready; ++p) {
        if ((t >> p & 1) && (preds[p] & ~(done | t)) != 0) ready = false;
      }
      if (!ready) continue;
      const double latency = latency_of(t);
      if (latency == kInf) continue;
      result = std::min(result, latency + best(done | t));
    }
    memo.emplace(done, result);
    return result;
  };
  const double optimum = best(0);
  RETURN_IF_ERROR(status);
  return optimum;
}

Stage ConcurrentStage(std::vector<std::vector<graph::NodeId>> groups) {
  Stage stage;
  stage.groups = std::move(groups);
  return stage;
}

StatusOr<Stage> MergeStage(const graph::Graph& graph, const std::vector<graph::NodeId>& ops) {
  ASSIGN_OR_RETURN(MergedConv merged, MergeConvs(graph, ops));
  Stage stage;
  stage.strategy = Strategy::kMerge;
  for (graph::NodeId op : ops) stage.groups.push_back({op});
  stage.merged = std::move(merged);
  return stage;
}

Schedule ScheduleOf(std::vector<Stage> stages) {
  Schedule schedule;
  for (Stage& s : stages) {
    ScheduledStage scheduled;
    scheduled.stage = std::move(s);
    schedule.stages.push_back(std::move(scheduled));
  }
  return schedule;
}

StatusOr<SearchResult> RunBatched(const graph::Graph& graph, const SearchOptions& options,
                                  const StageLatencyFn& oracle, int batch,
                                  std::vector<Signature>* requested,
                                  std::vector<double>* latencies) {
  ASSIGN_OR_RETURN(auto session, SearchSession::Create(graph, options));
  while (true) {
    ASSIGN_OR_RETURN(std::vector<StageRequest> requests, session->NextUnknown(batch));
    if (requests.empty()) break;
    if (static_cast<int>(requests.size()) > batch) {
      return absl::InternalError(StrCat("a batch of ", requests.size(), " requests, over ", batch));
    }
    for (const StageRequest& request : requests) {
      requested->push_back(request.signature);
      ASSIGN_OR_RETURN(Signature signature, StageSignature(graph, request.stage));
      if (signature != request.signature) {
        return absl::InternalError(StrCat("request ", Hex64(request.signature),
                                          " has a stage of signature ", Hex64(signature)));
      }
      ASSIGN_OR_RETURN(double latency, oracle(request.stage));
      if (latencies != nullptr) latencies->push_back(latency);
      RETURN_IF_ERROR(session->Provide(request.signature, latency));
    }
  }
  if (session->outstanding() != 0) {
    return absl::InternalError(StrCat(session->outstanding(), " requests outstanding at the end"));
  }
  return session->Result();  // FailedPrecondition unless Done()
}

}  // namespace iosfarm::scheduler::ios::testing
