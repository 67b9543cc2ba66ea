#include "worker/backends/cpu/lane_pool.h"

#include <omp.h>

#include <exception>

#include "common/strings.h"

namespace iosfarm::worker::cpu {

ScopedOmpThreads::ScopedOmpThreads(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(threads);
}

ScopedOmpThreads::~ScopedOmpThreads() { omp_set_num_threads(previous_); }

int OmpMaxThreads() { return omp_get_max_threads(); }

Status RunGuarded(const LanePool::Lane& lane, dnnl::stream& stream) {
  try {
    lane(stream);
    stream.wait();
  } catch (const dnnl::error& e) {
    return absl::InternalError(StrCat("oneDNN: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
  return absl::OkStatus();
}

LanePool::~LanePool() {
  for (auto& worker : workers_) {
    {
      std::lock_guard<std::mutex> lock(worker->mu);
      worker->quit = true;
    }
    worker->wake.notify_one();
    worker->thread.join();
  }
}

void LanePool::WorkerLoop(Worker* worker) {
  dnnl::stream stream(engine_);
  uint64_t seen = 0;
  int current_threads = -1;
  for (;;) {
    const Lane* lane;
    int threads;
    {
      std::unique_lock<std::mutex> lock(worker->mu);
      worker->wake.wait(lock, [&] { return worker->quit || worker->generation != seen; });
      if (worker->quit) return;
      seen = worker->generation;
      lane = worker->lane;
      threads = worker->threads;
    }
    if (threads != current_threads) {
      omp_set_num_threads(threads);
      current_threads = threads;
    }
    worker->status = RunGuarded(*lane, stream);
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

Status LanePool::Run(const std::vector<Lane>& lanes, const std::vector<int>& threads,
                     dnnl::stream& caller_stream) {
  if (lanes.empty()) return absl::OkStatus();
  const size_t extra = lanes.size() - 1;
  while (workers_.size() < extra) {
    auto worker = std::make_unique<Worker>();
    Worker* raw = worker.get();
    worker->thread = std::thread([this, raw] { WorkerLoop(raw); });
    workers_.push_back(std::move(worker));
  }
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    pending_ = static_cast<int>(extra);
  }
  for (size_t i = 0; i < extra; ++i) {
    Worker& worker = *workers_[i];
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      worker.lane = &lanes[i + 1];
      worker.threads = threads[i + 1];
      ++worker.generation;
    }
    worker.wake.notify_one();
  }
  Status status;
  {
    ScopedOmpThreads scoped(threads[0]);
    status = RunGuarded(lanes[0], caller_stream);
  }
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }
  for (size_t i = 0; i < extra && status.ok(); ++i) status = workers_[i]->status;
  return status;
}

}  // namespace iosfarm::worker::cpu
