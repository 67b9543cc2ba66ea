#include "client/progress_line.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/search_progress.h"

namespace iosfarm::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(TerminalWidthTest, FallsBackToColumnsThenEighty) {
  // /dev/null is no terminal: ioctl fails.
  const int fd = open("/dev/null", O_WRONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(TerminalWidth(fd, Env({{"COLUMNS", "132"}})), 132);
  EXPECT_EQ(TerminalWidth(fd, Env({})), 80);
  EXPECT_EQ(TerminalWidth(fd, Env({{"COLUMNS", "wide"}})), 80);
  EXPECT_EQ(TerminalWidth(fd, Env({{"COLUMNS", "0"}})), 80);
  EXPECT_EQ(TerminalWidth(fd, Env({{"COLUMNS", "100x"}})), 80);
  close(fd);
}

TEST(FitToWidthTest, CutsToOneLessThanTheWidth) {
  EXPECT_EQ(FitToWidth("short", 80), "short");
  const std::string long_line(150, 'x');
  EXPECT_EQ(FitToWidth(long_line, 100).size(), 99u);
  EXPECT_EQ(FitToWidth(long_line, 100).substr(96), "...");
  EXPECT_EQ(FitToWidth(std::string(99, 'y'), 100), std::string(99, 'y'));
  EXPECT_EQ(FitToWidth(std::string(100, 'y'), 100).size(), 99u);
  EXPECT_EQ(FitToWidth(long_line, 0).size(), 7u);  // absurd widths count as 8
}

// Every line the terminal would show, each no wider than `width` - 1: the
// text between carriage returns / newlines with escape sequences removed.
std::vector<std::string> VisibleSegments(const std::string& text) {
  std::vector<std::string> segments(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033') {
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    } else if (text[i] == '\r' || text[i] == '\n') {
      segments.emplace_back();
    } else {
      segments.back() += text[i];
    }
  }
  return segments;
}

TEST(ProgressLinesTest, TerminalLinesNeverWrapAndRedrawInPlace) {
  std::ostringstream out;
  ProgressLines lines(out, /*tty=*/true, /*width=*/100);
  const std::string long_text = "job 7 running " + std::string(200, '#');
  lines.Set(0, long_text);
  lines.Set(0, long_text + " more");
  lines.Finish();
  const std::string text = out.str();
  for (const std::string& segment : VisibleSegments(text)) EXPECT_LE(segment.size(), 99u);
  // One line redrawn: carriage returns and clear-to-end, one newline at the end.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_THAT(text, HasSubstr("\r"));
  EXPECT_THAT(text, HasSubstr("\033[K"));
  EXPECT_THAT(text, Not(HasSubstr("\033[1A")));  // never moves up over one line
}

TEST(ProgressLinesTest, TerminalSkipsARedrawThatChangesNothing) {
  std::ostringstream out;
  ProgressLines lines(out, /*tty=*/true, 80);
  lines.Set(0, "same");
  const std::string once = out.str();
  lines.Set(0, "same");
  lines.Redraw();
  EXPECT_EQ(out.str(), once);
}

TEST(ProgressLinesTest, TerminalBlockOfSeveralLinesMovesUpOverItself) {
  std::ostringstream out;
  ProgressLines lines(out, /*tty=*/true, 40);
  lines.Set(0, "job 1 running " + std::string(100, '.'));
  lines.Set(1, "job 2 queued");
  const size_t before = out.str().size();
  lines.Set(0, "job 1 succeeded");
  const std::string redraw = out.str().substr(before);
  // Two lines on screen, none wrapped: up exactly one line to the first.
  EXPECT_THAT(redraw, ::testing::StartsWith("\033[1A\r"));
  EXPECT_EQ(std::count(redraw.begin(), redraw.end(), '\n'), 1);
  for (const std::string& segment : VisibleSegments(out.str())) EXPECT_LE(segment.size(), 39u);
}

TEST(ProgressLinesTest, PlainLinesOnlyWhenSignificantAndNeverRepeated) {
  std::ostringstream out;
  ProgressLines lines(out, /*tty=*/false, 20);
  lines.Set(0, "job 7 queued");
  lines.Set(0, "job 7 queued");                       // a repeat: nothing
  lines.Set(0, "job 7 running 1s", /*significant=*/false);  // not asked: nothing
  lines.Set(0, "job 7 running 2s with a long text beyond the width");
  lines.Redraw();  // nothing off a terminal
  lines.Finish();
  EXPECT_EQ(out.str(),
            "job 7 queued\n"
            "job 7 running 2s with a long text beyond the width\n");  // not cut: a log keeps all
}

TEST(SearchProgressTextTest, CountsWalksWhileTheyRunAndWindowsOnceThereAreSome) {
  EXPECT_EQ(SearchProgressText({.solved = 3,
                                .blocks_total = 12,
                                .stages_measured = 140,
                                .walk_states_walked = 500,
                                .walk_states_total = 500,
                                .elapsed_s = 12.3}),
            "search: 3/12 blocks solved, 140 stages measured, 12.3s");
  EXPECT_EQ(SearchProgressText({.solved = 3,
                                .blocks_total = 12,
                                .stages_measured = 140,
                                .walk_states_walked = 499,
                                .walk_states_total = 500,
                                .elapsed_s = 12.3}),
            "search: 3/12 blocks solved, cost-to-go DP states 499/500, 140 stages measured, 12.3s");
  EXPECT_EQ(SearchProgressText({.solved = 0,
                                .blocks_total = 27,
                                .stages_measured = 382,
                                .walk_states_walked = 41'234,
                                .walk_states_total = 1'102'000,
                                .elapsed_s = 2}),
            "search: 0/27 blocks solved, cost-to-go DP states 41.2k/1.10M, 382 stages measured, 2.0s");
  EXPECT_EQ(SearchProgressText({.solved = 0,
                                .blocks_total = 27,
                                .walk_states_walked = 412'345,
                                .walk_states_total = 999'499,
                                .elapsed_s = 2}),
            "search: 0/27 blocks solved, cost-to-go DP states 412k/999k, 0 stages measured, 2.0s");
  // Every block solved, two of five windows.
  EXPECT_EQ(SearchProgressText({.solved = 14,
                                .blocks_total = 12,
                                .windows_total = 5,
                                .stages_measured = 150,
                                .elapsed_s = 14.1}),
            "search: 12/12 blocks solved, 2/5 boundary windows, 150 stages measured, 14.1s");
  EXPECT_EQ(SearchProgressText({.solved = 12,
                                .blocks_total = 12,
                                .windows_total = 5,
                                .stages_measured = 150,
                                .elapsed_s = 14.1}),
            "search: 12/12 blocks solved, 0/5 boundary windows, 150 stages measured, 14.1s");
}

}  // namespace
}  // namespace iosfarm::client
