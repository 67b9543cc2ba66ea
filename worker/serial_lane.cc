#include "worker/serial_lane.h"

#include <utility>

namespace iosfarm::worker {

SerialLane::SerialLane(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { Loop(); });
}

SerialLane::~SerialLane() { Stop(); }

bool SerialLane::Post(std::function<void()> task) {
  absl::MutexLock lock(&mutex_);
  if (stopping_) return false;
  queue_.push_back(std::move(task));
  return true;
}

void SerialLane::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    queue_.clear();
  }
  absl::MutexLock join_lock(&join_mutex_);
  if (thread_.joinable()) thread_.join();
}

int SerialLane::pending() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(queue_.size()) + (running_task_ ? 1 : 0);
}

bool SerialLane::HasWorkOrStop() const { return stopping_ || !queue_.empty(); }

void SerialLane::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(this, &SerialLane::HasWorkOrStop));
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      running_task_ = true;
    }
    task();
    absl::MutexLock lock(&mutex_);
    running_task_ = false;
  }
}

}  // namespace iosfarm::worker
