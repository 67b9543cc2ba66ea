#include "scheduler/ios/bounded/bounded_search_knobs.h"

#include "common/strings.h"

namespace iosfarm::scheduler::ios {

Status ValidateBoundedSearchKnobs(const BoundedSearchKnobs& knobs) {
  if (knobs.lookahead < 0 || knobs.lookahead > 1'000'000) {
    return absl::InvalidArgumentError(
        StrCat("bounded.lookahead must be in 0..1000000, got ", knobs.lookahead));
  }
  if (knobs.max_open_steps < 0) {
    return absl::InvalidArgumentError(
        StrCat("bounded.max_open_steps must be >= 0, got ", knobs.max_open_steps));
  }
  if (knobs.max_block_states < 0) {
    return absl::InvalidArgumentError(
        StrCat("bounded.max_block_states must be >= 0, got ", knobs.max_block_states));
  }
  if (knobs.cost_to_go_dp_max_states < 0) {
    return absl::InvalidArgumentError(StrCat("bounded.cost_to_go_dp_max_states must be >= 0, got ",
                                             knobs.cost_to_go_dp_max_states));
  }
  if (knobs.device_floor_steps_factor < 1 || knobs.device_floor_states_factor < 1) {
    return absl::InvalidArgumentError(
        StrCat("bounded.device_floor_steps_factor and device_floor_states_factor must be >= 1, "
               "got ",
               knobs.device_floor_steps_factor, " and ", knobs.device_floor_states_factor));
  }
  if (knobs.cores < 0 || knobs.cores > 4096) {
    return absl::InvalidArgumentError(
        StrCat("bounded.cores must be in 0..4096, got ", knobs.cores));
  }
  return ValidateDeviceFloor(knobs.device_floor);
}

}  // namespace iosfarm::scheduler::ios
