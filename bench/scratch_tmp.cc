#include <cstdio>
#include <ctime>
#include "graph/models/zoo.h"
#include "scheduler/ios/blocks.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/analytic_oracle.h"
#include "absl/container/flat_hash_map.h"
using namespace iosfarm;
using namespace iosfarm::scheduler::ios;
struct Src : LatencySource {
  StageLatencyFn fn; absl::flat_hash_map<Signature,double> m;
  std::optional<double> Lookup(Signature s, absl::FunctionRef<Stage()> st) override {
    auto it = m.find(s); if (it != m.end()) return it->second;
    double v = *fn(st()); m[s]=v; return v; }
  Status status() const override { return absl::OkStatus(); }
};
int main(int argc, char** argv) {
  auto g = graph::models::BuildZooModel(argv[1], 1);
  auto p = PartitionIntoBlocks(*g, {50});
  int b = atoi(argv[2]);
  auto bg = BlockGraph::Build(*g, p->blocks[b].ops);
  Src src; src.fn = MakeAnalyticOracle(*g);
  DpOptions o; o.bounds = {atoi(argv[3]), atoi(argv[4])};
  clock_t t0 = clock();
  auto sol = SolveBlock(*bg, o, src);
  double t = double(clock()-t0)/CLOCKS_PER_SEC;
  printf("block %d ops %d states %lld transitions %lld stages %lld sigs %zu time %.2f s latency %.4f\n", b, bg->size(),
    (long long)sol->stats.states, (long long)sol->stats.transitions, (long long)sol->stats.distinct_stages, src.m.size(), t, sol->latency_ms);
}
