#include "scheduler/ios/search_options.h"

#include "common/strings.h"
#include "scheduler/ios/op_bits.h"

namespace iosfarm::scheduler::ios {

Status ValidateSearchOptions(const SearchOptions& options) {
  if (options.max_group_ops < 1 || options.max_group_ops > 64) {
    return absl::InvalidArgumentError(
        StrCat("max_group_ops (r) must be in 1..64, got ", options.max_group_ops));
  }
  if (options.max_groups < 1 || options.max_groups > 64) {
    return absl::InvalidArgumentError(
        StrCat("max_groups (s) must be in 1..64, got ", options.max_groups));
  }
  if (options.max_block_ops < 1 || options.max_block_ops > kMaxBlockOps) {
    return absl::InvalidArgumentError(StrCat("max_block_ops must be in 1..", kMaxBlockOps,
                                             ", got ", options.max_block_ops));
  }
  if (options.boundary_window_ops < 0 || options.boundary_window_ops > kMaxBlockOps) {
    return absl::InvalidArgumentError(StrCat("boundary_window_ops must be in 0..", kMaxBlockOps,
                                             ", got ", options.boundary_window_ops));
  }
  if (options.max_states_per_block < 0) {
    return absl::InvalidArgumentError(
        StrCat("max_states_per_block must be >= 0, got ", options.max_states_per_block));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
