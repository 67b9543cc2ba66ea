#include "scheduler/farm/search_admission.h"

#include <algorithm>
#include <cmath>

namespace iosfarm::scheduler::farm {

SearchAdmission::SearchAdmission(AdmissionRules rules) : rules_(rules) {
  rules_.places = std::max(1, rules_.places);
  rules_.first_turn_places = std::max(0, rules_.first_turn_places);
}

int SearchAdmission::HeldFirstTurns() const {
  int held = 0;
  for (const auto& [id, entry] : holders_) held += entry.first_turn_place;
  return held;
}

double SearchAdmission::MinTurn(const Entry& holder) const {
  return rules_.min_turn_s * std::ldexp(1.0, std::min(holder.yields, 60));
}

int SearchAdmission::HeldBy(const std::string& owner) const {
  int held = 0;
  for (const auto& [id, entry] : holders_) held += entry.candidate.owner == owner;
  return held;
}

bool SearchAdmission::Before(int64_t a_id, const Entry& a, int64_t b_id, const Entry& b,
                             double now_s) const {
  if (a.candidate.priority != b.candidate.priority) {
    return a.candidate.priority > b.candidate.priority;
  }
  const bool a_overdue = Overdue(a, now_s), b_overdue = Overdue(b, now_s);
  if (a_overdue != b_overdue) return a_overdue;
  if (!a_overdue) {
    const int a_held = HeldBy(a.candidate.owner), b_held = HeldBy(b.candidate.owner);
    if (a_held != b_held) return a_held < b_held;
    if (a.candidate.expected_stages != b.candidate.expected_stages) {
      return a.candidate.expected_stages < b.candidate.expected_stages;
    }
  }
  if (a.since_s != b.since_s) return a.since_s < b.since_s;
  return a_id < b_id;
}

std::optional<int64_t> SearchAdmission::Best(double now_s, bool first_turns_only) const {
  std::optional<int64_t> best;
  for (const auto& [id, entry] : waiting_) {
    if (first_turns_only && entry.yields > 0) continue;
    if (!best || Before(id, entry, *best, waiting_.at(*best), now_s)) best = id;
  }
  return best;
}

std::vector<int64_t> SearchAdmission::Fill(double now_s) {
  int first_turns = HeldFirstTurns();
  int places_held = held() - first_turns;
  // A first-turn holder takes a freed place before any waiting job: it is
  // already searching, and its first-turn place frees for a new job.
  while (places_held < rules_.places && first_turns > 0) {
    Entry* oldest = nullptr;
    for (auto& [id, entry] : holders_) {
      if (entry.first_turn_place && (!oldest || entry.since_s < oldest->since_s)) oldest = &entry;
    }
    oldest->first_turn_place = false;
    --first_turns;
    ++places_held;
  }
  std::vector<int64_t> granted;
  auto grant = [&](int64_t job, bool first_turn_place) {
    Entry entry = waiting_.at(job);
    waiting_.erase(job);
    entry.since_s = now_s;
    entry.first_turn_place = first_turn_place;
    holders_[job] = entry;
    granted.push_back(job);
  };
  for (; places_held < rules_.places; ++places_held) {
    const std::optional<int64_t> best = Best(now_s);
    if (!best) return granted;
    grant(*best, false);
  }
  for (; first_turns < rules_.first_turn_places; ++first_turns) {
    const std::optional<int64_t> best = Best(now_s, /*first_turns_only=*/true);
    if (!best) break;
    grant(*best, true);
  }
  return granted;
}

bool SearchAdmission::Request(int64_t job, const SearchCandidate& candidate, double now_s) {
  if (holders_.contains(job)) return true;
  if (auto it = waiting_.find(job); it != waiting_.end()) {
    it->second.candidate = candidate;
  } else {
    waiting_[job] = Entry{candidate, now_s};
  }
  const std::vector<int64_t> granted = Fill(now_s);
  return std::find(granted.begin(), granted.end(), job) != granted.end();
}

std::vector<int64_t> SearchAdmission::Release(int64_t job, double now_s) {
  holders_.erase(job);
  waiting_.erase(job);
  return Fill(now_s);
}

bool SearchAdmission::ShouldYield(int64_t job, const SearchCandidate& candidate,
                                  double now_s) const {
  auto holder = holders_.find(job);
  if (holder == holders_.end() || now_s - holder->second.since_s < MinTurn(holder->second)) {
    return false;
  }
  if (holder->second.first_turn_place) {
    const std::optional<int64_t> next = Best(now_s, /*first_turns_only=*/true);
    return next && waiting_.at(*next).candidate.priority >= candidate.priority;
  }
  const std::optional<int64_t> best = Best(now_s);
  if (!best) return false;
  const Entry& waiting = waiting_.at(*best);
  if (waiting.candidate.priority != candidate.priority) {
    return waiting.candidate.priority > candidate.priority;
  }
  // A job of at least the holder's priority that never had a turn is
  // overdue (the bound on a first enumerate); a job that yielded waits for
  // a place to free, first in line once overdue, but takes none.
  for (const auto& [id, entry] : waiting_) {
    if (entry.yields == 0 && entry.candidate.priority >= candidate.priority &&
        Overdue(entry, now_s)) {
      return true;
    }
  }
  const int waiting_held = HeldBy(waiting.candidate.owner), holder_held = HeldBy(candidate.owner);
  if (holder_held >= waiting_held + 2) return true;
  if (waiting_held > holder_held) return false;
  return 2 * waiting.candidate.expected_stages < candidate.expected_stages;
}

std::vector<int64_t> SearchAdmission::Yielded(int64_t job, const SearchCandidate& candidate,
                                              double now_s) {
  int yields = 1;
  if (auto holder = holders_.find(job); holder != holders_.end()) {
    yields = holder->second.yields + 1;
    holders_.erase(holder);
  }
  waiting_[job] = Entry{candidate, now_s, yields};
  return Fill(now_s);
}

std::optional<int> SearchAdmission::QueuePosition(int64_t job, double now_s) const {
  auto it = waiting_.find(job);
  if (it == waiting_.end()) return std::nullopt;
  int position = 1;
  for (const auto& [id, entry] : waiting_) {
    position += id != job && Before(id, entry, job, it->second, now_s);
  }
  return position;
}

}  // namespace iosfarm::scheduler::farm
