// Options of an IOS search.
#ifndef IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
#define IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "scheduler/ios/device_floor.h"

namespace iosfarm::scheduler::ios {

// How much work and memory a search may spend, checked as it goes (every DP
// state, and every 64 Ki endings or enumeration steps inside one state). A pass is one run of the
// block DP over one block or boundary window. 0 disables a limit.
//
// Past a per-pass limit the block is not given up: it is split into blocks of
// at most 70 % of its size (the size cut of blocks.h) and those are solved
// instead, down to `min_block_ops`; a boundary window over the budget is
// skipped (its stages stay as the blocks had them). Past the total limit, or
// when a block of min_block_ops is still over a per-pass limit, the search
// fails with ResourceExhausted naming the budget (IsSearchBudgetError).
struct SearchBudget {
  int64_t max_states_per_pass = 4'000'000;
  // (state, ending) pairs evaluated in one pass (IOS's transitions).
  int64_t max_transitions_per_pass = 1'000'000'000;
  // Steps of the ending enumeration in one pass (it can search long for few
  // endings among many independent ops). A few ns each.
  int64_t max_steps_per_pass = 20'000'000'000;
  // The pass's tables (states, endings, groups) plus what its latency source
  // holds for it (queued stage requests).
  int64_t max_bytes_per_pass = int64_t{1} << 30;
  // Transitions of every pass of the search together.
  int64_t max_transitions_total = 0;
  // Stage signatures whose latency the session holds at once (known, or
  // waiting to be measured; about 25 bytes each). Without a latency cache
  // limit that is every signature of the search. 0: no limit.
  int64_t max_signatures_total = 0;
  // For callers that can hand a latency back again (a farm job looks it up
  // in its database): when the session's latency table grows past this many
  // bytes, it forgets the known latencies that no block still waiting needs
  // (a later block that looks one up again gets a request for it, answered
  // from the database). The table then counts against max_bytes_per_pass, so
  // that limit bounds everything the search holds. 0: keep every latency
  // (a search that measures on the spot must not forget: it would measure
  // again).
  int64_t latency_cache_bytes = 0;
  int min_block_ops = 4;
};

// A ResourceExhausted error that says a search budget ran out (the message
// names which), and the test for it.
Status SearchBudgetError(const std::string& message);
bool IsSearchBudgetError(const Status& status);

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
  // The exhaustive DP (block_dp.h) looks up every candidate stage of every
  // block: the reference, and what IOS does. The default bounded search
  // (bounded_block_search.h) measures only the stages that can still change
  // the optimum and finds the same latency wherever no stage is faster than
  // its slowest group alone (the assumption stated there).
  bool exhaustive = false;
  // Bounded search: a concurrent stage of three or more groups (not
  // mergeable) is also bounded by the stages of some of its groups measured
  // so far (adding a group never makes a stage faster). Off: its group and
  // floor bounds only. Real measurements break this part most often
  // (bound_audit.h's sub_below: the cpu backend's, 2026-11-30).
  bool sub_stage_bound = true;
  // Bounded search: while a block waits for a latency, the latencies of its
  // next `lookahead` candidates are requested too, so that a farm's batches
  // are wide enough for several GPUs (more of them turn out not to matter
  // the wider it is). 0..1'000'000.
  int lookahead = 16;
  // Bounded search: open-list steps one block may take before the
  // exhaustive DP solves that block instead (where the bounds are too loose
  // to save CPU; the DP measures every candidate stage of it). 0: never.
  int64_t bounded_steps_per_block = 50'000;
  // Bounded search: a block with more DP states than this (CountStates)
  // goes to the exhaustive DP without an attempt. Every block that large
  // in the zoo went past bounded_steps_per_block (NASNet's cells, about
  // 146 k states: the attempts cost about a tenth of NASNet-A's search),
  // RandWire's blocks, up to 89 k, are attempted and some solved. The
  // schedule is the same either way (both are exact); a block the
  // bounded search would have solved costs more measurements. With a device
  // floor that knows the backend's issue order the limit is four times this
  // (its bound DP solves NASNet's cells from about 1-170 k measurements each
  // under sim:h100). 0: never.
  int64_t bounded_max_states = 100'000;
  // Bounded search: a block of at most this many DP states (CountStates)
  // takes as its cost to go the DP over its state graph with every stage
  // weighed by its group bound (the shortest remaining schedule if every
  // stage cost its bound), not only the critical path: one walk of the
  // block before the search, which then measures far fewer stages
  // (inception_v3, 2 cores: 3.6x fewer than exhaustive under the analytic
  // oracle, 10x under sim:h100, 3.9-4.9x on the cpu backend in three runs;
  // docs/benchmarks.md)
  // and finds the same latency (the bound is consistent under the same
  // assumption). Larger blocks (RandWire's, NASNet's cells) keep the
  // critical path: there the walk costs a search's worth of CPU and saves
  // little (bounded_block_search.h). 0: never.
  int64_t bound_dp_max_states = 20'000;
  // Bounded search, calibrated floor (BoundedSearchOptions::floor_samples;
  // 0: off): a block of more than floor_min_states DP states, or one whose
  // exact bounded search went over bounded_steps_per_block, first measures
  // this many sampled stages and bounds every concurrent stage also by a
  // lower envelope fitted to them (stage_floor.h). Such a block is not
  // handed to the exhaustive DP for its size (bounded_max_states), its cost
  // to go is the bound DP whatever its size (bound_dp_max_states), up to
  // the pass budget, and it may take 40 times bounded_steps_per_block
  // before the DP solves it. The search then runs on one thread. It gives
  // up exactness: a stage the envelope overestimates can be kept off the
  // schedule. Measured with 128 samples (analytic oracle,
  // docs/benchmarks.md, 2026-11-28): RandWire 21,299 stages instead of
  // 1.07 M at the exhaustive latency, nasnet_a 27,714 instead of 8.0 M,
  // nasnet_a_mobile 79,833 instead of 7.9 M at 0.68 % more; 1.2x fewer on
  // RandWire under sim:h100.
  // 0..100'000.
  int floor_samples = 0;
  // With floor_samples: blocks of more DP states than this take the floor
  // from the start (0: every block); smaller ones only when the exact search
  // hands them over. inception_v3's blocks (at most a few hundred states)
  // stay exact. >= 0.
  int64_t floor_min_states = 2'000;
  // Bounded search on a device that runs a stage's groups on cores of their
  // own (the cpu backend: Backend::cores()), 0 elsewhere (GPUs, sim). With
  // cores >= 2 the search also measures every group on one core
  // (Stage::single_core) and bounds a stage by its groups' one-core
  // latencies over the cores, and the cost to go by the remaining ops' work
  // over the cores, under the assumption that P cores never run anything
  // more than P times faster than one (bounded_block_search.h). 0..4096.
  int cores = 0;
  // Bounded search: what the device never beats (device_floor.h), declared
  // by the latency source's device model (the sim backend, the analytic
  // oracle) or measured; all zeros (the default): no such bound. A stage of
  // two or more groups that does not merge is bounded by its launches and
  // work, the cost to go by the remaining ops', so that stages of many small
  // kernels, which the slowest group bounds badly, are bounded well.
  // Exact under the assumption that no stage beats the floor
  // (bounded_block_search.h). With a floor, a block the search attempts
  // (of at most bounded_max_states, four times that with an issue order)
  // takes the bound DP as its cost to go at
  // any size (unless bound_dp_max_states is 0) and 40 times
  // bounded_steps_per_block before the exhaustive DP takes it.
  DeviceFloor device_floor;
  // Threads that solve blocks side by side when the search measures on the
  // spot (SearchSession::RunInline, RunSearch), 1..256. Each solves whole
  // blocks (and boundary windows; blocks of one shape together, SolveBlocks)
  // with its own tables, so each may hold up to budget.max_bytes_per_pass
  // (up to 3.5 times that in a walk of six blocks of one shape, block_dp.h;
  // NASNet-A's six normal cells: 1.8 GiB);
  // the latency function is then called from several of them at once (never
  // twice for one signature) and must be thread-safe (a backend profiles one
  // stage at a time itself, backend.h). The schedule and every statistic but
  // the shared walks' counts are the same as with one thread, which walks
  // the bound DPs of a shape's blocks together too (search_session.h; the
  // latency function must give a signature the same latency whenever asked,
  // as the simulated and analytic ones do). Searches driven by NextUnknown
  // (a farm job), and searches with a total transitions budget or a latency
  // cache limit, use one thread.
  int threads = 1;
  // Work and memory bounds (the largest zoo block at r=3, s=8 needs 0.15 M
  // states per pass, well inside the defaults).
  SearchBudget budget;
};

// InvalidArgument naming the field when an option is out of range.
Status ValidateSearchOptions(const SearchOptions& options);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
