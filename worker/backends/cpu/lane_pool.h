// LanePool: persistent worker threads that run the lanes of concurrent
// stages (lane_partition.h), each with its own OpenMP thread count.
//
// oneDNN (Debian's libdnnl) uses OpenMP; an OpenMP thread count is a
// per-thread setting, so each lane calls omp_set_num_threads with its share
// of the cores before running its ops, and the ops' primitives must have been
// created under the same setting (ScopedOmpThreads) because oneDNN fixes its
// work split at creation. Workers (and their OpenMP teams) persist, so a
// stage pays a wake-up, not a thread start.
//
// Thread safety: Run is not reentrant; callers serialise it (the cpu backend
// holds its mutex). Exceptions never leave a worker thread: they become the
// returned Status.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_LANE_POOL_H_
#define IOSFARM_WORKER_BACKENDS_CPU_LANE_POOL_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/status.h"

namespace iosfarm::worker::cpu {

// Sets the calling thread's OpenMP thread count for its lifetime, then
// restores the previous one.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int previous_;
};

// OpenMP's thread count of the calling thread (omp_get_max_threads).
int OmpMaxThreads();

class LanePool {
 public:
  using Lane = std::function<void(dnnl::stream&)>;

  explicit LanePool(dnnl::engine engine) : engine_(std::move(engine)) {}
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // Runs lanes[0] on the calling thread with `caller_stream` and lanes[i] on
  // worker i-1 (started on first use), lane i with threads[i] OpenMP
  // threads; returns when every lane finished: the first failure (an
  // exception thrown by a lane, as Internal) or OK.
  Status Run(const std::vector<Lane>& lanes, const std::vector<int>& threads,
             dnnl::stream& caller_stream);

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable wake;
    const Lane* lane = nullptr;  // guarded by mu
    int threads = 1;             // guarded by mu
    uint64_t generation = 0;     // guarded by mu; bumped per task
    bool quit = false;           // guarded by mu
    Status status;               // written by the worker before it reports done
  };

  void WorkerLoop(Worker* worker);

  dnnl::engine engine_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex done_mu_;
  std::condition_variable done_;
  int pending_ = 0;  // guarded by done_mu_
};

// Runs `lane` converting exceptions into an Internal status.
Status RunGuarded(const LanePool::Lane& lane, dnnl::stream& stream);

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_LANE_POOL_H_
