#include "bench/schedule_bench_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/strings.h"

namespace iosfarm::bench {

namespace {

std::string Cell(const Measured& m) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f (%.2f-%.2f)", Median(m.medians), Median(m.p10s),
                Median(m.p90s));
  return buf;
}

nlohmann::json RowJson(const Row& row, int batch, bool cuda_graph_rows) {
  nlohmann::json measured = nlohmann::json::object();
  for (int c = 0; c < kNumConfigs; ++c) {
    if (!cuda_graph_rows && (c == kSequentialGraph || c == kIosGraph)) continue;
    const Measured& m = row.measured[c];
    measured[kConfigKeys[c]] = {{"median", Median(m.medians)},
                                {"p10", Median(m.p10s)},
                                {"p90", Median(m.p90s)},
                                {"round_medians", m.medians}};
  }
  const double seq = Median(row.measured[kSequential].medians);
  nlohmann::json j = {
      {"model", row.model},
      {"source", row.source},
      {"path", row.path},
      {"batch", batch},
      {"r", row.r},
      {"s", row.s},
      {"block_size", row.block_size},
      {"search",
       {{"text", row.search},
        {"seconds", row.search_seconds},
        {"stages_measured", row.stages_measured},
        {"stages_cached", row.stages_cached},
        {"lower_bound_misses", row.bound_misses},
        {"largest_bound_miss_ms", row.largest_bound_miss_ms},
        {"reused", row.search_reused},
        {"kind", row.search_exhaustive ? "exhaustive" : "bounded"}}},
      {"stages",
       {{"sequential", row.seq_stages}, {"greedy", row.greedy_stages}, {"ios", row.ios_stages}}},
      {"predicted_ms",
       {{"sequential", row.pred_seq}, {"greedy", row.pred_greedy}, {"ios", row.pred_ios}}},
      {"measured_ms", measured},
      {"ios_over_sequential", Median(row.measured[kIos].medians) / seq},
      {"ios_over_greedy",
       Median(row.measured[kIos].medians) / Median(row.measured[kGreedy].medians)},
      {"ios_wins", {{"vs_sequential", row.wins_vs_seq}, {"vs_greedy", row.wins_vs_greedy}}},
      {"verified", row.verified},
      {"load_before", row.loadavg_before},
      {"load_after", row.loadavg_after},
  };
  if (cuda_graph_rows) {
    j["ios_cuda_graph_over_sequential"] = Median(row.measured[kIosGraph].medians) / seq;
  }
  return j;
}

}  // namespace

std::string LoadAvg() {
  std::ifstream file("/proc/loadavg");
  std::string a, b, c;
  file >> a >> b >> c;
  return StrCat(a, " ", b, " ", c);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void PrintHeader(bool cuda_graph_rows) {
  std::printf(
      "| model | r,s (block) | search | stages seq / greedy / IOS | sequential ms (p10-p90) "
      "| greedy ms (p10-p90) | IOS ms (p10-p90) |%s IOS/seq | IOS/greedy |%s IOS wins vs seq, "
      "greedy | predicted seq / greedy / IOS ms | load before / after |\n"
      "| --- | --- | --- | --- | --- | --- | --- |%s --- | --- |%s --- | --- | --- |\n",
      cuda_graph_rows ? " sequential CUDA graph ms (p10-p90) | IOS CUDA graph ms (p10-p90) |" : "",
      cuda_graph_rows ? " IOS graph/seq |" : "", cuda_graph_rows ? " --- | --- |" : "",
      cuda_graph_rows ? " --- |" : "");
}

void PrintRow(const Row& row, int rounds, bool cuda_graph_rows) {
  const double seq = Median(row.measured[kSequential].medians),
               greedy = Median(row.measured[kGreedy].medians),
               ios_ms = Median(row.measured[kIos].medians);
  std::string graph_cells, graph_ratio;
  if (cuda_graph_rows) {
    graph_cells = StrCat(" ", Cell(row.measured[kSequentialGraph]), " | ",
                         Cell(row.measured[kIosGraph]), " |");
    char buf[32];
    std::snprintf(buf, sizeof(buf), " %.3f |", Median(row.measured[kIosGraph].medians) / seq);
    graph_ratio = buf;
  }
  std::printf(
      "| %s | %d,%d (%d) | %s | %zu / %zu / %zu | %s | %s | %s |%s %.3f | %.3f |%s %d/%d, %d/%d "
      "| %.2f / %.2f / %.2f | %s / %s |\n",
      row.model.c_str(), row.r, row.s, row.block_size, row.search.c_str(), row.seq_stages,
      row.greedy_stages, row.ios_stages, Cell(row.measured[kSequential]).c_str(),
      Cell(row.measured[kGreedy]).c_str(), Cell(row.measured[kIos]).c_str(), graph_cells.c_str(),
      ios_ms / seq, ios_ms / greedy, graph_ratio.c_str(), row.wins_vs_seq, rounds,
      row.wins_vs_greedy, rounds, row.pred_seq, row.pred_greedy, row.pred_ios,
      row.loadavg_before.c_str(), row.loadavg_after.c_str());
}

void WriteJson(const std::string& path, const nlohmann::json& header, const std::vector<Row>& rows,
               int batch, bool cuda_graph_rows) {
  nlohmann::json doc = header;
  doc["models"] = nlohmann::json::array();
  for (const Row& row : rows) doc["models"].push_back(RowJson(row, batch, cuda_graph_rows));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp);
    file << doc.dump(2) << "\n";
    if (!file.good()) {
      std::fprintf(stderr, "warning: cannot write %s\n", tmp.c_str());
      return;
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) std::fprintf(stderr, "warning: cannot write %s: %s\n", path.c_str(),
                          error.message().c_str());
}

}  // namespace iosfarm::bench
