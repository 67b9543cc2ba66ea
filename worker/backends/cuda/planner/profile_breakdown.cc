#include "worker/backends/cuda/planner/profile_breakdown.h"

#include <algorithm>
#include <cstdio>

namespace iosfarm::worker::cuda {

std::string ProfileBreakdown::Summary() const {
  static constexpr const char* kNames[kNumParts] = {"instantiate", "capture", "sizing", "samples",
                                                    "release"};
  const double per_stage_ms = 1e3 / static_cast<double>(std::max<int64_t>(stages_, 1));
  std::string text =
      "cuda profile breakdown: " + std::to_string(stages_) + " stages, ms per stage:";
  double total = 0;
  char part[48];
  for (int p = 0; p < kNumParts; ++p) {
    std::snprintf(part, sizeof(part), " %s %.3f", kNames[p], seconds_[p] * per_stage_ms);
    text += part;
    total += seconds_[p];
  }
  std::snprintf(part, sizeof(part), " total %.3f", total * per_stage_ms);
  return text + part;
}

}  // namespace iosfarm::worker::cuda
