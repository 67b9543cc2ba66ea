// iosfarm-server: the tuning farm's central server (server/farm_server.h).
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "common/flags/flags.h"
#include "common/logging.h"
#include "common/strings.h"
#include "server/farm_server.h"

int main(int argc, char** argv) {
  using iosfarm::server::ServerOptions;
  ServerOptions options;
  std::string log_level = "info";
  double max_model_mb = static_cast<double>(options.max_model_bytes) / (1 << 20);
  CLI::App app{"iosfarm-server: the iosfarm tuning farm server (clients and GPU workers connect here)",
               "iosfarm-server"};
  app.add_option("--listen", options.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--db", options.db_path, "SQLite latency database and job store")->required();
  app.add_option("--policy", options.policy, "interleaved | sequential | synchronous | critical-path")
      ->capture_default_str();
  app.add_option("--server-slots", options.server_slots,
                 "server CPU slots for enumerate/update phases")
      ->capture_default_str();
  app.add_option("--client-tokens", options.client_tokens_file,
                 "file of client bearer tokens (one per line: TOKEN [NAME])");
  app.add_option("--worker-tokens", options.worker_tokens_file,
                 "file of worker bearer tokens (one per line: TOKEN [NAME])");
  app.add_flag("--insecure", options.insecure,
               "allow listening beyond loopback without tokens");
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate chain (enables TLS)");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key for --tls-cert");
  app.add_option("--max-model-mb", max_model_mb, "largest ONNX model accepted, MiB")
      ->capture_default_str();
  app.add_option("--max-ops", options.max_ops, "most operators in a model")->capture_default_str();
  app.add_option("--search-pass-mib", options.search_pass_mib,
                 "memory of one search pass at most, MiB (a block over it is split)")
      ->capture_default_str();
  app.add_option("--max-searches", options.max_searches,
                 "searches in memory at once; later jobs wait (the server's search memory "
                 "stays under this x --search-pass-mib)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--search-first-turns", options.search_first_turns,
                 "of the --max-searches places, those kept for jobs that never had a turn "
                 "(at most --max-searches - 1), so that new jobs need not wait for a long search "
                 "to yield")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--search-min-turn", options.search_min_turn_s,
                 "seconds a search keeps its place at least before a job that outranks it "
                 "takes the place (docs/farm.md, \"Search places\")")
      ->capture_default_str();
  app.add_option("--search-max-wait", options.search_max_wait_s,
                 "seconds after which a waiting job goes before every job of its priority "
                 "that waited less")
      ->capture_default_str();
  app.add_option("--enumerate-slice", options.enumerate_slice_s,
                 "seconds of search an enumerate phase runs before it gives its server slot "
                 "back and queues again behind other jobs' server phases (0: no slicing)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--search-total-transitions", options.search_total_transitions,
                 "DP transitions of one job's search at most (past it the job fails)")
      ->capture_default_str();
  app.add_option("--admin-clients", options.admin_clients,
                 "client names (from --client-tokens) that may cancel any job")
      ->delimiter(',');
  app.add_option("--max-jobs-per-client", options.max_active_jobs_per_client,
                 "most unfinished jobs per client")
      ->capture_default_str();
  app.add_option("--max-resumes", options.max_resumes,
                 "crash-loop guard: restarts after unclean stops that may find a job in its "
                 "search with no new measurement, before it fails")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", options.heartbeat_timeout_s,
                 "seconds of worker silence before it counts as lost")
      ->capture_default_str();
  app.add_option("--profile-min-repeats", options.profile_min_repeats,
                 "timed runs per stage at least (0: backend default)");
  app.add_option("--profile-max-repeats", options.profile_max_repeats,
                 "timed runs per stage at most (0: backend default)");
  app.add_option("--profile-max-seconds", options.profile_max_seconds,
                 "timed work per stage at most (0: backend default)");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "serve Prometheus metrics at HOST:PORT/metrics (default: off)");
  app.add_option("--synthetic-phase-seconds", options.synthetic_phase_seconds,
                 "BENCHMARK ONLY: pad phases to at least these wall seconds, e.g. "
                 "enumerate=0.01,build=0.083,profile=0.395,update=0.44,measure=0.1 "
                 "(bench/farm_cluster_bench.py; off by default)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  app.set_version_flag("--version", std::string("iosfarm-server ") + IOSFARM_VERSION);
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;
  if (auto status = iosfarm::InitLogging(log_level); !status.ok()) {
    std::cerr << "iosfarm-server: " << iosfarm::ToStd(status.message()) << "\n";
    return 2;
  }
  options.max_model_bytes = static_cast<int64_t>(max_model_mb * (1 << 20));

  // Signals are handled by a thread that waits for them (no work in a
  // signal handler): SIGINT/SIGTERM shut down gracefully.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = iosfarm::server::FarmServer::Start(options);
  if (!server.ok()) {
    std::cerr << "iosfarm-server: error: " << iosfarm::ToStd(server.status().message()) << "\n";
    return 1;
  }
  std::cout << "listening on " << (*server)->address() << std::endl;
  // The first SIGINT/SIGTERM shuts down gracefully (running searches stop
  // within a second; unfinished jobs resume at the next start); a second one
  // while that runs exits at once.
  std::atomic<bool> finished{false};
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    if (finished) return;
    std::thread stopper([&] { (*server)->Shutdown(); });
    sigwait(&signals, &signal);
    if (finished) {
      stopper.join();
      return;
    }
    std::cerr << "iosfarm-server: second signal, exiting now (unfinished jobs resume at the "
                 "next start)\n";
    std::_Exit(130);
  });
  (*server)->Wait();
  finished = true;
  // Wake the waiter if Shutdown came from elsewhere.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return 0;
}
