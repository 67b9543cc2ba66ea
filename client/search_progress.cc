#include "client/search_progress.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "client/job_format.h"
#include "common/strings.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/direct_oracle.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::client {

namespace ios = scheduler::ios;

std::string SearchProgressText(int solved, int blocks_total, int windows_total,
                               int64_t stages_measured, double elapsed_s) {
  std::string text =
      StrCat("search: ", std::min(solved, blocks_total), "/", blocks_total, " blocks solved, ");
  if (windows_total > 0) {
    text += StrCat(std::clamp(solved - blocks_total, 0, windows_total), "/", windows_total,
                   " boundary windows, ");
  }
  return text + StrCat(stages_measured, " stages measured, ", FormatSeconds(elapsed_s));
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
    // Off a terminal, windows (solved past the blocks) add no line of their
    // own: the last line counts them.
    progress->Set(0,
                  SearchProgressText(solved, blocks_total, session->windows_total(), measured,
                                     std::chrono::duration<double>(now - start).count()),
                  /*significant=*/force || (block_done && solved <= blocks_total));
    shown_blocks = solved;
    shown_at = now;
  };
  show(/*force=*/true);
  ios::DirectOracle direct(
      [&](ios::Signature signature, const ios::Stage& stage) -> StatusOr<double> {
        show(/*force=*/false);  // a block may have been solved since the last stage
        StatusOr<double> latency = oracle(signature, stage);
        ++measured;
        return latency;
      });
  Status finished = direct.Finish(*session);
  show(/*force=*/true);
  if (progress != nullptr) progress->Finish();
  RETURN_IF_ERROR(finished);
  ASSIGN_OR_RETURN(report.ios, session->Result());
  report.search_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.search_threads = options.threads;
  report.device_floor = options.device_floor;
  ASSIGN_OR_RETURN(report.sequential, ios::SequentialSchedule(graph));
  RETURN_IF_ERROR(ios::CostSchedule(graph, report.sequential, oracle));
  ASSIGN_OR_RETURN(report.greedy, ios::GreedySchedule(graph, options.max_groups));
  RETURN_IF_ERROR(ios::CostSchedule(graph, report.greedy, oracle));
  return report;
}

}  // namespace iosfarm::client
