#include "server/search_places.h"

#include <algorithm>

namespace iosfarm::server {

SearchPlaces::SearchPlaces(int max) : max_(std::max(1, max)) {}

bool SearchPlaces::Take(int64_t job) {
  if (holders_.contains(job)) return true;
  if (held() < max_ && waiting_.empty()) {
    holders_.insert(job);
    return true;
  }
  if (std::find(waiting_.begin(), waiting_.end(), job) == waiting_.end()) waiting_.push_back(job);
  return false;
}

std::vector<int64_t> SearchPlaces::Release(int64_t job) {
  holders_.erase(job);
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), job), waiting_.end());
  std::vector<int64_t> started;
  while (held() < max_ && !waiting_.empty()) {
    started.push_back(waiting_.front());
    holders_.insert(waiting_.front());
    waiting_.pop_front();
  }
  return started;
}

}  // namespace iosfarm::server
