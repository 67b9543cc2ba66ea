#include "client/search_progress.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "client/job_format.h"
#include "client/ticker.h"
#include "common/strings.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::client {

namespace ios = scheduler::ios;

namespace {

// 950, 41.2k, 412k, 1.10M: three significant digits at most.
std::string CompactCount(int64_t n) {
  if (n < 1000) return StrCat(n);
  const bool millions = n >= 999'500;
  const double x = static_cast<double>(n) / (millions ? 1e6 : 1e3);
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer),
                x < 9.995   ? "%.2f%s"
                : x < 99.95 ? "%.1f%s"
                            : "%.0f%s",
                x, millions ? "M" : "k");
  return buffer;
}

}  // namespace

std::string SearchProgressText(const SearchProgress& p) {
  std::string text = StrCat("search: ", std::min(p.solved, p.blocks_total), "/", p.blocks_total,
                            " blocks solved, ");
  if (p.walk_states_walked < p.walk_states_total) {
    // A count, not a share of the time: a walk's later (larger) states take
    // far longer than its first ones.
    text += StrCat("cost-to-go DP states ", CompactCount(p.walk_states_walked), "/",
                   CompactCount(p.walk_states_total), ", ");
  }
  if (p.windows_total > 0) {
    text += StrCat(std::clamp(p.solved - p.blocks_total, 0, p.windows_total), "/", p.windows_total,
                   " boundary windows, ");
  }
  return text + StrCat(p.stages_measured, " stages measured, ", FormatSeconds(p.elapsed_s));
}

StatusOr<ios::SearchReport> SearchWithProgress(const graph::Graph& graph,
                                               const ios::SearchOptions& options,
                                               const ios::SignedLatencyFn& oracle,
                                               ProgressLines* progress) {
  using Clock = std::chrono::steady_clock;
  ios::SearchReport report;
  const Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<ios::SearchSession> session,
                   ios::SearchSession::Create(graph, options));
  const int blocks_total = static_cast<int>(session->partition().blocks.size());
  // The latency function runs on several threads at once (options.threads):
  // the count is atomic, and one thread at a time draws (the others skip).
  std::atomic<int64_t> measured{0};
  std::mutex show_mu;
  int shown_blocks = -1;
  Clock::time_point shown_at;
  auto show = [&](bool force) {
    if (progress == nullptr) return;
    std::unique_lock<std::mutex> lock(show_mu, std::defer_lock);
    if (force) {
      lock.lock();
    } else if (!lock.try_lock()) {
      return;
    }
    const Clock::time_point now = Clock::now();
    const int solved = session->solved_blocks();
    const bool block_done = solved != shown_blocks;
    if (!force && !block_done && (!progress->tty() || now - shown_at < std::chrono::milliseconds(100))) {
      return;
    }
    const ios::WalkProgress& walks = session->walk_progress();
    // Off a terminal, windows (solved past the blocks) and walks add no line
    // of their own: the last line counts the windows.
    progress->Set(0,
                  SearchProgressText(
                      {.solved = solved,
                       .blocks_total = blocks_total,
                       .windows_total = session->windows_total(),
                       .stages_measured = measured,
                       .walk_states_walked = walks.states_walked.load(std::memory_order_relaxed),
                       .walk_states_total = walks.states_total.load(std::memory_order_relaxed),
                       .elapsed_s = std::chrono::duration<double>(now - start).count()}),
                  /*significant=*/force || (block_done && solved <= blocks_total));
    shown_blocks = solved;
    shown_at = now;
  };
  show(/*force=*/true);
  // On a terminal the line's clock keeps going while nothing is measured
  // (a cost-to-go DP walk takes seconds without a measurement).
  Ticker ticker(progress != nullptr && progress->tty(), absl::Seconds(1),
                [&] { show(/*force=*/false); });
  ios::InlineSearch direct(
      [&](ios::Signature signature, const ios::Stage& stage) -> StatusOr<double> {
        show(/*force=*/false);  // a block may have been solved since the last stage
        StatusOr<double> latency = oracle(signature, stage);
        ++measured;
        return latency;
      });
  Status finished = direct.Finish(*session);
  ticker.Stop();
  show(/*force=*/true);
  if (progress != nullptr) progress->Finish();
  RETURN_IF_ERROR(finished);
  ASSIGN_OR_RETURN(report.ios, session->Result());
  report.search_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.search_threads = options.threads;
  report.device_floor = options.bounded.device_floor;
  ASSIGN_OR_RETURN(report.sequential, ios::SequentialSchedule(graph));
  RETURN_IF_ERROR(ios::CostSchedule(graph, report.sequential, oracle));
  ASSIGN_OR_RETURN(report.greedy, ios::GreedySchedule(graph, options.max_groups));
  RETURN_IF_ERROR(ios::CostSchedule(graph, report.greedy, oracle));
  return report;
}

}  // namespace iosfarm::client
