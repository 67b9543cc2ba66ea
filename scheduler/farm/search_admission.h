// SearchAdmission: which jobs hold one of the farm's search places, shared
// in time (FarmCoordinator's), as a pure state machine. It reads no clock
// (the caller passes the time) and runs nothing.
//
// A search holds server memory from its job's first enumerate until it is
// done, so at most `places` jobs search at once, plus `first_turn_places`
// jobs that have never had a turn; the others wait. A place is not held
// until the search ends: a holder whose turn is over and that a waiting job
// outranks gives its place back at its next safe point (JobLifecycle::Yield:
// once nothing of it is out, its search is dropped and resumes later from
// the latency database, measuring nothing twice) and waits again. A turn
// lasts at least min_turn_s x 2^k for a job that has yielded k times: a
// resumed search first redoes the DP work of its earlier turns (its
// latencies come from the database), and with turns that double that redone
// work never exceeds the turn, so every search keeps advancing.
//
// First turns. A job that never had a turn, finding every place held, takes
// a first-turn place if one is free: most searches of a farm are short (a
// squeezenet search is milliseconds of DP and tens of stages) and end within
// it, so they never wait behind the long ones, whatever their estimate
// said. A first-turn holder moves to a place as soon as one frees (oldest
// first), and yields once its min_turn_s is over while another job that
// never had a turn waits (of at least its priority); it then waits as any
// yielded job does. First-turn places go only to jobs that never had a turn.
//
// The order, best first, between two waiting jobs:
//   1. higher priority;
//   2. overdue first: a job that has waited max_wait_s or more goes before
//      any job that has waited less, the longest waiting first — so no job
//      waits without bound behind a stream of smaller ones;
//   3. the owner that holds fewer places now (fair shares between owners);
//   4. fewer expected stages to measure (SearchCandidate::expected_stages);
//   5. the one that has waited longer (then the smaller job id).
// A waiting job outranks a holder (which is never overdue) by the same
// order, with three limits that keep places from changing hands back and
// forth: only a job that never had a turn takes a place by being overdue (a
// job that yielded is first in line once overdue, and waits for a place to
// free); owners count as unequal only when the holder's owner holds at least
// two places more than the waiting job's; and expected stages only when the
// waiting job expects fewer than half of what the holder has left.
//
// So a job waits for its first turn at most max_wait_s, plus what is left of
// the shortest minimum turn among the holders, plus the time that holder
// takes to reach its safe point, unless jobs of higher priority or overdue
// longer go first; with first-turn places and fewer new jobs than they are,
// at most what is left of a first turn plus a safe point (docs/farm.md,
// "Search places").
//
// Thread safety: none; one owner (the coordinator's lock guards it).
#ifndef IOSFARM_SCHEDULER_FARM_SEARCH_ADMISSION_H_
#define IOSFARM_SCHEDULER_FARM_SEARCH_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace iosfarm::scheduler::farm {

struct AdmissionRules {
  int places = 6;             // searches at once (< 1 is taken as 1)
  int first_turn_places = 0;  // more, for first turns only (< 0 is taken as 0)
  double min_turn_s = 5;   // a holder's first turn at least; doubling per yield
  double max_wait_s = 60;  // past this a waiting job is overdue (rule 2)
};

// What the order reads of a job.
struct SearchCandidate {
  int priority = 0;
  std::string owner;
  double expected_stages = 0;  // stages it is expected to measure, from now
};

class SearchAdmission {
 public:
  explicit SearchAdmission(AdmissionRules rules);

  // `job` asks for a place at `now_s`. True: it holds one now (or already
  // did). False: it waits (asking again while waiting only updates its
  // candidate; its wait keeps counting from the first ask).
  bool Request(int64_t job, const SearchCandidate& candidate, double now_s);
  // `job`'s search ended, or its job ended (it may hold a place, wait, or
  // neither): the jobs that hold a place now, in the order they got it.
  std::vector<int64_t> Release(int64_t job, double now_s);
  // `job` holds a place, its minimum turn is over and the best waiting job
  // outranks it (`candidate`: what it has left). The caller then asks the
  // job to yield (JobLifecycle::Yield) and calls Yielded once it has.
  bool ShouldYield(int64_t job, const SearchCandidate& candidate, double now_s) const;
  // `job` gave its place back to wait again from `now_s` (its candidate
  // updated): the jobs that hold a place now (never `job` itself while
  // another waits that it does not outrank).
  std::vector<int64_t> Yielded(int64_t job, const SearchCandidate& candidate, double now_s);

  bool holds(int64_t job) const { return holders_.contains(job); }
  // `job` holds a first-turn place (not one of the `places`).
  bool holds_first_turn(int64_t job) const {
    auto it = holders_.find(job);
    return it != holders_.end() && it->second.first_turn_place;
  }
  bool waits(int64_t job) const { return waiting_.contains(job); }
  int held() const { return static_cast<int>(holders_.size()); }  // both kinds
  int places() const { return rules_.places; }
  int first_turn_places() const { return rules_.first_turn_places; }
  size_t waiting() const { return waiting_.size(); }
  const AdmissionRules& rules() const { return rules_; }
  // 1 for the waiting job that gets the next place, 2 for the one after, ...;
  // nullopt when `job` does not wait.
  std::optional<int> QueuePosition(int64_t job, double now_s) const;

 private:
  struct Entry {
    SearchCandidate candidate;
    double since_s = 0;  // waiting since, or holding since
    int yields = 0;      // turns given back so far
    bool first_turn_place = false;  // holds a first-turn place
  };
  double MinTurn(const Entry& holder) const;
  // a waits (a_id) and goes before b, which waits too.
  bool Before(int64_t a_id, const Entry& a, int64_t b_id, const Entry& b, double now_s) const;
  bool Overdue(const Entry& e, double now_s) const {
    return now_s - e.since_s >= rules_.max_wait_s;
  }
  int HeldBy(const std::string& owner) const;
  // The waiting job that goes first, or nullopt; with `first_turns_only`
  // among the jobs that never had a turn.
  std::optional<int64_t> Best(double now_s, bool first_turns_only = false) const;
  int HeldFirstTurns() const;
  // Moves first-turn holders to free places, then grants free places and
  // first-turn places to the best waiting jobs.
  std::vector<int64_t> Fill(double now_s);

  AdmissionRules rules_;
  std::map<int64_t, Entry> holders_;
  std::map<int64_t, Entry> waiting_;
};

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_SEARCH_ADMISSION_H_
