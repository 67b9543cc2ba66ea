#include "client/embedded_farm.h"

#include <atomic>

#include "client/farm_client.h"
#include "client/unfinished_jobs.h"
#include "common/strings.h"
#include "server/farm_server.h"
#include "spdlog/spdlog.h"
#include "worker/backends/backend_factory.h"
#include "worker/worker_daemon.h"

namespace iosfarm::client {

StatusOr<std::unique_ptr<EmbeddedFarm>> EmbeddedFarm::Start(const EmbeddedFarmOptions& options) {
  std::unique_ptr<EmbeddedFarm> farm(new EmbeddedFarm());
  worker::BackendConfig config;
  config.cpu_threads = options.cpu_threads;
  config.cuda_graph_stages = options.cuda_graph_stages;
  farm->backend_name_ =
      options.backend.empty() ? worker::BestAvailableBackendName(config) : options.backend;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Backend> backend,
                   worker::CreateBackend(farm->backend_name_, config));
  farm->device_description_ = backend->device_description();
  farm->device_key_ = options.device_key.empty()
                          ? DefaultDeviceKey(farm->backend_name_, farm->device_description_,
                                             options.cuda_graph_stages)
                          : options.device_key;

  if (options.db_path.empty()) {
    ASSIGN_OR_RETURN(farm->db_path_, DefaultDatabasePath());
  } else {
    farm->db_path_ = options.db_path;
  }
  RETURN_IF_ERROR(CreateDatabaseDirectory(farm->db_path_));

  server::ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.db_path = farm->db_path_;
  server_options.tokens_from_env = false;  // nobody else can reach a loopback port we chose
  ASSIGN_OR_RETURN(farm->server_, server::FarmServer::Start(server_options));
  farm->address_ = farm->server_->address();
  {
    // Before the worker connects: no resumed job can end in between.
    RemoteOptions remote;
    remote.server = farm->address_;
    ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, FarmClient::Connect(remote));
    ASSIGN_OR_RETURN(farm->resumed_jobs_, ListUnfinishedJobs(*client));
    if (options.before_worker) {
      RETURN_IF_ERROR(options.before_worker(*client, farm->resumed_jobs_, farm->device_key_));
    }
  }

  worker::WorkerOptions worker_options;
  worker_options.server = farm->address_;
  worker_options.device_key = farm->device_key_;
  worker_options.worker_id = StrCat("local-", farm->backend_name_);
  for (char& c : worker_options.worker_id) c = c == ':' ? '-' : c;
  farm->worker_ = std::make_unique<worker::WorkerDaemon>(worker_options, std::move(backend));
  auto done = std::make_shared<std::atomic<bool>>(false);
  farm->worker_thread_ = std::thread([raw = farm.get(), done] {
    raw->worker_status_ = raw->worker_->Run();
    done->store(true);
  });

  const auto deadline = std::chrono::steady_clock::now() + options.register_timeout;
  while (!farm->worker_->connected()) {
    if (done->load()) {
      farm->worker_thread_.join();
      Status status = farm->worker_status_;
      if (status.ok()) status = absl::InternalError("the local worker stopped before registering");
      return Status(status.code(), StrCat("local worker: ", status.message()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          StrCat("the local worker did not register with the embedded server at ",
                 farm->address_, " within ", options.register_timeout.count() / 1000.0, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return farm;
}

void EmbeddedFarm::Shutdown() {
  // The local worker's disconnect is expected here: keep it out of the
  // warnings (errors still show).
  if (worker_ && spdlog::get_level() < spdlog::level::err) spdlog::set_level(spdlog::level::err);
  if (worker_) worker_->Shutdown();
  if (worker_thread_.joinable()) worker_thread_.join();
  worker_.reset();
  if (server_) server_->Shutdown();
}

EmbeddedFarm::~EmbeddedFarm() { Shutdown(); }

}  // namespace iosfarm::client
