// SerialLane: one thread that runs posted tasks one at a time, in order.
//
// The worker daemon has one lane per resource of the worker (DESIGN.md): a
// CPU lane for build phases and a device lane for profile and measure, so a
// build runs beside a profile but two device phases never overlap.
//
// Thread safety: Post and Stop may be called from any thread. Tasks run on
// the lane's thread; a task must not call Stop on its own lane.
#ifndef IOSFARM_WORKER_SERIAL_LANE_H_
#define IOSFARM_WORKER_SERIAL_LANE_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace iosfarm::worker {

class SerialLane {
 public:
  // Starts the thread. `name` is for logs.
  explicit SerialLane(std::string name);
  ~SerialLane();  // Stop()
  SerialLane(const SerialLane&) = delete;
  SerialLane& operator=(const SerialLane&) = delete;

  // Queues `task`; false (task dropped) once Stop was called.
  bool Post(std::function<void()> task);

  // Drops the queued tasks, waits for the running one and joins the thread.
  // Idempotent.
  void Stop();

  // Tasks queued or running.
  int pending() const;
  const std::string& name() const { return name_; }

 private:
  void Loop();
  bool HasWorkOrStop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string name_;
  mutable absl::Mutex mutex_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mutex_);
  bool running_task_ ABSL_GUARDED_BY(mutex_) = false;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Mutex join_mutex_;  // serialises Stop's join
  std::thread thread_;
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_SERIAL_LANE_H_
