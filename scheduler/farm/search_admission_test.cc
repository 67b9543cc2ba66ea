#include "scheduler/farm/search_admission.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

SearchCandidate Job(double expected_stages, std::string owner = "a", int priority = 0) {
  SearchCandidate candidate;
  candidate.expected_stages = expected_stages;
  candidate.owner = std::move(owner);
  candidate.priority = priority;
  return candidate;
}

AdmissionRules Places(int places) {
  AdmissionRules rules;
  rules.places = places;
  rules.min_turn_s = 5;
  rules.max_wait_s = 60;
  return rules;
}

TEST(SearchAdmissionTest, AtMostThePlacesHoldAndAFreedPlaceGoesToTheSmallestExpectedSearch) {
  SearchAdmission admission(Places(2));
  EXPECT_TRUE(admission.Request(1, Job(1e6), 0));
  EXPECT_TRUE(admission.Request(2, Job(1e6), 0));
  EXPECT_FALSE(admission.Request(3, Job(5e5), 1));
  EXPECT_FALSE(admission.Request(4, Job(100), 2));
  EXPECT_FALSE(admission.Request(3, Job(5e5), 3));  // asking again keeps its wait
  EXPECT_EQ(admission.held(), 2);
  EXPECT_EQ(admission.waiting(), 2u);
  EXPECT_THAT(admission.QueuePosition(4, 3), Optional(1));
  EXPECT_THAT(admission.QueuePosition(3, 3), Optional(2));
  EXPECT_EQ(admission.QueuePosition(1, 3), std::nullopt);
  EXPECT_THAT(admission.Release(1, 4), ElementsAre(4));
  EXPECT_TRUE(admission.holds(4));
  // A waiting job that ends (cancelled) gives up its wait; releasing a job
  // that holds nothing grants nothing.
  EXPECT_THAT(admission.Release(3, 5), IsEmpty());
  EXPECT_THAT(admission.Release(99, 5), IsEmpty());
  EXPECT_EQ(admission.waiting(), 0u);
  EXPECT_THAT(admission.Release(2, 6), IsEmpty());
  EXPECT_TRUE(admission.Request(5, Job(1), 7));
}

TEST(SearchAdmissionTest, PriorityWinsThenOverdueJobsGoFirstOldestFirst) {
  SearchAdmission admission(Places(1));
  EXPECT_TRUE(admission.Request(1, Job(1e6), 0));
  EXPECT_FALSE(admission.Request(2, Job(1e6), 0));          // large, waits from 0
  EXPECT_FALSE(admission.Request(3, Job(1e5), 30));         // smaller, waits from 30
  EXPECT_FALSE(admission.Request(4, Job(10, "a", 1), 50));  // higher priority
  EXPECT_FALSE(admission.Request(5, Job(10), 59));          // the smallest
  // At 59 nobody is overdue yet: priority, then the smallest.
  EXPECT_THAT(admission.QueuePosition(4, 59), Optional(1));
  EXPECT_THAT(admission.QueuePosition(5, 59), Optional(2));
  EXPECT_THAT(admission.QueuePosition(2, 59), Optional(4));
  // At 61 job 2 has waited 61 s: it goes before every job of its priority.
  EXPECT_THAT(admission.QueuePosition(2, 61), Optional(2));
  EXPECT_THAT(admission.Release(1, 61), ElementsAre(4));
  EXPECT_THAT(admission.Release(4, 62), ElementsAre(2));
  // At 95 job 3 is overdue too (65 s) and job 5 (36 s) is not.
  EXPECT_THAT(admission.Release(2, 95), ElementsAre(3));
  EXPECT_THAT(admission.Release(3, 96), ElementsAre(5));
}

TEST(SearchAdmissionTest, PlacesAreSharedBetweenOwners) {
  SearchAdmission admission(Places(4));
  for (int64_t job = 1; job <= 4; ++job) EXPECT_TRUE(admission.Request(job, Job(1e6, "a"), 0));
  // Owner a holds all four; a's smaller jobs still wait behind b's.
  EXPECT_FALSE(admission.Request(5, Job(10, "a"), 1));
  EXPECT_FALSE(admission.Request(6, Job(1e6, "b"), 2));
  EXPECT_FALSE(admission.Request(7, Job(1e6, "b"), 3));
  EXPECT_THAT(admission.QueuePosition(6, 3), Optional(1));
  // A holder of a (which holds 4) yields to b (which holds none) once its
  // minimum turn is over, whatever the sizes.
  EXPECT_FALSE(admission.ShouldYield(1, Job(10, "a"), 4));
  EXPECT_TRUE(admission.ShouldYield(1, Job(10, "a"), 6));
  EXPECT_THAT(admission.Yielded(1, Job(10, "a"), 6), ElementsAre(6));
  EXPECT_THAT(admission.Release(2, 7), ElementsAre(7));
  // Now a holds 2, b holds 2: b's holder yields to a's much smaller job,
  // and a's small job is the next to get a place.
  EXPECT_TRUE(admission.ShouldYield(6, Job(1e6, "b"), 20));
  EXPECT_THAT(admission.Release(3, 21), ElementsAre(5));
}

TEST(SearchAdmissionTest, AHolderYieldsToAMuchSmallerSearchOrAnOverdueOneAfterItsMinimumTurn) {
  SearchAdmission admission(Places(1));
  EXPECT_TRUE(admission.Request(1, Job(1e6), 0));
  EXPECT_FALSE(admission.ShouldYield(1, Job(1e6), 100));  // nobody waits
  EXPECT_FALSE(admission.Request(2, Job(6e5), 100));
  // Not under half of what the holder has left: no yield (until overdue).
  EXPECT_FALSE(admission.ShouldYield(1, Job(1e6), 101));
  EXPECT_TRUE(admission.ShouldYield(1, Job(1.3e6), 101));
  EXPECT_TRUE(admission.ShouldYield(1, Job(1e6), 160));  // job 2 overdue
  EXPECT_THAT(admission.Yielded(1, Job(9e5), 160), ElementsAre(2));
  EXPECT_TRUE(admission.waits(1));
  // Job 2's turn: job 1 (9e5) is not under half of 6e5, so job 2 keeps its
  // place past its minimum turn; job 1 yielded once, so being overdue puts
  // it first in line but takes no place.
  EXPECT_FALSE(admission.ShouldYield(2, Job(6e5), 166));
  EXPECT_FALSE(admission.ShouldYield(2, Job(6e5), 220));
  // A smaller search arrives: after the minimum turn it gets the place.
  EXPECT_FALSE(admission.Request(3, Job(100), 170));
  EXPECT_TRUE(admission.ShouldYield(2, Job(5e5), 170));
  // Lower priority never takes a place from higher.
  SearchAdmission ranked(Places(1));
  EXPECT_TRUE(ranked.Request(1, Job(1e6, "a", 2), 0));
  EXPECT_FALSE(ranked.Request(2, Job(1, "b", 0), 0));
  EXPECT_FALSE(ranked.ShouldYield(1, Job(1e6, "a", 2), 1000));
  // Higher priority takes it after the minimum turn.
  EXPECT_FALSE(ranked.Request(3, Job(1e7, "b", 3), 1000));
  EXPECT_TRUE(ranked.ShouldYield(1, Job(1e6, "a", 2), 1000));
  EXPECT_THAT(ranked.Yielded(1, Job(1e6, "a", 2), 1000), ElementsAre(3));
  EXPECT_FALSE(ranked.ShouldYield(3, Job(1e7, "b", 3), 1003));  // its minimum turn
}

TEST(SearchAdmissionTest, EachTurnOfAJobIsAtLeastTwiceItsLast) {
  SearchAdmission admission(Places(1));
  EXPECT_TRUE(admission.Request(1, Job(1e6), 0));
  EXPECT_FALSE(admission.Request(2, Job(1e6), 0));
  // Job 2 is overdue at 60: job 1 (first turn, 5 s) yields.
  EXPECT_TRUE(admission.ShouldYield(1, Job(1e6), 60));
  EXPECT_THAT(admission.Yielded(1, Job(1e6), 60), ElementsAre(2));
  EXPECT_THAT(admission.Release(2, 61), ElementsAre(1));
  // Job 1's second turn lasts 10 s at least, even against an overdue job.
  EXPECT_FALSE(admission.Request(3, Job(1), 0));
  EXPECT_FALSE(admission.ShouldYield(1, Job(1e6), 70));
  EXPECT_TRUE(admission.ShouldYield(1, Job(1e6), 71));
  EXPECT_THAT(admission.Yielded(1, Job(1e6), 71), ElementsAre(3));
  EXPECT_THAT(admission.Release(3, 72), ElementsAre(1));
  EXPECT_FALSE(admission.Request(4, Job(1), 72));
  EXPECT_FALSE(admission.ShouldYield(1, Job(1e6), 91));  // third turn: 20 s
  EXPECT_TRUE(admission.ShouldYield(1, Job(1e6), 92));
}

TEST(SearchAdmissionTest, NewJobsTakeFirstTurnPlacesBesideTheHeldOnesAndMoveUpWhenOneFrees) {
  AdmissionRules rules = Places(1);
  rules.first_turn_places = 2;
  SearchAdmission admission(rules);
  EXPECT_TRUE(admission.Request(1, Job(1e6), 0));  // the place
  EXPECT_FALSE(admission.holds_first_turn(1));
  // Every place held: new jobs take first-turn places, whatever their size.
  EXPECT_TRUE(admission.Request(2, Job(2e6), 1));
  EXPECT_TRUE(admission.Request(3, Job(50), 2));
  EXPECT_TRUE(admission.holds_first_turn(2));
  EXPECT_TRUE(admission.holds_first_turn(3));
  EXPECT_EQ(admission.held(), 3);
  EXPECT_FALSE(admission.Request(4, Job(1e6), 3));  // both first-turn places held
  // The place holder keeps its place: a new job waits for a first turn, not
  // for its place (job 4 is not under half of what job 1 has left).
  EXPECT_FALSE(admission.ShouldYield(1, Job(1e6), 10));
  // Job 3 ends within its first turn; job 4 takes its first-turn place.
  EXPECT_THAT(admission.Release(3, 4), ElementsAre(4));
  EXPECT_TRUE(admission.holds_first_turn(4));
  // A first-turn holder yields once its turn is over while a new job waits;
  // not before, and not while no new job waits.
  EXPECT_FALSE(admission.ShouldYield(2, Job(2e6), 5));
  EXPECT_FALSE(admission.ShouldYield(2, Job(2e6), 7));
  EXPECT_FALSE(admission.Request(5, Job(1e6), 7));
  EXPECT_TRUE(admission.ShouldYield(2, Job(2e6), 7));
  EXPECT_THAT(admission.Yielded(2, Job(2e6), 7), ElementsAre(5));
  // A job that had its turn waits for a place: freed first-turn places go
  // to new jobs only.
  EXPECT_THAT(admission.Release(5, 8), IsEmpty());
  EXPECT_TRUE(admission.waits(2));
  EXPECT_FALSE(admission.ShouldYield(4, Job(1e6), 20));  // only job 2 waits
  // The place frees: the oldest first-turn holder (job 4) moves to it; the
  // first-turn place it leaves is not for job 2, which still waits...
  EXPECT_THAT(admission.Release(1, 21), IsEmpty());
  EXPECT_FALSE(admission.holds_first_turn(4));
  EXPECT_TRUE(admission.holds(4));
  EXPECT_TRUE(admission.waits(2));
  // ...until that place frees.
  EXPECT_THAT(admission.Release(4, 22), ElementsAre(2));
  EXPECT_FALSE(admission.holds_first_turn(2));
  // Lower priority never takes a first turn from higher.
  SearchAdmission ranked(rules);
  EXPECT_TRUE(ranked.Request(1, Job(1e6), 0));
  EXPECT_TRUE(ranked.Request(2, Job(1e6, "a", 1), 0));
  EXPECT_TRUE(ranked.Request(3, Job(1e6, "a", 1), 0));
  EXPECT_FALSE(ranked.Request(4, Job(1, "a", 0), 0));
  EXPECT_FALSE(ranked.ShouldYield(2, Job(1e6, "a", 1), 100));
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
