#include "scheduler/ios/inline_search.h"

namespace iosfarm::scheduler::ios {

Status InlineSearch::Finish(SearchSession& session) {
  const SignedLatencyFn counted = [this](Signature signature, const Stage& stage) {
    ++measurements_;
    return measure_(signature, stage);
  };
  return session.RunInline(counted);
}

StatusOr<SearchResult> InlineSearch::Search(const graph::Graph& graph,
                                            const SearchOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<SearchSession> session,
                   SearchSession::Create(graph, options));
  RETURN_IF_ERROR(Finish(*session));
  return session->Result();
}

StatusOr<SearchResult> RunSearch(const graph::Graph& graph, const SearchOptions& options,
                                 const StageLatencyFn& oracle) {
  InlineSearch direct(oracle);
  return direct.Search(graph, options);
}

StatusOr<SearchResult> RunSearch(const graph::Graph& graph, const SearchOptions& options,
                                 const SignedLatencyFn& oracle) {
  InlineSearch direct(oracle);
  return direct.Search(graph, options);
}

}  // namespace iosfarm::scheduler::ios
