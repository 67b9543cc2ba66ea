// BoundedSearchKnobs: what tunes the bounded search (bounded_block_search.h)
// inside a whole IOS search (SearchOptions::bounded). None of them changes
// the schedule under the search's assumption (bounded/README.md): they trade
// CPU, memory and the width of a farm's batches against the number of
// stages measured. The defaults suit every backend; `cores` and
// `device_floor` describe the device and come from the latency source
// (Backend::cores(), Backend::device_floor(), a worker's registration).
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_SEARCH_KNOBS_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_SEARCH_KNOBS_H_

#include <cstdint>

#include "common/status.h"
#include "scheduler/ios/bounded/device_floor.h"

namespace iosfarm::scheduler::ios {

struct BoundedSearchKnobs {
  // A concurrent stage of three or more groups (not mergeable) is also
  // bounded by the stages of some of its groups measured so far (adding a
  // group never makes a stage faster). Off: its group and floor bounds
  // only. Of the bounds, real measurements break this one most often
  // (AuditBounds' sub_below); `--no-sub-stage-bound` turns it off.
  bool sub_stage_bound = true;
  // While a block waits for a latency, the latencies of its next
  // `lookahead` candidates are requested too, so that a farm's batches are
  // wide enough for several GPUs (the wider, the more of them turn out not
  // to matter). 0..1'000'000.
  int lookahead = 16;
  // Open-list steps one block may take before the exhaustive DP solves that
  // block instead (where the bounds are too loose to save CPU; the DP then
  // measures every candidate stage of it). 0: never.
  int64_t max_open_steps = 50'000;
  // A block with more DP states than this (CountStates) goes to the
  // exhaustive DP without an attempt: blocks that large go past
  // max_open_steps where the bounds are loose, and the attempt is wasted
  // CPU. The schedule is the same either way (both are exact). 0: never.
  int64_t max_block_states = 100'000;
  // A block of at most this many DP states takes as its cost to go the
  // cost-to-go DP (cost_to_go_dp.h): one walk of the block's state graph
  // with every stage weighed by its bound, which makes the search measure
  // far fewer stages than the critical path alone; in larger blocks the
  // walk costs a search's worth of CPU and saves little. With a device
  // floor every attempted block takes it (up to the pass budget). 0: never.
  int64_t cost_to_go_dp_max_states = 20'000;
  // With a device floor that bounds anything, a block may take this many
  // times max_open_steps before the exhaustive DP takes it (the floor pays
  // off through the cost-to-go DP; its steps are cheap next to the DP's
  // measurements).
  int64_t device_floor_steps_factor = 40;
  // With a tight device floor (one that knows the issue order, times stages
  // back to back, or charges concurrent groups their contention), blocks of
  // up to this many times max_block_states are attempted (NASNet's cells).
  int64_t device_floor_states_factor = 4;
  // A device that runs a stage's groups on cores of their own (the cpu
  // backend: Backend::cores()), 0 elsewhere (GPUs, sim). With cores >= 2 the
  // search also measures every group on one core (Stage::single_core) and
  // bounds a stage by its groups' one-core latencies over the cores, and the
  // cost to go by the remaining ops' work over the cores, under the
  // assumption that P cores never run anything more than P times faster
  // than one. 0..4096.
  int cores = 0;
  // What the device never beats (device_floor.h), declared by the latency
  // source's device model or backend; all zeros (the default): no such
  // bound. A stage of two or more groups that does not merge is bounded by
  // its launches and work, the cost to go by the remaining ops'. Exact under
  // the assumption that no stage beats the floor.
  DeviceFloor device_floor;
};

// InvalidArgument naming the field (as "bounded.<field>") when a knob is out
// of range.
Status ValidateBoundedSearchKnobs(const BoundedSearchKnobs& knobs);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_SEARCH_KNOBS_H_
