// schedule_bench's results: one Row per model, printed as a markdown table
// row and written as JSON (one object per model, its keys Row's fields and
// kConfigKeys for the measured configurations). Pure functions over
// rows (WriteJson writes a file); thread-compatible.
#ifndef IOSFARM_BENCH_SCHEDULE_BENCH_REPORT_H_
#define IOSFARM_BENCH_SCHEDULE_BENCH_REPORT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iosfarm::bench {

// One measured configuration: a schedule, run eagerly or as one CUDA graph.
enum Config { kSequential, kGreedy, kIos, kSequentialGraph, kIosGraph, kNumConfigs };
inline constexpr const char* kConfigKeys[kNumConfigs] = {
    "sequential", "greedy", "ios", "sequential_cuda_graph", "ios_cuda_graph"};
inline constexpr const char* kConfigTitles[kNumConfigs] = {
    "sequential", "greedy", "IOS", "sequential CUDA graph", "IOS CUDA graph"};

// Per round: the median, p10 and p90 of that round's timed runs.
struct Measured {
  std::vector<double> medians, p10s, p90s;
};

// Everything measured for one model.
struct Row {
  std::string model, source, path;
  int r = 0, s = 0, block_size = 0;
  std::string search;  // "123 s, 4613 stages" or "... (earlier run)"
  double search_seconds = 0;
  long long stages_measured = 0;
  long long stages_cached = 0;  // answered by the latency database
  // Measured stages faster than the bounded search's lower bound (its
  // exactness assumption broken; scheduler/ios/block_dp.h) and the largest
  // shortfall, ms.
  long long bound_misses = 0;
  double largest_bound_miss_ms = 0;
  bool search_reused = false;
  bool search_exhaustive = false;  // --search exhaustive
  size_t seq_stages = 0, greedy_stages = 0, ios_stages = 0;
  double pred_seq = 0, pred_greedy = 0, pred_ios = 0;
  Measured measured[kNumConfigs];
  int wins_vs_seq = 0, wins_vs_greedy = 0;
  std::string loadavg_before, loadavg_after;
  std::string verified = "-";
};

// /proc/loadavg's first three figures ("0.52 0.61 0.70"), for the load
// columns.
std::string LoadAvg();

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

// The markdown table's header; with `cuda_graph_rows` the two CUDA graph
// columns and their ratio are included.
void PrintHeader(bool cuda_graph_rows);
void PrintRow(const Row& row, int rounds, bool cuda_graph_rows);

// Writes `header` with every row under "models" to `path` (through a
// temporary file and a rename, so a reader never sees half a file). A file
// that cannot be written is a warning on stderr, not an error.
void WriteJson(const std::string& path, const nlohmann::json& header, const std::vector<Row>& rows,
               int batch, bool cuda_graph_rows);

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_SCHEDULE_BENCH_REPORT_H_
