// JobRunner: the search state of one farm job and the work of its server
// phases (DESIGN.md, "Data flow of one job").
//
//   enumerate (server CPU): advance the IOS search (SearchSession) with every
//     latency the database knows; collect a bounded batch of signatures that
//     nobody knows and nobody is measuring (claimed in SignatureClaims);
//     TakeBatch() then hands it out under the job's batch id;
//   build + profile (a worker): the BuildRequest TakeBatch() returned;
//   update (server CPU): ApplyProfile(batch) checks the worker's answer,
//     writes the latencies to the database and hands them to the search;
//     several batches may be out at once (JobLifecycle's parallel batches),
//     and their updates come in any order;
//   measure (a worker's GPU): once the search is done, MakeMeasure() asks for
//     the IOS, sequential and greedy schedules end to end; ApplyMeasure()
//     stores the result. The result's schedule is the IOS schedule unless a
//     baseline ran faster end to end by more than kSwitchMargin: stage
//     latencies measured one by one need not add up to a schedule's (on the
//     cpu backend they often do not), and a user should
//     get the fastest schedule that actually ran. The result says which.
//
// A signature another job is measuring is not measured twice: the job waits
// for it (Enumerate answers kWait) and enumerates again when woken.
//
// Thread safety: a JobRunner is used by one server phase at a time (a job
// has at most one enumerate or update queued or in flight; its worker phases
// use the BuildRequests TakeBatch returned, not the runner), so it has no
// lock of its own; SignatureClaims is thread-safe.
#ifndef IOSFARM_SERVER_JOB_RUNNER_H_
#define IOSFARM_SERVER_JOB_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/search_session.h"
#include "server/import_gate.h"
#include "server/job_store.h"
#include "server/latency_db.h"
#include "server/worker_protocol.h"

namespace iosfarm::server {

// Which job is measuring which signature, per device key. A job stores what
// it measured before it releases the claims (ApplyProfile), so a claim
// granted after a lookup found a signature unknown is looked up once more
// (JobRunner::Resolve): the other job may have stored it in between.
class SignatureClaims {
 public:
  virtual ~SignatureClaims() = default;
  // Claims the signatures nobody holds for `job`; returns them (a subset of
  // `signatures`, in order). Signatures `job` already holds count as claimed.
  // Virtual for tests that interleave two jobs between a lookup and a claim.
  virtual std::vector<uint64_t> Claim(const std::string& device_key, int64_t job,
                                      const std::vector<uint64_t>& signatures);
  // Releases everything `job` holds.
  void Release(int64_t job);
  // Releases those of `signatures` that `job` holds.
  void Release(const std::string& device_key, int64_t job, const std::vector<uint64_t>& signatures);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::flat_hash_map<uint64_t, int64_t>> holder_
      ABSL_GUARDED_BY(mu_);
};

// What a worker may report for one stage or schedule; anything else is a
// bad answer (the phase is retried elsewhere) and nothing of it is stored,
// so one broken worker cannot poison a device key's latencies.
inline constexpr double kMaxLatencyMs = 60'000;  // a minute per stage or schedule run
inline constexpr double kMaxCv = 100;
inline constexpr int64_t kMaxRepeats = 1'000'000;

// InvalidArgument naming `worker`, `what` and the figures unless latencies
// are finite, > 0 and <= kMaxLatencyMs, p10 <= median <= p90, cv in
// [0, kMaxCv] and repeats in [1, kMaxRepeats].
Status CheckFigures(const std::string& worker, const std::string& what, double median_ms,
                    double p10_ms, double p90_ms, double cv, int64_t repeats);

// The server's default search budget. A search holds at most
// max_bytes_per_pass (256 MiB) at any time: the tables of its running pass,
// its queued requests, the batches handed out and its latency table (known
// latencies that no waiting block needs are forgotten past 64 MiB and looked
// up in the database again when needed). With at most max_searches searches
// at once, the server's search memory is bounded by max_searches x 256 MiB
// (docs/farm.md, "Server memory"). A pass is bounded to 100 M transitions
// (seconds of one core) so that no job holds a slot for long, and a job to
// 4 G transitions in all (a few minutes).
scheduler::ios::SearchBudget FarmSearchBudget();

// Loads a stored model as a graph: zoo models are rebuilt by name at the
// row's batch, ONNX models imported from their bytes.
StatusOr<graph::Graph> LoadStoredModel(const ModelRow& model);

// A copy of `graph` without weight values (backends materialise
// deterministic weights; latency does not depend on them). Constant nodes
// keep their values.
graph::Graph WithoutWeightValues(const graph::Graph& graph);

class JobRunner {
 public:
  enum class Next { kBuild, kWait, kMeasure, kContinue };

  // `job` must carry its id, device key and options. The runner keeps
  // `graph` without its weight values (the search and the workers need only
  // its structure; the result still names the full model's digest). The
  // search keeps to `budget` (a job over it fails with a SearchBudgetError
  // naming it; with a latency cache limit the pass budget bounds all the
  // search holds, the batches handed out included), bounds stages by their
  // work over `cores` where that is 2 or more (SearchOptions::cores: the
  // device key's workers share a stage's groups over that many cores; the
  // search then also asks for each group's single-core latency) and by
  // `device_floor` where it bounds anything (SearchOptions::device_floor:
  // what the key's workers' device never beats), and
  // stops with Cancelled soon after `*stop` turns true (null: never; it must
  // outlive the runner).
  static StatusOr<std::unique_ptr<JobRunner>> Create(
      const JobRow& job, graph::Graph graph, const scheduler::ios::SearchBudget& budget, int cores,
      const scheduler::ios::DeviceFloor& device_floor, const std::atomic<bool>* stop);
  // Create with the job's model loaded from `store` (LoadStoredModel; an
  // ONNX model's import holds its bytes of `gate` while it runs, when not
  // null); NotFound when the model is not stored.
  static StatusOr<std::unique_ptr<JobRunner>> Load(JobStore& store, const JobRow& job,
                                                   const scheduler::ios::SearchBudget& budget,
                                                   int cores,
                                                   const scheduler::ios::DeviceFloor& device_floor,
                                                   const std::atomic<bool>* stop,
                                                   ImportGate* gate = nullptr);

  // The enumerate phase. kBuild: a batch of signatures to measure is full
  // (TakeBatch hands it out); kMeasure: the search is done (final schedules
  // ready); kWait: nothing to hand out now, every remaining unknown is being
  // measured by another job or is in one of this job's batches out; kContinue: the time
  // slice (> 0 s) ran out before the batch was full or the search done (the
  // batch so far is kept and filled by the next call): enumerate again (the caller
  // queues it behind other jobs' server phases, so a long search shares the
  // server's slots). A slice ends between DP passes, or inside a cost-to-go
  // DP walk between two of its states (walking(); search_session.h).
  StatusOr<Next> Enumerate(LatencyDb& store, SignatureClaims& claims, double slice_s = 0);
  // The search stopped inside a cost-to-go DP walk at its last slice's end:
  // dropping the runner now (a yield) would lose the walk's CPU, not a
  // measurement.
  bool walking() const { return session_ != nullptr && session_->walking(); }
  // The next Enumerate ends as soon as no walk is under way (the turn is
  // over: SearchSession::SetStopBetweenWalks), whatever is left of its slice.
  void StopAfterTheWalk() { stop_after_walk_ = true; }

  // Stages of the batch being filled (what kBuild found).
  int64_t batch_size() const { return static_cast<int64_t>(filling_.size()); }
  // Hands the filled batch out as batch `id` (> 0, not out already) and
  // returns what its build sends. FailedPrecondition when nothing is filled
  // or the id is taken.
  StatusOr<BuildRequest> TakeBatch(int64_t id);
  // Batches handed out whose profile is not applied yet.
  int batches_out() const { return static_cast<int>(out_.size()); }

  // The update phase of batch `id`: checks `result` (one latency per stage
  // of the batch, signatures as asked, every figure passing CheckFigures;
  // InvalidArgument naming the first problem otherwise, nothing written, the
  // batch stays out to be measured again), stores the latencies and provides
  // them to the search; the batch is no longer out and its claims are
  // released. NotFound for a batch that is not out.
  Status ApplyProfile(int64_t id, const PhaseReport& result, const std::string& worker,
                      const std::string& backend, LatencyDb& store, SignatureClaims& claims,
                      int64_t now_unix_ms);

  // The measure phase (after Enumerate answered kMeasure).
  StatusOr<MeasureRequest> MakeMeasure() const;
  // Checks the measure answer (one entry per schedule) and builds the result.
  StatusOr<ResultRow> ApplyMeasure(const PhaseReport& result, const std::string& worker,
                                   const std::string& backend, double search_seconds) const;

  // How much faster end to end (median) a baseline must be than the IOS
  // schedule to replace it in the result: above the run-to-run noise of one
  // measure phase.
  static constexpr double kSwitchMargin = 0.03;

  // Progress fields of the job (blocks, stages profiled, cache hits,
  // candidates, unique signatures).
  void FillProgress(JobRow& row) const;

  const JobRow& job() const { return job_; }
  // Signatures looked up in the store so far, and how many were there.
  int64_t lookups() const { return lookups_; }
  // The cores the search's core bound uses; 0 where it is off (fewer than 2).
  int search_cores() const { return options_.bounded.cores >= 2 ? options_.bounded.cores : 0; }
  int64_t cache_hits() const { return cache_hits_; }

 private:
  // The index (in the measure answer, IOS first) of the schedule to return.
  static size_t ChooseMeasured(const PhaseReport& result);
  explicit JobRunner(const JobRow& job) : job_(job) {}
  // Looks `requests` up in the store: provides the known ones, claims the
  // rest; claimed ones go to filling_, others to awaiting_.
  Status Resolve(std::vector<scheduler::ios::StageRequest> requests, LatencyDb& store,
                 SignatureClaims& claims);
  Status FinishSearch(LatencyDb& store);

  // Bytes the runner holds for the session's requests (filling_, out_,
  // awaiting_).
  int64_t HeldRequestBytes() const;

  JobRow job_;
  bool stop_after_walk_ = false;  // StopAfterTheWalk, for the next Enumerate
  graph::Graph graph_;              // without weight values
  // SerializeGraph(graph_), sent to workers (shared by the job's orders).
  std::shared_ptr<const std::string> graph_bytes_;
  std::string model_digest_;        // ModelDigest of the graph with its weights
  scheduler::ios::SearchOptions options_;
  // Released once the search is done (the schedules are all that is left).
  std::unique_ptr<scheduler::ios::SearchSession> session_;
  int blocks_total_ = 0;  // of the finished search
  int blocks_done_ = 0;
  std::vector<scheduler::ios::StageRequest> filling_;                 // the batch being filled
  std::map<int64_t, std::vector<scheduler::ios::StageRequest>> out_;  // handed out, by id
  std::vector<scheduler::ios::StageRequest> awaiting_;  // measured by another job
  int64_t stages_profiled_ = 0;
  int64_t cache_hits_ = 0;
  int64_t lookups_ = 0;
  // Final schedules, once the search is done: ios, sequential, greedy.
  std::vector<std::pair<std::string, scheduler::ios::Schedule>> schedules_;
  scheduler::ios::SearchStats final_stats_;
  bool done_ = false;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_JOB_RUNNER_H_
