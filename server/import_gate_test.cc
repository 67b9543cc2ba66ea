#include "server/import_gate.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "gtest/gtest.h"

namespace iosfarm::server {
namespace {

TEST(ImportGateTest, ImportsRunTogetherOnlyWhileTheirBytesFit) {
  ImportGate gate(100);
  std::optional<ImportGate::Lease> a(gate.Acquire(60));
  std::optional<ImportGate::Lease> b(gate.Acquire(40));  // fits beside a
  EXPECT_EQ(gate.held_bytes(), 100);

  std::atomic<bool> got{false};
  std::thread waiter([&] {
    ImportGate::Lease c = gate.Acquire(30);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got.load());  // 130 > 100
  b.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(gate.held_bytes(), 60);
}

TEST(ImportGateTest, AnImportLargerThanTheCapacityRunsAlone) {
  ImportGate gate(100);
  {
    ImportGate::Lease big = gate.Acquire(500);  // nothing else in flight: runs
    EXPECT_EQ(gate.held_bytes(), 500);
  }
  std::optional<ImportGate::Lease> small(gate.Acquire(10));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    ImportGate::Lease big = gate.Acquire(500);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got.load());
  small.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(gate.held_bytes(), 0);
}

}  // namespace
}  // namespace iosfarm::server
