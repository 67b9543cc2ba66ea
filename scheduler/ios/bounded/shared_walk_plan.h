// PlanSharedWalks: which blocks of one shape walk their cost-to-go DPs together
// (BoundedBlockSearch::WalkCostToGoDps) when a search solves its blocks on
// several threads (SearchSession::SolveInParallel).
//
// A walk shared by k blocks enumerates the endings and probes the table
// once for all of them; each block still bounds every ending itself. So one
// walk per shape costs the least CPU, and splitting a shape costs a walk
// more, which pays only where that one piece would hold up the other
// threads. The plan starts from one piece per shape and splits the
// costliest in two while it is more than a thread's share of the whole,
// keeping the plan of the least longest thread (pieces go to the threads
// costliest first, each to the one free first, as RunOnThreads hands them
// out) plus a thread's share of the whole: a split must shorten the wait by
// more than the CPU it adds per thread.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_SHARED_WALK_PLAN_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_SHARED_WALK_PLAN_H_

#include <cstddef>
#include <vector>

namespace iosfarm::scheduler::ios {

// A cost-to-go DP walk shared by k blocks costs about 1 + kSharedBoundShare *
// (k - 1) walks of one (as NASNet-A's cells under sim:h100 cost).
inline constexpr double kSharedBoundShare = 0.25;

// The cost of a piece of blocks of one shape (indices whose walk alone
// costs weight[index], about the same for each) walking together.
double SharedWalkCost(const std::vector<size_t>& piece, const std::vector<double>& weight);

// The longest thread's load when pieces of these costs go to `threads`
// threads, costliest first, each to the thread free first.
double Makespan(std::vector<double> costs, int threads);

// The pieces: `shapes` (indices of blocks of one shape each, in block
// order; a shape's pieces keep that order) split as above for `threads`.
std::vector<std::vector<size_t>> PlanSharedWalks(std::vector<std::vector<size_t>> shapes,
                                                 const std::vector<double>& weight, int threads);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_SHARED_WALK_PLAN_H_
