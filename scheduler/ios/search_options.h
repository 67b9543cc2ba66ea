// Options of an IOS search.
#ifndef IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
#define IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_

#include <cstdint>

#include "common/status.h"

namespace iosfarm::scheduler::ios {

struct SearchOptions {
  int max_group_ops = 3;   // r: ops per group (IOS default 3), 1..64
  int max_groups = 8;      // s: groups per stage (IOS default 8), 1..64
  int max_block_ops = 50;  // block size limit (IOPS default 50), 1..1024
  bool enable_merge = true;
  // Solve each distinct block structure once and map the schedule onto
  // identical blocks (e.g. repeated NASNet cells). Changes nothing in the
  // result, only the work.
  bool reuse_identical_blocks = true;
  // Boundary windows (IOPS's local search around split points): after the
  // blocks are solved, the last stages of a block and the first stages of the
  // next one across every size cut, up to this many ops in all, are solved
  // again as one small block and replaced when that is cheaper. It recovers
  // parallelism that a size cut separated. 0 disables.
  int boundary_window_ops = 24;
  // Per-block cap on DP states, to bound memory (0: none): past it the search
  // fails with ResourceExhausted. The default bounds the state table to about
  // 2 GiB (the largest zoo block needs 0.15 M states).
  int64_t max_states_per_block = 30'000'000;
};

// InvalidArgument naming the field when an option is out of range.
Status ValidateSearchOptions(const SearchOptions& options);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
