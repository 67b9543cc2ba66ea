#include "server/server_phase_pool.h"

#include <algorithm>
#include <utility>

namespace iosfarm::server {

ServerPhasePool::ServerPhasePool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

ServerPhasePool::~ServerPhasePool() { Stop(); }

void ServerPhasePool::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  tasks_.push_back(std::move(task));
}

void ServerPhasePool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    tasks_.clear();
  }
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void ServerPhasePool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !tasks_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace iosfarm::server
