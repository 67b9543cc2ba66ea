#include "server/search_estimate.h"

#include <algorithm>
#include <cmath>

namespace iosfarm::server {

int64_t EstimateSearchStages(int64_t model_ops, const SearchHistory& history) {
  if (history.done_on_this_key) return 0;
  if (history.stages_elsewhere >= 0) return history.stages_elsewhere;
  const double per_op =
      history.searched_ops > 0 && history.searched_stages > 0
          ? static_cast<double>(history.searched_stages) / static_cast<double>(history.searched_ops)
          : kDefaultStagesPerOp;
  return static_cast<int64_t>(
      std::llround(per_op * static_cast<double>(std::max<int64_t>(0, model_ops))));
}

}  // namespace iosfarm::server
