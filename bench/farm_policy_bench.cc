// farm_policy_bench: the load-aware farm scheduler in simulation (no GPU).
//
//   farm_policy_bench [--iterations N] [--measure S] [--slots N] [--scale-jobs N]
//
// Part 1 compares the policies (interleaved, sequential, synchronous) on the
// thesis's measured mean phase times (build 8.3 s, profile 39.5 s, update
// 44.0 s; enumerate 1.0 s and a final measure of 10 s are ours) for 1, 2, 4
// and 8 identical jobs and a mixed set, with the makespan lower bound and the
// GPU idle fraction. Part 2 runs 1,000 jobs on 100 workers (4 device keys)
// and reports the scheduler's decision latency (wall time of each Dispatch
// and Finished call). Between them, one job of 32 batches on 1-8 workers,
// one batch at a time against parallel batches, and search places held
// until a search ends against places shared in time (SearchAdmission) for
// small jobs among large searches on 100 and 1,000 workers. Output is
// markdown (its figures: docs/results.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <iostream>
#include <string>
#include <vector>

#include "common/flags/flags.h"
#include "common/status.h"
#include "common/strings.h"
#include "scheduler/farm/farm_simulation.h"

namespace {

using iosfarm::StrCat;
namespace farm = iosfarm::scheduler::farm;
using farm::Policy;

struct Options {
  int iterations = 3;
  double measure_s = 10.0;
  int slots = 2;
  int scale_jobs = 1000;
};

constexpr farm::SimIteration kThesis = {1.0, 8.3, 39.5, 44.0};

farm::SimJob ThesisJob(const Options& o, double scale = 1.0, int iterations = -1,
                       double arrival = 0) {
  farm::SimJob job;
  job.device_key = "v100";
  job.arrival_s = arrival;
  const farm::SimIteration it = {kThesis.enumerate_s * scale, kThesis.build_s * scale,
                                 kThesis.profile_s * scale, kThesis.update_s * scale};
  job.iterations.assign(iterations < 0 ? o.iterations : iterations, it);
  job.measure_s = o.measure_s * scale;
  return job;
}

struct Scenario {
  std::string name;
  std::vector<farm::SimJob> jobs;
  int workers = 1;
};

struct TableResult {
  double speedup4 = 0;      // sequential / interleaved at 4 identical jobs
  double worst_ratio = 0;   // worst interleaved / tight bound
  double worst_simple = 0;  // worst interleaved / simple bound
  double cp_speedup4 = 0;   // sequential / critical-path at 4 identical jobs
  double cp_ratio4 = 0;     // critical-path / tight at 4 identical jobs
  double cp_mixed = 0;      // critical-path / tight on the mixed staggered set
  double int_mixed = 0;     // interleaved / tight on the mixed staggered set
  double cp_worst = 0;      // worst critical-path / tight bound
};

// One row per scenario: the makespan of every policy and the bounds.
iosfarm::Status PolicyTable(const Options& o, int slots, TableResult* out) {
  std::vector<Scenario> scenarios;
  for (int n : {1, 2, 4, 8}) {
    scenarios.push_back({StrCat(n, " identical"), std::vector<farm::SimJob>(n, ThesisJob(o)), 1});
  }
  // Mixed: different sizes (x0.5 .. x1.5), iteration counts (2..5) and arrivals.
  scenarios.push_back({"mixed 4 (x0.5-1.5, 2-5 it, staggered)",
                       {ThesisJob(o, 1.0, 3, 0), ThesisJob(o, 0.5, 5, 0),
                        ThesisJob(o, 1.5, 2, 60), ThesisJob(o, 1.0, 4, 120)},
                       1});
  scenarios.push_back({"8 identical, 2 workers", std::vector<farm::SimJob>(8, ThesisJob(o)), 2});

  std::printf("\nServer CPU slots: %d; phase times (s): enumerate %.1f, build %.1f, profile %.1f, "
              "update %.1f, measure %.1f; %d iterations per job unless stated.\n\n",
              slots, kThesis.enumerate_s, kThesis.build_s, kThesis.profile_s, kThesis.update_s,
              o.measure_s, o.iterations);
  std::printf(
      "| jobs | workers | simple bound (s) | tight bound (s) | interleaved (s) | "
      "sequential (s) | synchronous (s) | critical-path (s) | interleaved / simple | "
      "interleaved / tight | critical-path / tight | sequential / interleaved | "
      "GPU idle int / seq / sync / cp |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  *out = TableResult{};
  for (const Scenario& s : scenarios) {
    farm::SimConfig config;
    config.server_slots = slots;
    config.jobs = s.jobs;
    config.measure_latency = false;
    for (int w = 0; w < s.workers; ++w) config.workers.push_back({StrCat("w", w), "v100"});
    double makespan[4], idle[4];
    double bound = 0, simple = 0;
    const Policy policies[4] = {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous,
                                Policy::kCriticalPath};
    for (int p = 0; p < 4; ++p) {
      config.policy = policies[p];
      ASSIGN_OR_RETURN(farm::SimResult r, farm::RunFarmSimulation(config));
      makespan[p] = r.makespan_s;
      idle[p] = r.gpu_idle_fraction;
      bound = r.lower_bound_s;
      simple = r.simple_lower_bound_s;
    }
    const double ratio = makespan[0] / bound;
    const double cp_ratio = makespan[3] / bound;
    out->worst_ratio = std::max(out->worst_ratio, ratio);
    out->worst_simple = std::max(out->worst_simple, makespan[0] / simple);
    out->cp_worst = std::max(out->cp_worst, cp_ratio);
    if (s.name == "4 identical") {
      out->speedup4 = makespan[1] / makespan[0];
      out->cp_speedup4 = makespan[1] / makespan[3];
      out->cp_ratio4 = cp_ratio;
    }
    if (s.name.starts_with("mixed")) {
      out->cp_mixed = cp_ratio;
      out->int_mixed = ratio;
    }
    std::printf(
        "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | "
        "%.2fx | %.0f %% / %.0f %% / %.0f %% / %.0f %% |\n",
        s.name.c_str(), s.workers, simple, bound, makespan[0], makespan[1], makespan[2],
        makespan[3], makespan[0] / simple, ratio, cp_ratio, makespan[1] / makespan[0],
        100 * idle[0], 100 * idle[1], 100 * idle[2], 100 * idle[3]);
  }
  return absl::OkStatus();
}

// One job of 32 batches on 1-8 workers of its key: one batch at a time (the
// thesis's chain) against as many batches as workers (JobLifecycle's
// parallel batches). Returns the profile-bound job's speed-up on 8 workers.
iosfarm::Status ParallelTable(const Options& o, double* speedup8) {
  struct Times {
    std::string name;
    farm::SimIteration it;
  };
  const Times sets[2] = {
      {"thesis (update 44.0 s)", kThesis},
      {"profile-bound (enumerate 0.5 s, update 2.0 s)",
       {0.5, kThesis.build_s, kThesis.profile_s, 2.0}},
  };
  constexpr int kBatches = 32;
  std::printf("\nOne job of %d batches, measure %.1f s, %d server CPU slots.\n\n", kBatches,
              o.measure_s, o.slots);
  std::printf(
      "| phase times | workers | one batch at a time (s) | parallel batches (s) | "
      "tight bound (s) | parallel / bound | speed-up over 1 worker |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  *speedup8 = 0;
  for (const Times& t : sets) {
    double one_worker = 0;
    for (int workers : {1, 2, 4, 8}) {
      farm::SimConfig config;
      config.server_slots = o.slots;
      config.measure_latency = false;
      farm::SimJob job;
      job.device_key = "v100";
      job.iterations.assign(kBatches, t.it);
      job.measure_s = o.measure_s;
      for (int w = 0; w < workers; ++w) config.workers.push_back({StrCat("w", w), "v100"});
      job.max_parallel_batches = 1;
      config.jobs = {job};
      ASSIGN_OR_RETURN(farm::SimResult serial, farm::RunFarmSimulation(config));
      config.jobs[0].max_parallel_batches = 0;  // as many as workers
      ASSIGN_OR_RETURN(farm::SimResult parallel, farm::RunFarmSimulation(config));
      if (workers == 1) one_worker = parallel.makespan_s;
      const double speedup = one_worker / parallel.makespan_s;
      if (workers == 8 && t.it.update_s < kThesis.update_s) *speedup8 = speedup;
      std::printf("| %s | %d | %.1f | %.1f | %.1f | %.3f | %.2fx |\n", t.name.c_str(), workers,
                  serial.makespan_s, parallel.makespan_s, parallel.lower_bound_s,
                  parallel.makespan_s / parallel.lower_bound_s, speedup);
    }
  }
  return absl::OkStatus();
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  i = std::clamp<size_t>(i, 1, v.size()) - 1;
  return v[i];
}

iosfarm::Status ScaleTable(const Options& o, double* worst_p99_ms) {
  const int kWorkers = 100;
  const char* kKeys[4] = {"v100", "a100", "h100", "h200"};
  const int kSlots = 64;
  std::printf("\n%d jobs, %d workers (%d device keys, 25 workers each), %d server CPU slots; "
              "3-6 iterations per job, thesis phase times x U(0.7, 1.3).\n\n",
              o.scale_jobs, kWorkers, 4, kSlots);
  std::printf("| arrivals | policy | phases | decisions | p50 (us) | p99 (us) | max (us) | "
              "makespan (s) | lower bound (s) | sim wall (s) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  *worst_p99_ms = 0;
  // Arrivals over an hour, all at once, and all at once with up to 4
  // batches of each job out (parallel batches; the synchronous policy runs
  // one).
  for (int variant : {0, 1, 2}) {
    const bool burst = variant > 0;
    const int parallel = variant == 2 ? 4 : 1;
    std::mt19937 rng(20261121);
    auto jitter = [&] { return std::uniform_real_distribution<double>(0.7, 1.3)(rng); };
    farm::SimConfig config;
    config.server_slots = kSlots;
    for (int w = 0; w < kWorkers; ++w) {
      config.workers.push_back({StrCat("worker-", w), kKeys[w % 4]});
    }
    for (int j = 0; j < o.scale_jobs; ++j) {
      farm::SimJob job;
      job.device_key = kKeys[rng() % 4];
      job.arrival_s = burst ? 0 : std::uniform_real_distribution<double>(0, 3600)(rng);
      const int iterations = 3 + static_cast<int>(rng() % 4);
      for (int i = 0; i < iterations; ++i) {
        job.iterations.push_back({kThesis.enumerate_s * jitter(), kThesis.build_s * jitter(),
                                  kThesis.profile_s * jitter(), kThesis.update_s * jitter()});
      }
      job.measure_s = o.measure_s * jitter();
      job.max_parallel_batches = parallel;
      config.jobs.push_back(std::move(job));
    }
    for (Policy policy : {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous,
                          Policy::kCriticalPath}) {
      config.policy = policy;
      const auto begin = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(farm::SimResult r, farm::RunFarmSimulation(config));
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      const double p99 = Percentile(r.decision_latency_s, 0.99);
      *worst_p99_ms = std::max(*worst_p99_ms, p99 * 1e3);
      std::printf("| %s | %s | %zu | %zu | %.1f | %.1f | %.1f | %.0f | %.0f | %.2f |\n",
                  variant == 0   ? "U(0, 1 h)"
                  : variant == 1 ? "all at t=0"
                                 : "all at t=0, P=4",
                  std::string(farm::PolicyName(policy)).c_str(), r.records.size(),
                  r.decision_latency_s.size(), Percentile(r.decision_latency_s, 0.5) * 1e6,
                  p99 * 1e6, Percentile(r.decision_latency_s, 1.0) * 1e6, r.makespan_s,
                  r.lower_bound_s, wall);
    }
  }
  return absl::OkStatus();
}

// 40 jobs, 6 search places, 2 server slots: 10 large searches (100
// batches, 2 s enumerates: CPU-bound, as a NASNet's; a resumed turn first
// redoes 20 s of search) and 30 small ones (2 batches), either mixed over
// 10 s (every fourth large) or the large ones first (in 1 s, the small ones
// over the next 10 s). Places held until a search ends against shared in
// time (5 s first turn, 60 s overdue), and shared with two of the six kept
// for first turns: the small jobs' time from arrival to end and the large
// jobs'.
iosfarm::Status AdmissionTable() {
  std::printf(
      "| arrivals | workers | places | small jobs p50 / p99 (s) | large jobs p50 / max (s) "
      "| yields |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (bool large_first : {false, true}) {
    for (int workers : {100, 1000}) {
      // 0: held until the search ends; 1: shared in time; 2: shared, two of
      // the six places kept for first turns (the server's defaults).
      for (int mode : {0, 1, 2}) {
        const bool shared = mode > 0;
        farm::SimConfig config;
        config.server_slots = 2;
        config.measure_latency = false;
        for (int w = 0; w < workers; ++w) config.workers.push_back({StrCat("w", w), "v100"});
        std::vector<bool> large;
        for (int i = 0; i < 40; ++i) {
          farm::SimJob job;
          job.device_key = "v100";
          large.push_back(large_first ? i < 10 : i % 4 == 3);
          job.arrival_s = !large_first   ? 10.0 * i / 40
                          : large.back() ? 0.1 * i
                                         : 1 + (i - 10) / 3.0;
          if (large.back()) {
            job.iterations.assign(100, farm::SimIteration{2.0, 0.1, 1.0, 0.1});
            job.resume_s = 20;
          } else {
            job.iterations.assign(2, farm::SimIteration{0.05, 0.1, 1.0, 0.02});
          }
          job.measure_s = 1;
          config.jobs.push_back(job);
        }
        farm::AdmissionRules rules;
        rules.places = mode == 2 ? 4 : 6;
        rules.first_turn_places = mode == 2 ? 2 : 0;
        rules.min_turn_s = shared ? 5 : 1e12;
        config.admission = rules;
        ASSIGN_OR_RETURN(farm::SimResult r, farm::RunFarmSimulation(config));
        std::vector<double> small_s, large_s;
        for (size_t i = 0; i < config.jobs.size(); ++i) {
          (large[i] ? large_s : small_s).push_back(r.job_end_s[i] - config.jobs[i].arrival_s);
        }
        std::sort(small_s.begin(), small_s.end());
        std::sort(large_s.begin(), large_s.end());
        auto at = [](const std::vector<double>& v, double q) {
          return v[static_cast<size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
        };
        std::printf("| %s | %d | %s | %.1f / %.1f | %.1f / %.1f | %d |\n",
                    large_first ? "large first" : "mixed", workers,
                    mode == 2   ? "4 + 2 for first turns, shared in time"
                    : mode == 1 ? "6, shared in time"
                                : "6, held until the search ends",
                    at(small_s, 0.5), at(small_s, 0.99), at(large_s, 0.5), large_s.back(),
                    r.yields);
      }
    }
  }
  return absl::OkStatus();
}

iosfarm::Status Run(const Options& o) {
  double p99_ms = 0;
  TableResult t, one_slot;
  std::printf("## Policy comparison (makespan, simulated seconds)\n");
  RETURN_IF_ERROR(PolicyTable(o, o.slots, &t));
  if (o.slots != 1) {
    std::printf(
        "\nSame with one server CPU slot (the server CPU, not the GPU, is then the "
        "bottleneck: update 44.0 s > profile 39.5 s):\n");
    RETURN_IF_ERROR(PolicyTable(o, 1, &one_slot));
  }
  double speedup8 = 0;
  std::printf("\n## One job on many workers (parallel batches)\n");
  RETURN_IF_ERROR(ParallelTable(o, &speedup8));
  std::printf("\n## Search places: small jobs among large searches (simulated seconds)\n\n");
  RETURN_IF_ERROR(AdmissionTable());
  std::printf("\n## Scale: scheduler decision latency\n");
  RETURN_IF_ERROR(ScaleTable(o, &p99_ms));
  std::printf("\n## Goals\n\n");
  std::printf(
      "- interleaved within 10 %% of the lower bound (%d slots): worst over the "
      "scenarios %.3f of the tight bound -> %s (%.3f of the simple bound)\n",
      o.slots, t.worst_ratio, t.worst_ratio <= 1.10 ? "met" : "NOT met", t.worst_simple);
  std::printf("- interleaved >= 1.7x faster than sequential at 4 jobs: %.2fx -> %s\n", t.speedup4,
              t.speedup4 >= 1.7 ? "met" : "NOT met");
  std::printf(
      "- critical-path: mixed staggered set within 10 %% of the tight bound: %.3f "
      "(interleaved %.3f) -> %s\n",
      t.cp_mixed, t.int_mixed, t.cp_mixed <= 1.10 ? "met" : "NOT met");
  std::printf(
      "- critical-path: 4 identical jobs >= 1.7x faster than sequential (%.2fx) and "
      "within 5 %% of the tight bound (%.3f) -> %s\n",
      t.cp_speedup4, t.cp_ratio4, t.cp_speedup4 >= 1.7 && t.cp_ratio4 <= 1.05 ? "met" : "NOT met");
  std::printf("- critical-path: worst over the scenarios %.3f of the tight bound\n", t.cp_worst);
  std::printf(
      "- one profile-bound job of 32 batches >= 6x faster on 8 workers than on one: %.2fx -> "
      "%s\n",
      speedup8, speedup8 >= 6 ? "met" : "NOT met");
  std::printf("- decision latency p99 < 5 ms at %d jobs / 100 workers: worst p99 %.3f ms -> %s\n",
              o.scale_jobs, p99_ms, p99_ms < 5 ? "met" : "NOT met");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"farm_policy_bench: the load-aware farm scheduler's policies in simulation "
               "(markdown on stdout; figures in docs/results.md)", "farm_policy_bench"};
  app.add_option("--iterations", o.iterations, "enumerate/build/profile/update rounds per job")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--measure", o.measure_s, "seconds of each job's final measure")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--slots", o.slots, "server CPU slots")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--scale-jobs", o.scale_jobs, "jobs of the decision-latency run")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.set_version_flag("--version", std::string("farm_policy_bench ") + IOSFARM_VERSION);
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;
  const iosfarm::Status status = Run(o);
  if (!status.ok()) {
    std::fprintf(stderr, "farm_policy_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
