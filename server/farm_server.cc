#include "server/farm_server.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/synchronization/mutex.h"
#include "common/strings.h"
#include "proto/rpc_util.h"
#include "scheduler/farm/farm_scheduler.h"
#include "server/auth.h"
#include "server/database_lock.h"
#include "server/farm_coordinator.h"
#include "server/padded_farm.h"
#include "server/farm_metrics.h"
#include "server/farm_database.h"
#include "server/tls_files.h"
#include "server/tuning_service.h"
#include "server/worker_service.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace {

bool IsLoopback(const std::string& listen) {
  const std::string host = listen.substr(0, listen.rfind(':'));
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]" || host == "::1";
}

StatusOr<TokenSet> LoadTokens(const std::string& file, const char* env, bool from_env) {
  TokenSet tokens;
  if (!file.empty()) {
    ASSIGN_OR_RETURN(tokens, TokenSet::FromFile(file));
  }
  if (from_env) {
    if (const char* list = std::getenv(env); list != nullptr && *list != '\0') {
      ASSIGN_OR_RETURN(TokenSet more, TokenSet::FromList(list, env));
      RETURN_IF_ERROR(tokens.Merge(more));
    }
  }
  return tokens;
}

ProfileSettings ProfileFrom(const ServerOptions& options) {
  ProfileSettings profile;
  profile.min_repeats = options.profile_min_repeats;
  profile.max_repeats = options.profile_max_repeats;
  profile.max_seconds = options.profile_max_seconds;
  return profile;
}

}  // namespace

class FarmServer::Impl {
 public:
  // Held results call the coordinator: the padding stops before it goes.
  ~Impl() {
    if (padding) padding->Stop();
  }

  ServerOptions options;
  std::optional<DatabaseLock> db_lock;  // held while the server runs
  TokenSet client_tokens, worker_tokens;
  FarmMetrics metrics;  // outlives the coordinator (declared first)
  FarmDatabase database;  // the job store and the latency database
  // Benchmark only (--synthetic-phase-seconds): null unless set.
  std::unique_ptr<PhasePadding> padding;
  std::unique_ptr<FarmCoordinator> coordinator;
  std::unique_ptr<PaddedWorkerEvents> padded_events;
  std::unique_ptr<TuningServiceImpl> tuning;
  std::unique_ptr<WorkerServiceImpl> workers;
  std::unique_ptr<grpc::Server> server;
  std::string host;
  int port = 0;

  absl::Mutex mu;
  bool shut_down ABSL_GUARDED_BY(mu) = false;  // Shutdown started
  bool done ABSL_GUARDED_BY(mu) = false;       // Shutdown finished
};

StatusOr<std::unique_ptr<FarmServer>> FarmServer::Start(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.db_path.empty()) return absl::InvalidArgumentError("--db: a database file is required");
  auto policy = scheduler::farm::PolicyFromName(options.policy);
  if (!policy) {
    return absl::InvalidArgumentError(
        StrCat("--policy: unknown policy '", options.policy,
               "' (interleaved, sequential, synchronous, critical-path)"));
  }
  if (options.server_slots < 1 || options.server_slots > 256) {
    return absl::InvalidArgumentError(
        StrCat("--server-slots must be in [1, 256], got ", options.server_slots));
  }
  if (options.listen.rfind(':') == std::string::npos) {
    return absl::InvalidArgumentError(StrCat("--listen: expected HOST:PORT, got '", options.listen, "'"));
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  ASSIGN_OR_RETURN(impl->client_tokens, LoadTokens(options.client_tokens_file,
                                                   "IOSFARM_CLIENT_TOKENS", options.tokens_from_env));
  ASSIGN_OR_RETURN(impl->worker_tokens, LoadTokens(options.worker_tokens_file,
                                                   "IOSFARM_WORKER_TOKENS", options.tokens_from_env));
  if ((impl->client_tokens.empty() || impl->worker_tokens.empty()) && !IsLoopback(options.listen) &&
      !options.insecure) {
    return absl::InvalidArgumentError(
        StrCat("refusing to listen on ", options.listen,
               " without client and worker tokens (--client-tokens/--worker-tokens or "
               "IOSFARM_CLIENT_TOKENS/IOSFARM_WORKER_TOKENS); use a loopback address or "
               "--insecure"));
  }
  // TLS files are checked first: gRPC would only say it cannot listen.
  std::optional<TlsPem> tls;
  if (!options.tls_cert_file.empty()) {
    ASSIGN_OR_RETURN(tls, LoadServerTls(options.tls_cert_file, options.tls_key_file));
  }
  ASSIGN_OR_RETURN(impl->db_lock, DatabaseLock::Acquire(options.db_path));
  ASSIGN_OR_RETURN(impl->database, OpenFarmDatabase(options.db_path));
  RETURN_IF_ERROR(impl->database.connection->CheckUsable());

  CoordinatorOptions coordinator;
  coordinator.policy = *policy;
  coordinator.server_slots = options.server_slots;
  coordinator.max_attempts = options.max_attempts;
  coordinator.max_resumes = std::max(0, options.max_resumes);
  coordinator.enumerate_slice_s = options.enumerate_slice_s;
  coordinator.max_active_jobs_per_owner = options.max_active_jobs_per_client;
  coordinator.heartbeat_interval_s = options.heartbeat_interval_s;
  coordinator.heartbeat_timeout_s = options.heartbeat_timeout_s;
  coordinator.profile = ProfileFrom(options);
  coordinator.measure = ProfileFrom(options);
  coordinator.metrics = &impl->metrics;
  if (options.search_pass_mib < 16 || options.search_total_transitions < 1'000'000) {
    return absl::InvalidArgumentError(
        StrCat("--search-pass-mib must be >= 16 and --search-total-transitions >= 1000000, got ",
               options.search_pass_mib, " and ", options.search_total_transitions));
  }
  coordinator.search_budget.max_bytes_per_pass = options.search_pass_mib << 20;
  coordinator.search_budget.max_transitions_total = options.search_total_transitions;
  if (options.max_searches < 1) {
    return absl::InvalidArgumentError(
        StrCat("--max-searches must be >= 1, got ", options.max_searches));
  }
  coordinator.max_searches = options.max_searches;
  if (!(options.search_min_turn_s >= 0) || !(options.search_max_wait_s >= 0)) {
    return absl::InvalidArgumentError(
        StrCat("--search-min-turn and --search-max-wait must be >= 0 seconds, got ",
               options.search_min_turn_s, " and ", options.search_max_wait_s));
  }
  if (options.search_first_turns < 0) {
    return absl::InvalidArgumentError(
        StrCat("--search-first-turns must be >= 0, got ", options.search_first_turns));
  }
  coordinator.search_first_turns = options.search_first_turns;
  coordinator.search_min_turn_s = options.search_min_turn_s;
  coordinator.search_max_wait_s = options.search_max_wait_s;
  coordinator.import_gate_bytes = options.max_model_bytes;
  if (!options.metrics_listen.empty()) RETURN_IF_ERROR(impl->metrics.Serve(options.metrics_listen));
  ASSIGN_OR_RETURN(auto synthetic_phase_seconds,
                   ParseSyntheticPhaseSeconds(options.synthetic_phase_seconds));
  if (!synthetic_phase_seconds.empty()) {
    impl->padding = std::make_unique<PhasePadding>(synthetic_phase_seconds, SystemClock());
    coordinator.server_phase_work = PaddedServerPhaseWork(impl->padding.get(), &SystemClock());
  }
  impl->coordinator = std::make_unique<FarmCoordinator>(coordinator, impl->database.jobs.get(),
                                                        impl->database.latencies.get());
  WorkerEvents* worker_events = impl->coordinator.get();
  if (impl->padding) {
    impl->padded_events = std::make_unique<PaddedWorkerEvents>(
        impl->coordinator.get(), impl->padding.get(), &SystemClock());
    worker_events = impl->padded_events.get();
  }

  RequestLimits limits;
  limits.max_model_bytes = options.max_model_bytes;
  limits.max_ops = options.max_ops;
  limits.admin_clients = options.admin_clients;
  impl->tuning = std::make_unique<TuningServiceImpl>(
      impl->coordinator.get(), impl->database.jobs.get(), impl->database.latencies.get(),
      &impl->client_tokens, limits);
  impl->workers = std::make_unique<WorkerServiceImpl>(worker_events,
                                                      &impl->worker_tokens,
                                                      options.heartbeat_interval_s,
                                                      options.heartbeat_timeout_s);

  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (!tls) {
    credentials = grpc::InsecureServerCredentials();
  } else {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({tls->private_key, tls->cert_chain});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use would
  // start and take half the clients' calls. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen, credentials, &impl->port);
  const int max_message = static_cast<int>(std::min<int64_t>(options.max_model_bytes + (16 << 20), 1LL << 30));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  builder.RegisterService(impl->tuning.get());
  builder.RegisterService(impl->workers.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    impl->coordinator->Shutdown();
    return absl::UnavailableError(StrCat("cannot listen on ", options.listen,
                                         ": address in use (another server?) or not available"));
  }
  // Jobs resume only once this server owns its address (and its database).
  if (Status resumed = impl->coordinator->Resume(); !resumed.ok()) {
    impl->coordinator->Shutdown();
    impl->server->Shutdown();
    return resumed;
  }
  impl->server->GetHealthCheckService()->SetServingStatus(true);
  impl->host = options.listen.substr(0, options.listen.rfind(':'));
  spdlog::info("iosfarm server listening on {}:{} (database {}, policy {}, {} server slots{}{}{})",
               impl->host, impl->port, options.db_path, options.policy, options.server_slots,
               impl->client_tokens.empty() ? ", no client tokens" : "",
               options.tls_cert_file.empty() ? "" : ", TLS",
               options.metrics_listen.empty()
                   ? std::string()
                   : StrCat(", metrics on port ", impl->metrics.port(), "/metrics"));
  return std::unique_ptr<FarmServer>(new FarmServer(std::move(impl)));
}

FarmServer::FarmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FarmServer::~FarmServer() { Shutdown(); }

std::string FarmServer::address() const { return StrCat(impl_->host, ":", impl_->port); }
int FarmServer::port() const { return impl_->port; }
int FarmServer::metrics_port() const { return impl_->metrics.port(); }

void FarmServer::Shutdown() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->shut_down) {
      impl_->mu.Await(absl::Condition(&impl_->done));
      return;
    }
    impl_->shut_down = true;
  }
  spdlog::info("iosfarm server shutting down; unfinished jobs resume at the next start");
  impl_->server->GetHealthCheckService()->SetServingStatus(false);
  impl_->coordinator->Shutdown();
  if (impl_->padding) impl_->padding->Stop();  // held results are dropped
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  absl::MutexLock lock(&impl_->mu);
  impl_->done = true;
}

void FarmServer::Wait() {
  absl::MutexLock lock(&impl_->mu);
  impl_->mu.Await(absl::Condition(&impl_->done));
}

}  // namespace iosfarm::server
