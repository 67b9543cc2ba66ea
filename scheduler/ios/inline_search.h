// InlineSearch: runs a whole IOS search in one call with an in-process
// latency function (an analytic model, a local backend, a test fake).
//
// Unknown signatures are measured inline, each once; there is no
// enumerate/profile split. With SearchOptions::threads > 1 the latency
// function is called from several threads at once and must be thread-safe.
// For the batched, resumable form see SearchSession.
#ifndef IOSFARM_SCHEDULER_IOS_INLINE_SEARCH_H_
#define IOSFARM_SCHEDULER_IOS_INLINE_SEARCH_H_

#include <atomic>
#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::scheduler::ios {

class InlineSearch {
 public:
  explicit InlineSearch(SignedLatencyFn measure) : measure_(std::move(measure)) {}
  explicit InlineSearch(StageLatencyFn measure) : measure_(IgnoringSignature(std::move(measure))) {}

  // Searches `graph` (shapes inferred; it must outlive the call). Errors:
  // bad options, a cyclic graph, a block over the state cap, or the first
  // error of the latency function.
  StatusOr<SearchResult> Search(const graph::Graph& graph, const SearchOptions& options);

  // Finishes an existing session (blocks solved so far are kept).
  Status Finish(SearchSession& session);

  // Calls of the latency function so far.
  int64_t measurements() const { return measurements_.load(); }

 private:
  SignedLatencyFn measure_;
  std::atomic<int64_t> measurements_{0};
};

// InlineSearch(oracle).Search(graph, options).
StatusOr<SearchResult> RunSearch(const graph::Graph& graph, const SearchOptions& options,
                                 const StageLatencyFn& oracle);
StatusOr<SearchResult> RunSearch(const graph::Graph& graph, const SearchOptions& options,
                                 const SignedLatencyFn& oracle);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_INLINE_SEARCH_H_
