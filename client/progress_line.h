// Progress lines for people: `watch`, `submit --wait`, `tune`, `retune --wait`
// and `search` show what is going on, on stderr.
//
// ProgressLines keeps a block of lines (one per job, or one for a search).
// On a terminal every line is cut to the terminal's width (it never wraps, so
// redrawing cannot leave a trail) and the block is redrawn in place: "\r",
// the text, "\033[K" (clear to the end of the line), with the cursor moved up
// over the block first when it has several lines. Off a terminal (a pipe, a
// log file) nothing is redrawn: Set prints a plain line only when the caller
// marks the change as significant, and never the same text twice in a row
// for one line. Thread-compatible: the owner serializes calls.
#ifndef IOSFARM_CLIENT_PROGRESS_LINE_H_
#define IOSFARM_CLIENT_PROGRESS_LINE_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "client/remote_options.h"

namespace iosfarm::client {

inline constexpr int kDefaultTerminalWidth = 80;

// Columns of the terminal on `fd` (ioctl TIOCGWINSZ), else $COLUMNS when it
// is a positive number, else 80.
int TerminalWidth(int fd, const EnvLookup& env = ProcessEnv);

// `text` cut to at most `width` - 1 characters (the last column stays free so
// that no terminal wraps), ending in "..." when it was cut. Widths below 8
// count as 8.
std::string FitToWidth(std::string_view text, int width);

class ProgressLines {
 public:
  // `width`: the terminal's columns (used only when `tty`).
  ProgressLines(std::ostream& out, bool tty, int width);

  // Sets line `index` (a new index adds lines up to it) to `text`. On a
  // terminal the block is redrawn. Off a terminal the line is printed when
  // `significant` and `text` differs from the last text printed for it.
  void Set(size_t index, std::string text, bool significant = true);

  // Terminal: draws the block again (nothing when nothing changed on screen
  // since the last draw). Off a terminal: nothing.
  void Redraw();

  // Ends the display: on a terminal the block stays, the cursor moves to a
  // fresh line. Later calls of Set start a new block below.
  void Finish();

  bool tty() const { return tty_; }

 private:
  struct Line {
    std::string text;
    std::string printed;  // off a terminal: the last text printed
    bool ever_printed = false;
  };

  std::ostream& out_;
  const bool tty_;
  const int width_;
  std::vector<Line> lines_;
  std::string on_screen_;  // terminal: what the last draw wrote (the fitted block)
  size_t drawn_lines_ = 0;  // terminal: lines of the block on screen
};

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_PROGRESS_LINE_H_
