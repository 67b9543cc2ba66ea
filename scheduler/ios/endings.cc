#include "scheduler/ios/endings.h"

#include <algorithm>

#include "common/strings.h"

namespace iosfarm::scheduler::ios {
namespace {

template <int W>
std::vector<Ending> EnumerateWith(const BlockGraph& block, const std::vector<int>& remaining,
                                  const EndingBounds& bounds) {
  EndingEnumerator<W> enumerator(block, bounds);
  OpBits<W> set;
  for (int i : remaining) set.Set(i);
  std::vector<Ending> out;
  enumerator.Enumerate(set, [&](const OpBits<W>& ops, const EndingGroup<W>* groups,
                                int num_groups) {
    Ending ending;
    ops.ForEach([&](int i) { ending.ops.push_back(i); });
    for (int g = 0; g < num_groups; ++g) {
      std::vector<int> group;
      groups[g].ops.ForEach([&](int i) { group.push_back(i); });
      ending.groups.push_back(std::move(group));
    }
    std::sort(ending.groups.begin(), ending.groups.end());
    out.push_back(std::move(ending));
  });
  std::sort(out.begin(), out.end(),
            [](const Ending& a, const Ending& b) { return a.ops < b.ops; });
  return out;
}

}  // namespace

StatusOr<std::vector<Ending>> EnumerateEndings(const BlockGraph& block,
                                               const std::vector<int>& remaining,
                                               const EndingBounds& bounds) {
  if (bounds.max_group_ops < 1 || bounds.max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("ending bounds must be >= 1, got r=",
                                             bounds.max_group_ops, " s=", bounds.max_groups));
  }
  for (int i : remaining) {
    if (i < 0 || i >= block.size()) {
      return absl::InvalidArgumentError(StrCat("op index ", i, " out of range"));
    }
  }
  switch (block.words()) {
    case 1:
      return EnumerateWith<1>(block, remaining, bounds);
    case 2:
      return EnumerateWith<2>(block, remaining, bounds);
    case 4:
      return EnumerateWith<4>(block, remaining, bounds);
    case 8:
      return EnumerateWith<8>(block, remaining, bounds);
    default:
      return EnumerateWith<16>(block, remaining, bounds);
  }
}

}  // namespace iosfarm::scheduler::ios
