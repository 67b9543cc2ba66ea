#include "client/job_watch.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::client {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Job JobWith(int64_t id, v1::JobState state, int blocks_done, int stages = 0) {
  v1::Job job;
  job.set_id(id);
  job.set_model_name("inception_v3");
  job.set_state(state);
  job.mutable_progress()->set_phase("profile");
  job.mutable_progress()->set_blocks_total(3);
  job.mutable_progress()->set_blocks_done(blocks_done);
  job.mutable_progress()->set_stages_profiled(stages);
  job.mutable_progress()->set_elapsed_s(5);
  job.mutable_progress()->set_eta_s(-1);
  return job;
}

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  std::function<std::chrono::steady_clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

ProgressDisplayOptions Options(bool tty, FakeClock& clock) {
  ProgressDisplayOptions options;
  options.tty = tty;
  options.width = 100;
  options.tick_thread = false;
  options.now = clock.Fn();
  return options;
}

TEST(ProgressDisplayTest, TerminalElapsedTimeTicksWithoutServerUpdates) {
  FakeClock clock;
  std::ostringstream out;
  ProgressDisplay display(out, Options(/*tty=*/true, clock));
  display.Update(JobWith(3, v1::RUNNING, 1));
  EXPECT_THAT(out.str(), HasSubstr(", 5.0s,"));
  clock.now += std::chrono::milliseconds(2500);
  display.Tick();
  EXPECT_THAT(out.str().substr(out.str().rfind('\r')), HasSubstr(", 7.5s,"));
  display.Finish();
  EXPECT_THAT(out.str(), EndsWith("\n"));
}

TEST(ProgressDisplayTest, TickThreadRedrawsOnItsOwn) {
  std::ostringstream out;
  ProgressDisplayOptions options;
  options.tty = true;
  ProgressDisplay display(out, options);
  display.Update(JobWith(3, v1::RUNNING, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  display.Finish();
  // Three draws at least: the update and two ticks, each with a later time.
  const std::string text = out.str();
  EXPECT_GE(std::count(text.begin(), text.end(), '\r'), 3) << text;
  EXPECT_THAT(text, HasSubstr(", 6."));
  EXPECT_THAT(text, HasSubstr(", 7."));
}

TEST(ProgressDisplayTest, PlainLinesOnlyWhenStateOrBlocksChange) {
  FakeClock clock;
  std::ostringstream out;
  ProgressDisplay display(out, Options(/*tty=*/false, clock));
  display.Update(JobWith(3, v1::QUEUED, 0));
  display.Update(JobWith(3, v1::RUNNING, 1, 10));
  clock.now += std::chrono::seconds(1);
  display.Update(JobWith(3, v1::RUNNING, 1, 10));  // nothing changed
  display.Update(JobWith(3, v1::RUNNING, 1, 20));  // only stages, too soon: nothing
  clock.now += std::chrono::seconds(10);
  display.Update(JobWith(3, v1::RUNNING, 1, 20));  // stages differ from the last line, 11 s on
  display.Update(JobWith(3, v1::RUNNING, 1, 30));  // only stages, too soon again: nothing
  display.Tick();                                   // nothing off a terminal
  display.Update(JobWith(3, v1::SUCCEEDED, 3, 40));
  display.Finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
  EXPECT_THAT(text, HasSubstr("1/3 blocks, 5.0s, ETA ?, profile, 20 stages profiled"));
  EXPECT_THAT(text, Not(HasSubstr("30 stages profiled")));
  EXPECT_THAT(text, HasSubstr("job 3 succeeded"));
}

TEST(ProgressDisplayTest, TerminalRedrawsSeveralJobsInPlace) {
  FakeClock clock;
  std::ostringstream out;
  ProgressDisplayOptions options = Options(/*tty=*/true, clock);
  options.width = 40;  // every line is longer: cut, never wrapped
  ProgressDisplay display(out, options);
  display.Update(JobWith(1, v1::RUNNING, 1));
  display.Update(JobWith(2, v1::QUEUED, 0));
  display.Update(JobWith(1, v1::SUCCEEDED, 3));
  display.Finish();
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("\033[1A"));  // back over the two-line block
  EXPECT_THAT(text, Not(HasSubstr("\033[2A")));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of("\r\n", start);
    if (end == std::string::npos) end = text.size();
    std::string segment = text.substr(start, end - start);
    if (size_t esc = segment.find('\033'); esc != std::string::npos) segment.resize(esc);
    EXPECT_LE(segment.size(), 39u) << segment;
    start = end + 1;
  }
}

}  // namespace
}  // namespace iosfarm::client
