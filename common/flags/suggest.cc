#include "common/flags/suggest.h"

#include <algorithm>
#include <numeric>

namespace iosfarm {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];  // row[i-1][j]
      row[j] = std::min({up + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> NearestName(std::string_view word,
                                       const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t distance = EditDistance(word, name);
    if (distance > 2 || 2 * distance > word.size()) continue;
    if (!best || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace iosfarm
