#include "worker/backends/sim/stage_simulator.h"

#include <algorithm>
#include <limits>

namespace iosfarm::worker::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Stream {
  const std::vector<SimKernel>* kernels = nullptr;
  std::vector<double> issued_at;  // issue completion time of each kernel
  size_t next = 0;                // first kernel not yet finished
  bool running = false;
  double remaining_us = 0;        // work left of the running kernel (full-device us)

  bool done() const { return next == kernels->size(); }
};

// Issue completion times, round-robin over the groups.
void IssueKernels(std::vector<Stream>& streams, double launch_us) {
  double clock = 0;
  for (size_t position = 0;; ++position) {
    bool any = false;
    for (Stream& s : streams) {
      if (position < s.kernels->size()) {
        clock += launch_us;
        s.issued_at.push_back(clock);
        any = true;
      }
    }
    if (!any) break;
  }
}

}  // namespace

double SimulateStageUs(const GroupKernels& groups, const SimDeviceModel& model) {
  std::vector<Stream> streams(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) streams[g].kernels = &groups[g];
  // Back to back, the run's kernels are issued while the run before
  // executes: the device finds them all issued.
  IssueKernels(streams, model.back_to_back ? 0.0 : model.kernel_launch_us);
  double issue_us = 0;
  if (model.back_to_back) {
    for (const auto& group : groups) issue_us += model.kernel_launch_us * group.size();
  }

  const double sms = static_cast<double>(model.sm_count);
  double now = 0;
  while (true) {
    // Start every kernel that is issued and whose stream is idle.
    double next_issue = kInfinity;
    double demand = 0;
    bool any_left = false;
    for (Stream& s : streams) {
      if (s.done()) continue;
      any_left = true;
      if (!s.running) {
        if (s.issued_at[s.next] <= now) {
          s.running = true;
          s.remaining_us = (*s.kernels)[s.next].work_us;
        } else {
          next_issue = std::min(next_issue, s.issued_at[s.next]);
          continue;
        }
      }
      demand += (*s.kernels)[s.next].sm_demand;
    }
    if (!any_left) break;
    if (demand == 0) {  // nothing running: wait for the next issue
      now = next_issue;
      continue;
    }
    // Share the SMs; find the next event.
    const double share = demand <= sms ? 1.0 : sms / demand;
    double step = next_issue - now;
    for (const Stream& s : streams) {
      if (!s.running) continue;
      const double rate = (*s.kernels)[s.next].sm_demand * share / sms;
      step = std::min(step, s.remaining_us / rate);
    }
    // Advance; a kernel whose work is (numerically) used up finishes.
    now += step;
    for (Stream& s : streams) {
      if (!s.running) continue;
      const SimKernel& k = (*s.kernels)[s.next];
      const double rate = k.sm_demand * share / sms;
      s.remaining_us -= rate * step;
      if (s.remaining_us <= 1e-9 * (1.0 + k.work_us)) {
        s.running = false;
        ++s.next;
      }
    }
  }
  return std::max(now, issue_us) + model.stage_sync_us;
}

}  // namespace iosfarm::worker::sim
