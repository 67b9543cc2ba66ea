// iosfarm-worker: the worker daemon binary (worker_daemon.h).
//
//   iosfarm-worker --server ADDR --device-key KEY --backend cuda|cpu|sim[:preset] ...
//
// --server falls back to $IOSFARM_SERVER (as for the `iosfarm` CLI);
// --threads sets the cpu backend's threads (--cpu-threads: deprecated alias).
//
// Exit status: 0 after a graceful shutdown (SIGINT/SIGTERM), 1 when the
// backend cannot run here or the server refuses the worker for good, 2 for
// usage errors. Logs go to stderr.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/logging.h"
#include "common/status.h"
#include "common/flags/flags.h"
#include "common/strings.h"
#include "proto/rpc_util.h"
#include "worker/backends/backend_factory.h"
#include "worker/worker_daemon.h"

#ifndef IOSFARM_VERSION  // set by the build (worker/CMakeLists.txt)
#define IOSFARM_VERSION "dev"
#endif

namespace iosfarm::worker {
namespace {

constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;

struct Flags {
  WorkerOptions options;
  std::string backend = "cuda";
  int gpu = 0;
  bool cuda_graph_stages = false;
  int cpu_threads = 0;
  std::string token_file;
  double sim_time_scale = 0;
  uint64_t sim_seed = 1;
  double sim_failure_rate = 0;
  int sim_fail_every = 0;
  double sim_noise = 0;
  std::string log_level = "info";
};

std::string Trim(std::string text) {
  const char* kSpace = " \t\r\n";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

int Fail(int code, std::string_view message) {
  std::cerr << "iosfarm-worker: " << message << "\n";
  return code;
}

// Waits for SIGINT/SIGTERM (blocked in every thread) and shuts the daemon
// down; a second signal exits at once. `done` stops it without a signal.
class SignalWaiter {
 public:
  explicit SignalWaiter(WorkerDaemon& daemon) : daemon_(daemon) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~SignalWaiter() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }

 private:
  void Loop() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int signals = 0;
    while (true) {
      int signal = 0;
      if (sigwait(&set, &signal) != 0) continue;
      if (done_) return;
      if (++signals == 1) {
        spdlog::info("received {}; finishing (send it again to exit at once)",
                     signal == SIGINT ? "SIGINT" : "SIGTERM");
        daemon_.Shutdown();
      } else {
        spdlog::warn("second signal: exiting now");
        std::_Exit(130);
      }
    }
  }

  WorkerDaemon& daemon_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

int Main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Flags flags;
  CLI::App app{"iosfarm-worker: runs build and profile phases for an iosfarm server",
               "iosfarm-worker"};
  app.set_version_flag("--version", StrCat("iosfarm-worker ", IOSFARM_VERSION));
  app.add_option("--server", flags.options.server, "server address, host:port")
      ->envname("IOSFARM_SERVER")
      ->required();
  app.add_option("--device-key", flags.options.device_key,
                 "GPU type this worker measures for (e.g. h100-sxm)")
      ->required();
  app.add_option("--backend", flags.backend,
                 "cuda, cpu, sim, sim:<preset> or sim:<preset>:back-to-back")
      ->capture_default_str();
  app.add_option("--gpu", flags.gpu, "cuda: device index")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--cuda-graph-stages", flags.cuda_graph_stages,
               "cuda: time each stage as a CUDA graph, for schedules run as one graph (give "
               "such a worker its own --device-key: its latencies differ from eager ones)");
  auto* token = app.add_option("--token", flags.options.token,
                               "worker bearer token (default: $IOSFARM_WORKER_TOKEN)");
  app.add_option("--token-file", flags.token_file, "read the worker token from this file")
      ->excludes(token);
  app.add_option("--tls-ca", flags.options.tls_ca_file,
                 "PEM of the CA that signed the server's certificate (default: plaintext)");
  app.add_option("--worker-id", flags.options.worker_id,
                 "unique id (default: <hostname>-<pid>, plus -gpu<N> for cuda)");
  auto* threads = app.add_option("--threads", flags.cpu_threads, "cpu: threads (0 = all)")
                      ->check(CLI::NonNegativeNumber);
  // The spelling before the CLI's --threads; hidden, kept for old scripts.
  auto* cpu_threads = app.add_option("--cpu-threads", flags.cpu_threads,
                                     "deprecated spelling of --threads")
                          ->check(CLI::NonNegativeNumber)
                          ->excludes(threads)
                          ->group("");
  app.add_option("--sim-time-scale", flags.sim_time_scale,
                 "sim: wall seconds slept per simulated second")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sim-seed", flags.sim_seed, "sim: seed of noise and failure injection");
  app.add_option("--sim-failure-rate", flags.sim_failure_rate,
                 "sim: probability that a Profile call fails")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--sim-fail-every", flags.sim_fail_every, "sim: every n-th Profile call fails")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sim-noise", flags.sim_noise, "sim: lognormal sigma of each sample")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--heartbeat", flags.options.heartbeat_interval_s,
                 "heartbeat interval, seconds, until the server sets one")
      ->check(CLI::PositiveNumber);
  app.add_option("--reconnect-max", flags.options.reconnect_max_s,
                 "longest wait between reconnection attempts, seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) {
    return *exit == 0 ? 0 : kExitUsage;
  }
  Status logging = InitLogging(flags.log_level);
  if (!logging.ok()) return Fail(kExitUsage, ToStd(logging.message()));
  if (cpu_threads->count() > 0) {
    spdlog::warn("--cpu-threads is deprecated; use --threads");
  }

  if (!flags.token_file.empty()) {
    StatusOr<std::string> text = rpc::ReadFileToString(flags.token_file);
    if (!text.ok()) return Fail(kExitUsage, StrCat("--token-file: ", ToStd(text.status().message())));
    flags.options.token = Trim(*std::move(text));
  } else if (flags.options.token.empty()) {
    if (const char* env = std::getenv("IOSFARM_WORKER_TOKEN")) flags.options.token = env;
  }
  if (!flags.options.tls_ca_file.empty()) {
    StatusOr<std::string> ca = rpc::ReadFileToString(flags.options.tls_ca_file);
    if (!ca.ok()) return Fail(kExitUsage, StrCat("--tls-ca: ", ToStd(ca.status().message())));
  }
  if (flags.options.reconnect_max_s < flags.options.reconnect_initial_s) {
    flags.options.reconnect_initial_s = flags.options.reconnect_max_s;
  }

  BackendConfig config;
  config.cuda_device = flags.gpu;
  config.cuda_graph_stages = flags.cuda_graph_stages;
  config.cpu_threads = flags.cpu_threads;
  config.sim.seed = flags.sim_seed;
  config.sim.time_scale = flags.sim_time_scale;
  config.sim.failure_probability = flags.sim_failure_rate;
  config.sim.fail_every_n = flags.sim_fail_every;
  config.sim.noise_sigma = flags.sim_noise;
  const bool is_sim = flags.backend == "sim" || flags.backend.rfind("sim:", 0) == 0;
  if (flags.cuda_graph_stages && flags.backend != "cuda") {
    return Fail(kExitUsage, "--cuda-graph-stages needs --backend cuda");
  }
  if (!is_sim && flags.backend != "cuda" && flags.backend != "cpu") {
    return Fail(kExitUsage, StrCat("--backend: unknown backend '", flags.backend,
                                   "' (valid: cuda, cpu, sim, sim:<preset>[:back-to-back])"));
  }
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(flags.backend, config);
  if (!backend.ok()) {
    // A bad sim preset or sim option is the user's typo; anything else means
    // the backend cannot run on this machine.
    const int code = is_sim ? kExitUsage : kExitRefused;
    return Fail(code, StrCat("cannot start the ", flags.backend, " backend: ",
                             ToStd(backend.status().message())));
  }
  flags.options.cuda_device = flags.gpu;

  WorkerDaemon daemon(flags.options, *std::move(backend));
  Status status;
  {
    SignalWaiter waiter(daemon);
    status = daemon.Run();
  }
  if (!status.ok()) {
    return Fail(kExitRefused, ToStd(status.message()));
  }
  return 0;
}

}  // namespace
}  // namespace iosfarm::worker

int main(int argc, char** argv) { return iosfarm::worker::Main(argc, argv); }
