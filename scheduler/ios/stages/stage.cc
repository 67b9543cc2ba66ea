#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

std::string_view StrategyName(Strategy strategy) {
  return strategy == Strategy::kMerge ? "merge" : "concurrent";
}

std::optional<Strategy> StrategyFromName(std::string_view name) {
  if (name == "concurrent") return Strategy::kConcurrent;
  if (name == "merge") return Strategy::kMerge;
  return std::nullopt;
}

std::string StageToString(const graph::Graph& graph, const Stage& stage) {
  std::string out(stage.single_core ? "single-core" : StrategyName(stage.strategy));
  out += "[";
  const char* group_separator = stage.strategy == Strategy::kMerge ? "+" : " | ";
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (g > 0) out += group_separator;
    for (size_t i = 0; i < stage.groups[g].size(); ++i) {
      if (i > 0) out += ",";
      out += graph.node(stage.groups[g][i]).name;
    }
  }
  out += "]";
  return out;
}

}  // namespace iosfarm::scheduler::ios
