#include "client/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace iosfarm::client {

int TerminalWidth(int fd, const EnvLookup& env) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (std::optional<std::string> columns = env("COLUMNS"); columns && !columns->empty()) {
    int value = 0;
    const char* end = columns->data() + columns->size();
    auto [ptr, error] = std::from_chars(columns->data(), end, value);
    if (error == std::errc() && ptr == end && value > 0) return value;
  }
  return kDefaultTerminalWidth;
}

std::string FitToWidth(std::string_view text, int width) {
  const size_t room = static_cast<size_t>(std::max(width, 8) - 1);
  if (text.size() <= room) return std::string(text);
  return std::string(text.substr(0, room - 3)) + "...";
}

ProgressLines::ProgressLines(std::ostream& out, bool tty, int width)
    : out_(out), tty_(tty), width_(width) {}

void ProgressLines::Set(size_t index, std::string text, bool significant) {
  if (lines_.size() <= index) lines_.resize(index + 1);
  Line& line = lines_[index];
  line.text = std::move(text);
  if (tty_) {
    Redraw();
    return;
  }
  if (!significant || (line.ever_printed && line.printed == line.text)) return;
  out_ << line.text << "\n" << std::flush;
  line.printed = line.text;
  line.ever_printed = true;
}

void ProgressLines::Redraw() {
  if (!tty_ || lines_.empty()) return;
  std::string block;
  for (size_t i = 0; i < lines_.size(); ++i) {
    block += "\r" + FitToWidth(lines_[i].text, width_) + "\033[K";
    if (i + 1 < lines_.size()) block += "\n";
  }
  if (drawn_lines_ == lines_.size() && block == on_screen_) return;
  // The cursor sits at the end of the block's last line: up to its first.
  if (drawn_lines_ > 1) out_ << "\033[" << drawn_lines_ - 1 << "A";
  out_ << block << std::flush;
  on_screen_ = std::move(block);
  drawn_lines_ = lines_.size();
}

void ProgressLines::Finish() {
  if (tty_ && drawn_lines_ > 0) out_ << "\n" << std::flush;
  lines_.clear();
  on_screen_.clear();
  drawn_lines_ = 0;
}

}  // namespace iosfarm::client
