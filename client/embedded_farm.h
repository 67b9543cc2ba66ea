// The embedded farm of `iosfarm tune`: an in-process FarmServer on a free
// loopback port and one local WorkerDaemon connected to it, so a single
// command tunes a model on this machine with the same code paths as a real
// farm (and fills the same kind of latency database).
//
// Start() returns once the worker has registered with the server, so jobs
// for device_key() can be submitted at once. Errors: the server's (bad
// database path, ...), the backend factory's (e.g. "no CUDA device"), the
// worker's refusal, or DeadlineExceeded when the worker does not register in
// time. Shutdown (also run by the destructor) stops the worker, then the
// server; unfinished jobs stay in the database. Thread-compatible.
#ifndef IOSFARM_CLIENT_EMBEDDED_FARM_H_
#define IOSFARM_CLIENT_EMBEDDED_FARM_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/farm_client.h"
#include "client/remote_options.h"
#include "iosfarm/v1/farm.pb.h"
#include "common/local_farm.h"  // DefaultDatabasePath, DefaultDeviceKey
#include "common/status.h"

namespace iosfarm::server {
class FarmServer;
}
namespace iosfarm::worker {
class WorkerDaemon;
}

namespace iosfarm::client {

struct EmbeddedFarmOptions {
  std::string backend;     // "" = BestAvailableBackendName(): cuda if a GPU answers, else cpu
  std::string device_key;  // "" = DefaultDeviceKey(backend, description)
  std::string db_path;     // "" = DefaultDatabasePath(); its directory is created
  int cpu_threads = 0;     // cpu backend: 0 = every hardware thread
  // cuda backend: stages timed as CUDA graphs (BackendConfig); the default
  // device key then ends in "-graph-stages", keeping such latencies apart.
  bool cuda_graph_stages = false;
  std::chrono::milliseconds register_timeout{30000};
  // Called by Start with a client of the embedded server, the jobs it
  // resumed and the farm's device key, before the local worker connects (so
  // none of the jobs can end meanwhile), e.g. to cancel some. An error stops
  // Start with it.
  std::function<Status(FarmClient& client, const std::vector<v1::Job>& resumed,
                       const std::string& device_key)>
      before_worker;
};

class EmbeddedFarm {
 public:
  static StatusOr<std::unique_ptr<EmbeddedFarm>> Start(const EmbeddedFarmOptions& options);
  ~EmbeddedFarm();
  EmbeddedFarm(const EmbeddedFarm&) = delete;
  EmbeddedFarm& operator=(const EmbeddedFarm&) = delete;

  // Where the server listens ("127.0.0.1:<port>").
  const std::string& address() const { return address_; }
  const std::string& device_key() const { return device_key_; }
  const std::string& backend_name() const { return backend_name_; }
  const std::string& device_description() const { return device_description_; }
  const std::string& db_path() const { return db_path_; }
  // The jobs that were queued or running in the database when the server
  // started (an earlier process was interrupted): the server resumes them.
  // Listed before the local worker connects, so none of them has ended yet.
  const std::vector<v1::Job>& resumed_jobs() const { return resumed_jobs_; }

  void Shutdown();

 private:
  EmbeddedFarm() = default;

  std::unique_ptr<server::FarmServer> server_;
  std::unique_ptr<worker::WorkerDaemon> worker_;
  std::thread worker_thread_;
  Status worker_status_;  // Run()'s outcome, written by worker_thread_ before it ends
  std::string address_, device_key_, backend_name_, device_description_, db_path_;
  std::vector<v1::Job> resumed_jobs_;
};

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_EMBEDDED_FARM_H_
