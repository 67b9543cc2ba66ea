// SearchPlaces: at most `max` jobs hold a search at once (a search holds
// server memory from its job's first enumerate until it is done,
// docs/farm.md "Server memory"); the others wait, oldest first.
//
// Thread safety: none; the FarmCoordinator's lock guards it.
#ifndef IOSFARM_SERVER_SEARCH_PLACES_H_
#define IOSFARM_SERVER_SEARCH_PLACES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <vector>

namespace iosfarm::server {

class SearchPlaces {
 public:
  explicit SearchPlaces(int max);  // max < 1 is taken as 1

  // True: `job` holds a place now. False: it waits for one.
  bool Take(int64_t job);
  // `job` ended its search or its job ended (it may also be waiting, or
  // neither): the waiting jobs that hold a place now, oldest first.
  std::vector<int64_t> Release(int64_t job);

  bool holds(int64_t job) const { return holders_.contains(job); }
  int held() const { return static_cast<int>(holders_.size()); }
  int max() const { return max_; }
  size_t waiting() const { return waiting_.size(); }

 private:
  const int max_;
  std::set<int64_t> holders_;
  std::deque<int64_t> waiting_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SEARCH_PLACES_H_
