#include "worker/serial_lane.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace iosfarm::worker {
namespace {

TEST(SerialLaneTest, RunsTasksOneAtATimeInOrder) {
  SerialLane lane("test");
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::vector<int> order;
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(lane.Post([&, i] {
      const int now = ++running;
      if (now > max_running) max_running = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      order.push_back(i);  // only the lane's thread writes
      --running;
      ++done;
    }));
  }
  while (done < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(max_running, 1);
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(lane.name(), "test");
}

TEST(SerialLaneTest, StopDropsQueuedTasksAndFinishesTheRunningOne) {
  SerialLane lane("test");
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  lane.Post([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++ran;
  });
  lane.Post([&] { ++ran; });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(lane.pending(), 2);
  std::thread stopper([&] { lane.Stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  release = true;
  stopper.join();
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(lane.Post([&] { ++ran; }));
  lane.Stop();  // idempotent
  EXPECT_EQ(lane.pending(), 0);
}

}  // namespace
}  // namespace iosfarm::worker
