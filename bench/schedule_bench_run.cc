#include "bench/schedule_bench_run.h"

#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_status.h"
#include "bench/schedule_bench_search.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "scheduler/ios/baselines.h"
#include "worker/backends/reference/compare.h"

namespace iosfarm::bench {

namespace {

namespace ios = scheduler::ios;

// Runs the sequential schedule once and checks that the others compute the
// same outputs within settings.verify_rtol.
Status Verify(const graph::Graph& graph, const ModelSpec& spec, const Settings& settings,
              worker::Backend& backend, const ios::Schedule& sequential,
              const ios::Schedule& greedy, const ios::Schedule& ios_schedule) {
  worker::RunOptions once;
  once.return_outputs = true;
  once.profile.warmup = 0;
  once.profile.min_repeats = 1;
  once.profile.max_repeats = 1;
  ASSIGN_OR_RETURN(worker::RunResult expected, backend.RunSchedule(graph, sequential, once));
  for (const ios::Schedule* schedule : {&greedy, &ios_schedule}) {
    ASSIGN_OR_RETURN(worker::RunResult got, backend.RunSchedule(graph, *schedule, once));
    RETURN_IF_ERROR(worker::reference::CompareTensorLists(
        got.outputs, expected.outputs, settings.verify_rtol,
        StrCat(spec.name, " ", schedule == &ios_schedule ? "IOS" : "greedy",
               " output vs sequential")));
  }
  return absl::OkStatus();
}

// The round-robin measurement of the schedules (see the header).
Status Measure(const graph::Graph& graph, const ModelSpec& spec, const Settings& settings,
               worker::Backend& backend, const ios::Schedule* const (&schedules)[kNumConfigs],
               bool cuda_graph_rows, Row& row) {
  worker::RunOptions run;
  run.profile.warmup = settings.warmup;
  run.profile.min_repeats = settings.repeats;
  run.profile.max_repeats = settings.repeats;
  run.profile.max_seconds = 1e9;  // exactly `repeats` timed runs
  std::vector<Config> configs = {kSequential, kGreedy, kIos};
  if (cuda_graph_rows) {
    configs.push_back(kSequentialGraph);
    configs.push_back(kIosGraph);
  }
  const int n = static_cast<int>(configs.size());
  row.loadavg_before = LoadAvg();
  for (int round = 0; round < settings.rounds; ++round) {
    double round_median[kNumConfigs] = {};
    for (int k = 0; k < n; ++k) {
      const Config which = configs[(k + round) % n];
      run.cuda_graph = which == kSequentialGraph || which == kIosGraph;
      StatusOr<worker::RunResult> result = backend.RunSchedule(graph, *schedules[which], run);
      if (!result.ok()) {
        return Prefixed(StrCat(spec.name, " ", kConfigTitles[which]), result.status());
      }
      Measured& measured = row.measured[which];
      measured.medians.push_back(result->latency.median_ms);
      measured.p10s.push_back(result->latency.p10_ms);
      measured.p90s.push_back(result->latency.p90_ms);
      round_median[which] = result->latency.median_ms;
    }
    row.wins_vs_seq += round_median[kIos] < round_median[kSequential] ? 1 : 0;
    row.wins_vs_greedy += round_median[kIos] < round_median[kGreedy] ? 1 : 0;
    std::string line = StrCat("  ", spec.name, " round ", round + 1, ":");
    for (const Config c : configs) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %s %.3f", kConfigTitles[c], round_median[c]);
      line += buf;
    }
    std::printf("%s ms (load %s)\n", line.c_str(), LoadAvg().c_str());
    std::fflush(stdout);
  }
  row.loadavg_after = LoadAvg();
  return absl::OkStatus();
}

}  // namespace

StatusOr<Row> RunModel(const ModelSpec& spec, const Settings& settings, worker::Backend& backend,
                       BenchLatencyCache* latencies, bool cuda_graph_rows) {
  Row row;
  row.model = spec.name;
  row.source = spec.onnx ? "onnx" : "zoo";
  row.path = spec.onnx ? spec.arg : "";
  row.r = spec.r;
  row.s = spec.s;
  row.block_size = spec.block_size;
  StatusOr<graph::LoadedModel> model = graph::LoadModel(spec.arg, settings.batch);
  if (!model.ok()) return Prefixed(spec.onnx ? spec.arg : spec.name, model.status());
  const graph::Graph& graph = model->graph;
  RETURN_IF_ERROR(Prefixed(spec.name, backend.CheckSupported(graph)));

  ASSIGN_OR_RETURN(const ios::Schedule ios_schedule,
                   SearchOrLoad(graph, spec, settings, backend, latencies, row));
  StatusOr<ios::Schedule> sequential = ios::SequentialSchedule(graph);
  if (!sequential.ok()) return Prefixed(spec.name + " sequential", sequential.status());
  StatusOr<ios::Schedule> greedy = ios::GreedySchedule(graph, spec.s);
  if (!greedy.ok()) return Prefixed(spec.name + " greedy", greedy.status());
  row.seq_stages = sequential->stages.size();
  row.greedy_stages = greedy->stages.size();
  row.ios_stages = ios_schedule.stages.size();

  if (settings.verify) {
    RETURN_IF_ERROR(Prefixed(spec.name + " verify", Verify(graph, spec, settings, backend,
                                                            *sequential, *greedy, ios_schedule)));
    row.verified = "yes";
    std::printf("%s: greedy and IOS outputs match the sequential schedule (rtol %g)\n",
                spec.name.c_str(), settings.verify_rtol);
  }
  const ios::Schedule* const schedules[kNumConfigs] = {&*sequential, &*greedy, &ios_schedule,
                                                       &*sequential, &ios_schedule};
  RETURN_IF_ERROR(Measure(graph, spec, settings, backend, schedules, cuda_graph_rows, row));
  return row;
}

}  // namespace iosfarm::bench
