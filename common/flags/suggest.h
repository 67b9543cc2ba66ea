// "Did you mean ...?" for mistyped subcommands and flags.
#ifndef IOSFARM_COMMON_FLAGS_SUGGEST_H_
#define IOSFARM_COMMON_FLAGS_SUGGEST_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iosfarm {

// Levenshtein distance (insertions, deletions, substitutions) of `a` and `b`.
size_t EditDistance(std::string_view a, std::string_view b);

// The name in `names` nearest to `word` by EditDistance, when it is near
// enough to be a typo: at most 2 edits, and at most half of `word`'s
// length. The first of equally near names wins. nullopt otherwise.
std::optional<std::string> NearestName(std::string_view word,
                                       const std::vector<std::string>& names);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_FLAGS_SUGGEST_H_
