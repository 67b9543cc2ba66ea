#include "scheduler/ios/bounded/bounded_block_search.h"

#include "common/strings.h"
#include "scheduler/ios/bounded/a_star_expansion.h"
#include "scheduler/ios/bounded/a_star_search.h"

namespace iosfarm::scheduler::ios {

using a_star::Search;

namespace {

template <int W>
StatusOr<std::unique_ptr<CostToGoDpWalkInProgress>> StartWalkOf(
    absl::Span<BoundedBlockSearch* const> searches) {
  std::vector<Search<W>*> typed;
  for (BoundedBlockSearch* search : searches) {
    auto* of_width = dynamic_cast<Search<W>*>(search);
    if (of_width == nullptr) {
      return absl::InvalidArgumentError("WalkCostToGoDps: blocks of different sizes");
    }
    typed.push_back(of_width);
  }
  return std::unique_ptr<CostToGoDpWalkInProgress>(Search<W>::StartTogether(typed));
}

}  // namespace

Status BoundedBlockSearch::WalkCostToGoDps(absl::Span<BoundedBlockSearch* const> searches) {
  ASSIGN_OR_RETURN(std::unique_ptr<CostToGoDpWalkInProgress> walk, StartCostToGoDpWalk(searches));
  if (walk != nullptr) walk->Continue(nullptr);
  return absl::OkStatus();
}

StatusOr<std::unique_ptr<CostToGoDpWalkInProgress>> BoundedBlockSearch::StartCostToGoDpWalk(
    absl::Span<BoundedBlockSearch* const> searches) {
  if (searches.empty()) return nullptr;
  for (size_t i = 0; i < searches.size(); ++i) {
    if (!searches[i]->paused_before_cost_to_go_dp()) {
      return absl::InvalidArgumentError(
          StrCat("WalkCostToGoDps: search ", i, " is not paused before its cost-to-go DP"));
    }
    if (!SameShape(searches[0]->block(), searches[i]->block())) {
      return absl::InvalidArgumentError(
          StrCat("WalkCostToGoDps: block ", i, " is not of the first one's shape"));
    }
  }
  switch (searches[0]->block().words()) {
    case 1:
      return StartWalkOf<1>(searches);
    case 2:
      return StartWalkOf<2>(searches);
    case 4:
      return StartWalkOf<4>(searches);
    case 8:
      return StartWalkOf<8>(searches);
    default:
      return StartWalkOf<16>(searches);
  }
}

StatusOr<std::unique_ptr<BoundedBlockSearch>> BoundedBlockSearch::Create(
    const BlockGraph& block, const BoundedSearchOptions& options) {
  if (options.dp.bounds.max_group_ops < 1 || options.dp.bounds.max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("r and s must be >= 1, got r=",
                                             options.dp.bounds.max_group_ops,
                                             " s=", options.dp.bounds.max_groups));
  }
  if (options.lookahead < 0) {
    return absl::InvalidArgumentError(StrCat("lookahead must be >= 0, got ", options.lookahead));
  }
  switch (block.words()) {
    case 1:
      return std::unique_ptr<BoundedBlockSearch>(new Search<1>(block, options));
    case 2:
      return std::unique_ptr<BoundedBlockSearch>(new Search<2>(block, options));
    case 4:
      return std::unique_ptr<BoundedBlockSearch>(new Search<4>(block, options));
    case 8:
      return std::unique_ptr<BoundedBlockSearch>(new Search<8>(block, options));
    default:
      return std::unique_ptr<BoundedBlockSearch>(new Search<16>(block, options));
  }
}

}  // namespace iosfarm::scheduler::ios
