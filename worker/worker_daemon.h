// WorkerDaemon: the worker side of WorkerService.Connect (farm.proto).
//
// Dials the server, sends RegisterWorker, waits for Registered, then sends a
// Heartbeat every interval (the server's Registered.heartbeat_interval_s when
// set) and serves PhaseAssignments until the stream breaks; then it dials
// again with exponential backoff and jitter, logging each attempt, until
// Shutdown(). Refusals that retrying cannot fix end Run() with the server's
// status: UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT, and
// ALREADY_EXISTS before this daemon ever registered (afterwards it means the
// server still holds the stream that just broke, so the daemon retries).
//
// The stream code converts every message with wire_convert.h: an assignment
// becomes a PhaseOrder as it is read (graph parsed, stages checked), one that
// cannot be decoded is answered at once with a failed PhaseResult. Orders run
// on two lanes (serial_lane.h): build on the CPU lane, profile and measure on
// the device lane, so a build overlaps a device phase but two device phases
// never overlap; each lane runs its phases in arrival order. Phase work is
// PhaseExecutor's (phase_executor.h); a failing phase becomes
// PhaseResult{ok = false}, never an error of the daemon. Built plans
// survive reconnects. A result whose stream broke meanwhile is dropped (the
// server re-queues phases of lost workers), and phases queued on a broken
// stream are skipped. CancelPhase is best effort: a queued phase is skipped,
// a running one finishes and its result is dropped.
//
// Stream writes (heartbeats, results) are serialised by one mutex per
// connection: gRPC allows one outstanding Write at a time.
//
// Thread safety: Shutdown and the accessors may be called from any thread;
// Run from one thread at a time. The destructor calls Shutdown, waits for Run
// to return and joins the lanes (a running phase is finished first).
#ifndef IOSFARM_WORKER_WORKER_DAEMON_H_
#define IOSFARM_WORKER_WORKER_DAEMON_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "worker/backends/backend.h"
#include "worker/phase_executor.h"
#include "worker/phase_order.h"
#include "worker/serial_lane.h"

namespace iosfarm::worker {

struct WorkerOptions {
  std::string server;        // host:port
  std::string token;         // worker bearer token ("" = none)
  std::string tls_ca_file;   // "" = plaintext
  std::string worker_id;     // "" = "<hostname>-<pid>" (+ "-gpu<N>" for cuda)
  std::string device_key;    // required
  double reconnect_initial_s = 0.2, reconnect_max_s = 10.0;  // exponential backoff with jitter
  double heartbeat_interval_s = 1.0;  // overridden by the server's Registered.heartbeat_interval_s
  // Added beyond the original API:
  int cuda_device = 0;             // N of the default worker_id's "-gpu<N>" (cuda backend)
  double register_timeout_s = 30;  // no Registered within this: drop the stream and retry
};

// "<hostname>-<pid>", plus "-gpu<cuda_device>" when backend_name is "cuda".
std::string DefaultWorkerId(const std::string& backend_name, int cuda_device);

// Whether a Connect that failed with `code` before registration must not be
// retried (see the file comment).
bool IsPermanentRefusal(absl::StatusCode code, bool registered_before);

class WorkerDaemon {
 public:
  // `backend` must not be null.
  WorkerDaemon(WorkerOptions options, std::unique_ptr<Backend> backend);
  ~WorkerDaemon();  // Shutdown + join
  WorkerDaemon(const WorkerDaemon&) = delete;
  WorkerDaemon& operator=(const WorkerDaemon&) = delete;

  // Serves until Shutdown() (then OK; OK at once when Shutdown came first).
  // Returns at once: InvalidArgument for bad options (no server or device
  // key, unreadable CA file, bad backoff), FailedPrecondition when Run is
  // already running, and the server's status (message saying it will not
  // retry) when the server refuses registration for good.
  Status Run();
  // Thread-safe; cancels the stream and wakes a backoff wait; Run returns
  // promptly (a running phase is not interrupted).
  void Shutdown();

  const std::string& worker_id() const { return options_.worker_id; }
  const WorkerOptions& options() const { return options_; }
  // Phases executed to the end (ok or failed), results sent or not.
  int64_t phases_done() const { return phases_done_.load(); }
  // Registered on a live stream right now.
  bool connected() const { return connected_.load(); }
  // Times the server answered Registered (1 + reconnections).
  int64_t registrations() const { return registrations_.load(); }

 private:
  struct Session;

  Status ValidateOptions() const;
  // One connection: dial, register, serve until the stream ends. Sets
  // `*registered` when the server answered Registered.
  Status RunSession(bool* registered);
  void ServeStream(const std::shared_ptr<Session>& session);
  void HeartbeatLoop(const std::shared_ptr<Session>& session);
  // A phase as the worker knows it: its connection and the server's id (a
  // restarted server numbers its phases anew; what an earlier connection
  // still runs is dropped when it ends).
  using PhaseKey = std::pair<const Session*, int64_t>;
  // Adds the phase to the pending set; false (logged) when it is already there.
  bool AddPending(const Session* session, int64_t phase_id);
  // Queues `order` on its lane (unless its phase id is already here).
  void Dispatch(const std::shared_ptr<Session>& session,
                std::shared_ptr<const PhaseOrder> order);
  void RunPhase(const std::shared_ptr<Session>& session, const PhaseOrder& order);
  // Counts, logs and sends the report of a phase that took `seconds`.
  void Report(const std::shared_ptr<Session>& session, std::string_view phase,
              const PhaseReport& report, double seconds);
  void Cancel(const Session* session, int64_t phase_id);
  // Removes the phase from the pending set; true if it had been cancelled.
  bool FinishPending(const Session* session, int64_t phase_id);
  bool IsCancelled(const Session* session, int64_t phase_id) const;
  // Waits `seconds` or until Shutdown; true when shut down.
  bool SleepUnlessShutdown(double seconds);
  bool IsShutdown() const;

  WorkerOptions options_;
  std::unique_ptr<Backend> backend_;
  PhaseExecutor executor_;

  mutable absl::Mutex mutex_;
  bool shutdown_ ABSL_GUARDED_BY(mutex_) = false;
  bool running_ ABSL_GUARDED_BY(mutex_) = false;
  std::shared_ptr<Session> session_ ABSL_GUARDED_BY(mutex_);  // the live connection
  std::set<PhaseKey> pending_ ABSL_GUARDED_BY(mutex_);        // posted, not finished
  std::set<PhaseKey> cancelled_ ABSL_GUARDED_BY(mutex_);      // subset of pending_

  std::atomic<int64_t> phases_done_{0};
  std::atomic<int64_t> registrations_{0};
  std::atomic<bool> connected_{false};

  // Declared last: stopped first (their tasks use everything above).
  SerialLane cpu_lane_{"cpu"};
  SerialLane device_lane_{"device"};
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_WORKER_DAEMON_H_
