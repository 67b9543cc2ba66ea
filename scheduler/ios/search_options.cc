#include "scheduler/ios/search_options.h"

#include "absl/strings/cord.h"
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
  RETURN_IF_ERROR(ValidateBoundedSearchKnobs(options.bounded));
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError(StrCat("threads must be in 1..256, got ", options.threads));
  }
  const SearchBudget& b = options.budget;
  if (b.max_states_per_pass < 0 || b.max_transitions_per_pass < 0 || b.max_steps_per_pass < 0 ||
      b.max_bytes_per_pass < 0 ||
      b.max_transitions_total < 0 || b.max_signatures_total < 0 || b.latency_cache_bytes < 0) {
    return absl::InvalidArgumentError("search budget limits must be >= 0 (0: no limit)");
  }
  if (b.min_block_ops < 1 || b.min_block_ops > kMaxBlockOps) {
    return absl::InvalidArgumentError(StrCat("budget.min_block_ops must be in 1..", kMaxBlockOps,
                                             ", got ", b.min_block_ops));
  }
  return absl::OkStatus();
}

namespace {
constexpr char kBudgetPayload[] = "iosfarm.dev/search-budget";
}  // namespace

Status SearchBudgetError(const std::string& message) {
  Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kBudgetPayload, absl::Cord("1"));
  return status;
}

bool IsSearchBudgetError(const Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kBudgetPayload).has_value();
}

}  // namespace iosfarm::scheduler::ios
