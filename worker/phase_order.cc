#include "worker/phase_order.h"

#include "common/strings.h"

namespace iosfarm::worker {
namespace {

// `text` on one line (newlines become "; ").
std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n') {
      out.append("; ");
    } else if (c != '\r') {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string_view PhaseName(const PhaseOrder& order) {
  if (std::holds_alternative<BuildOrder>(order.work)) return "build";
  if (std::holds_alternative<ProfileOrder>(order.work)) return "profile";
  return "measure";
}

bool NeedsDevice(const PhaseOrder& order) {
  return !std::holds_alternative<BuildOrder>(order.work);
}

PhaseReport FailedReport(int64_t phase_id, std::string_view phase, const Status& status) {
  PhaseReport report;
  report.phase_id = phase_id;
  report.ok = false;
  report.error = OneLine(StrCat(phase, ": ", absl::StatusCodeToString(status.code()), ": ",
                                ToStd(status.message())));
  return report;
}

}  // namespace iosfarm::worker
