// FarmServer: the iosfarm server as a library — the gRPC TuningService and
// WorkerService over one FarmCoordinator and one SQLite file (FarmDatabase:
// the JobStore and the LatencyDb), plus the gRPC health service. Used by
// `iosfarm-server` and by the embedded mode of `iosfarm tune` (server and
// worker in one process).
//
// Security: without token sets the server refuses to listen anywhere but on
// loopback unless `insecure` is set. TLS is optional (tls_cert + tls_key).
// Thread-safe; Shutdown is idempotent and also runs in the destructor.
#ifndef IOSFARM_SERVER_FARM_SERVER_H_
#define IOSFARM_SERVER_FARM_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace iosfarm::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:7070";  // port 0: pick a free one
  std::string db_path;                    // required
  std::string policy = "interleaved";     // interleaved | sequential | synchronous | critical-path
  int server_slots = 2;                   // server CPU slots for enumerate/update
  bool insecure = false;                  // allow non-loopback without tokens
  std::string client_tokens_file, worker_tokens_file;
  bool tokens_from_env = true;            // also IOSFARM_CLIENT_TOKENS / IOSFARM_WORKER_TOKENS
  std::string tls_cert_file, tls_key_file;
  // Request limits.
  int64_t max_model_bytes = 256LL << 20;
  int64_t max_ops = 20000;
  int max_active_jobs_per_client = 64;
  // Client names that may cancel any job (others cancel only their own).
  std::vector<std::string> admin_clients;
  // The search budget of one job (FarmSearchBudget in job_runner.h):
  // memory of one search pass, and DP transitions of one job in all.
  int64_t search_pass_mib = 256;
  int64_t search_total_transitions = 4'000'000'000;
  // Searches in memory at once (CoordinatorOptions::max_searches): the
  // server's search memory stays under max_searches x search_pass_mib.
  int max_searches = 6;
  // How search places are shared in time (CoordinatorOptions).
  int search_first_turns = 2;
  double search_min_turn_s = 5;
  double search_max_wait_s = 60;
  // Workers.
  double heartbeat_interval_s = 1.0;
  double heartbeat_timeout_s = 5.0;  // also: how long a new stream may take to register
  int max_attempts = 3;
  // Restarts after unclean stops that may find a job in its search without
  // it storing a measurement in between, before it fails (the crash-loop
  // guard, FarmCoordinator::Resume).
  int max_resumes = 3;
  // Seconds of search an enumerate phase runs before it queues again behind
  // other jobs (CoordinatorOptions::enumerate_slice_s).
  double enumerate_slice_s = 2.0;
  // Profiling protocol for stages and for the end-to-end measurement
  // (docs/profiling.md); 0 = the backend's default.
  int profile_min_repeats = 0, profile_max_repeats = 0;
  double profile_max_seconds = 0;
  // BENCHMARK ONLY (bench/farm_cluster_bench.py; off when empty): minimum
  // wall seconds per phase kind, "enumerate=0.01,build=0.083,profile=0.395,
  // update=0.44,measure=0.1". A phase that ends sooner is reported to the
  // scheduler only when its minimum has passed (server phases sleep, worker
  // results are held back), so a real farm reproduces chosen phase times.
  // Never set it in production: it only slows the farm down.
  std::string synthetic_phase_seconds;
  // Prometheus metrics over HTTP at HOST:PORT/metrics (empty = off; port 0
  // picks a free one, see FarmServer::metrics_port).
  std::string metrics_listen;
};

class FarmServer {
 public:
  // Opens the database, resumes unfinished jobs and starts listening.
  // InvalidArgument for bad options (naming the flag), Unavailable when the
  // address cannot be bound, the store's errors for a bad database file.
  static StatusOr<std::unique_ptr<FarmServer>> Start(const ServerOptions& options);
  ~FarmServer();

  // "<host>:<port actually bound>".
  std::string address() const;
  int port() const;
  // The metrics port actually bound, 0 when metrics are off.
  int metrics_port() const;
  // Ends worker streams (jobs in flight stay unfinished in the database and
  // are resumed by the next start), then stops the gRPC server. Idempotent.
  void Shutdown();
  // Blocks until Shutdown() was called (from another thread).
  void Wait();

  class Impl;

 private:
  explicit FarmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_SERVER_H_
