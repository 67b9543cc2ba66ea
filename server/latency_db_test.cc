#include "server/latency_db.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/farm_database.h"
#include "server/sqlite_db.h"
#include "server/store_test_rows.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

using LatencyDbTest = StoreTest<&FarmDatabase::latencies>;

TEST_F(LatencyDbTest, DevicesRoundTrip) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(*store->HasDevice("h100-sxm"));
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "NVIDIA H100 SXM", "cuda", 1000).ok());
  ASSERT_TRUE(store->UpsertDevice("a100", "NVIDIA A100", "cuda", 1500).ok());
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "NVIDIA H100 80GB HBM3", "", 2000).ok());
  // An older clock does not move last_seen back.
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "", "", 1200).ok());
  EXPECT_TRUE(*store->HasDevice("h100-sxm"));
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].key, "a100");
  const DeviceRow& h100 = (*devices)[1];
  EXPECT_EQ(h100.key, "h100-sxm");
  EXPECT_EQ(h100.description, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.backend, "cuda");
  EXPECT_EQ(h100.first_seen_unix_ms, 1000);
  EXPECT_EQ(h100.last_seen_unix_ms, 2000);
  EXPECT_EQ(h100.latencies, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(store->UpsertDevice("", "x", "cuda", 1)));
}

// The device floor is the latest registration's, all zeros for a key no
// worker registered or whose worker declares none; a floor that is negative
// or not finite is refused and changes nothing.
TEST_F(LatencyDbTest, DeviceFloorIsTheLatestWorkersAndNoneForAnUnknownKey) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->DeviceFloorOf("sim-h100")->bounds_anything());
  scheduler::ios::DeviceFloor floor;
  floor.stage_ms = 0.0025;
  floor.launch_ms = 0.003;
  floor.peak_gflops = 26800;
  floor.bandwidth_gbps = 1340;
  floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin;
  ASSERT_TRUE(store->UpsertDevice("sim-h100", "sim h100", "sim", 1000, 0, floor).ok());
  auto stored = store->DeviceFloorOf("sim-h100");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_DOUBLE_EQ(stored->stage_ms, 0.0025);
  EXPECT_DOUBLE_EQ(stored->launch_ms, 0.003);
  EXPECT_DOUBLE_EQ(stored->peak_gflops, 26800);
  EXPECT_DOUBLE_EQ(stored->bandwidth_gbps, 1340);
  EXPECT_TRUE(stored->issue_overlaps_work);
  EXPECT_EQ(stored->issue_order, scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_DOUBLE_EQ((*devices)[0].device_floor.launch_ms, 0.003);
  EXPECT_EQ((*devices)[0].device_floor.issue_order,
            scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin);
  floor.issue_overlaps_work = false;
  floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kGroupByGroup;
  ASSERT_TRUE(store->UpsertDevice("sim-h100", "", "sim", 2000, 0, floor).ok());
  EXPECT_FALSE(store->DeviceFloorOf("sim-h100")->issue_overlaps_work);
  EXPECT_EQ(store->DeviceFloorOf("sim-h100")->issue_order,
            scheduler::ios::DeviceFloor::IssueOrder::kGroupByGroup);
  EXPECT_FALSE(store->DeviceFloorOf("sim-h100")->back_to_back);
  scheduler::ios::DeviceFloor timed = floor;
  timed.issue_overlaps_work = true;
  timed.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kUnknown;
  timed.back_to_back = true;
  timed.free_ops = scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable;
  timed.contention = 0.05;
  ASSERT_TRUE(store->UpsertDevice("cuda-h200", "H200", "cuda", 2500, 0, timed).ok());
  EXPECT_TRUE(store->DeviceFloorOf("cuda-h200")->back_to_back);
  EXPECT_DOUBLE_EQ(store->DeviceFloorOf("cuda-h200")->contention, 0.05);
  EXPECT_DOUBLE_EQ(store->DeviceFloorOf("sim-h100")->contention, 0);
  EXPECT_EQ(store->DeviceFloorOf("cuda-h200")->free_ops,
            scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_EQ(store->DeviceFloorOf("sim-h100")->free_ops,
            scheduler::ios::DeviceFloor::FreeOps::kViews);
  EXPECT_FALSE(store->DeviceFloorOf("sim-h100")->back_to_back);
  auto listed = store->ListDevices();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[0].device_floor.back_to_back);  // "cuda-h200" sorts first
  EXPECT_EQ((*listed)[0].device_floor.free_ops,
            scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_FALSE((*listed)[1].device_floor.back_to_back);
  EXPECT_DOUBLE_EQ((*listed)[0].device_floor.contention, 0.05);
  scheduler::ios::DeviceFloor bad = floor;
  bad.stage_ms = -1;
  auto refused = store->UpsertDevice("sim-h100", "", "sim", 3000, 0, bad);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(std::string(refused.message()).find("stage_ms"), std::string::npos) << refused;
  EXPECT_DOUBLE_EQ(store->DeviceFloorOf("sim-h100")->stage_ms, 0.0025);
  bad = floor;
  bad.contention = -0.5;
  refused = store->UpsertDevice("sim-h100", "", "sim", 3000, 0, bad);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(std::string(refused.message()).find("contention"), std::string::npos) << refused;
  ASSERT_TRUE(store->UpsertDevice("sim-h100", "", "sim", 4000).ok());  // declares none
  EXPECT_FALSE(store->DeviceFloorOf("sim-h100")->bounds_anything());
}

// The cores are the latest registration's: a key whose cpu workers moved to
// more threads, or whose last worker has no cores, bounds by what it has now.
TEST_F(LatencyDbTest, DeviceCoresAreTheLatestWorkersAndZeroForAnUnknownKey) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->DeviceCores("local-cpu"), 0);
  ASSERT_TRUE(store->UpsertDevice("local-cpu", "oneDNN, 2 threads", "cpu", 1000, 2).ok());
  ASSERT_TRUE(store->UpsertDevice("h100-sxm", "NVIDIA H100", "cuda", 1000).ok());
  EXPECT_EQ(*store->DeviceCores("local-cpu"), 2);
  EXPECT_EQ(*store->DeviceCores("h100-sxm"), 0);
  ASSERT_TRUE(store->UpsertDevice("local-cpu", "oneDNN, 8 threads", "cpu", 2000, 8).ok());
  EXPECT_EQ(*store->DeviceCores("local-cpu"), 8);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].key, "local-cpu");
  EXPECT_EQ((*devices)[1].cores, 8);
  ASSERT_TRUE(store->UpsertDevice("local-cpu", "", "sim", 3000, 0).ok());
  EXPECT_EQ(*store->DeviceCores("local-cpu"), 0);
  auto negative = store->UpsertDevice("local-cpu", "", "cpu", 4000, -1);
  EXPECT_TRUE(absl::IsInvalidArgument(negative)) << negative;
  EXPECT_THAT(std::string(negative.message()), HasSubstr("local-cpu"));
  EXPECT_EQ(*store->DeviceCores("local-cpu"), 0);
}

TEST_F(LatencyDbTest, LatenciesRoundTripWithFullUint64Signatures) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const uint64_t high = std::numeric_limits<uint64_t>::max();
  const uint64_t mid = 0x8000000000000000ull;
  auto added = store->PutLatencies("h100", {{high, Latency(1.5)}, {mid, Latency(0.25)}, {0, Latency(0)}});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 3);
  auto found = store->LookupLatencies("h100", {high, mid, 0, 12345});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 3u);
  const StoredLatency& latency = found->at(high);
  EXPECT_DOUBLE_EQ(latency.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(latency.p10_ms, 1.35);
  EXPECT_DOUBLE_EQ(latency.p90_ms, 1.8);
  EXPECT_DOUBLE_EQ(latency.cv, 0.03);
  EXPECT_EQ(latency.repeats, 20);
  EXPECT_EQ(latency.worker, "w1");
  EXPECT_EQ(latency.backend, "cuda");
  EXPECT_EQ(latency.measured_unix_ms, 1000);
  EXPECT_DOUBLE_EQ(found->at(mid).median_ms, 0.25);
  EXPECT_FALSE(found->contains(12345));
  // Latencies are per device key.
  EXPECT_TRUE(store->LookupLatencies("a100", {high, mid})->empty());
  EXPECT_TRUE(store->LookupLatencies("h100", {})->empty());
  EXPECT_EQ(*store->CountLatencies("h100"), 3);
  EXPECT_EQ(*store->CountLatencies("a100"), 0);
}

TEST_F(LatencyDbTest, FirstMeasurementWins) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->PutLatencies("h100", {{7, Latency(1.0, "first")}, {8, Latency(2.0)}}), 2);
  // Re-measurements of 7 (also twice within one call) are ignored; 9 is new.
  auto added = store->PutLatencies(
      "h100", {{7, Latency(5.0, "second")}, {9, Latency(3.0, "w9")}, {9, Latency(4.0, "w9b")}});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 1);
  auto found = store->LookupLatencies("h100", {7, 9});
  ASSERT_TRUE(found.ok());
  EXPECT_DOUBLE_EQ(found->at(7).median_ms, 1.0);
  EXPECT_EQ(found->at(7).worker, "first");
  EXPECT_DOUBLE_EQ(found->at(9).median_ms, 3.0);
  EXPECT_EQ(found->at(9).worker, "w9");
  EXPECT_EQ(*store->CountLatencies("h100"), 3);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, 3);
  EXPECT_EQ((*devices)[0].ignored_measurements, 2);
}

TEST_F(LatencyDbTest, PutLatenciesRegistersAnUnknownDevice) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutLatencies("l4", {{1, Latency(0.5, "w", 777)}}).ok());
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key, "l4");
  EXPECT_EQ((*devices)[0].backend, "cuda");
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 777);
  EXPECT_EQ((*devices)[0].latencies, 1);
  // A later UpsertDevice keeps first_seen and the count.
  ASSERT_TRUE(store->UpsertDevice("l4", "NVIDIA L4", "cuda", 900).ok());
  devices = store->ListDevices();
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 777);
  EXPECT_EQ((*devices)[0].description, "NVIDIA L4");
  EXPECT_EQ((*devices)[0].latencies, 1);
}

TEST_F(LatencyDbTest, PutLatenciesRejectsBadValuesAndWritesNothing) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double median : {nan, inf, -inf, -0.5}) {
    auto added = store->PutLatencies("h100", {{1, Latency(1.0)}, {2, Latency(median)}});
    ASSERT_FALSE(added.ok()) << median;
    EXPECT_TRUE(absl::IsInvalidArgument(added.status()));
    EXPECT_THAT(std::string(added.status().message()), HasSubstr("median_ms"));
    EXPECT_THAT(std::string(added.status().message()), HasSubstr("h100"));
  }
  StoredLatency bad_p90 = Latency(1.0);
  bad_p90.p90_ms = nan;
  auto added = store->PutLatencies("h100", {{3, bad_p90}});
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(std::string(added.status().message()), HasSubstr("p90_ms"));
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutLatencies("", {{1, Latency(1)}}).status()));
  EXPECT_EQ(*store->CountLatencies("h100"), 0);
  EXPECT_FALSE(*store->HasDevice("h100"));
  EXPECT_EQ(*store->PutLatencies("h100", {}), 0);
  EXPECT_FALSE(*store->HasDevice("h100"));
}

TEST_F(LatencyDbTest, LooksUpTenThousandSignaturesInOneCall) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::pair<uint64_t, StoredLatency>> rows;
  std::vector<uint64_t> wanted;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t signature = i * 0x9E3779B97F4A7C15ull;
    rows.emplace_back(signature, Latency(0.001 * static_cast<double>(i + 1)));
    wanted.push_back(signature);
    wanted.push_back(signature + 1);  // never stored
  }
  EXPECT_EQ(*store->PutLatencies("h100", rows), 10000);
  auto found = store->LookupLatencies("h100", wanted);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->size(), 10000u);
  EXPECT_DOUBLE_EQ(found->at(rows[9999].first).median_ms, 10.0);
}

TEST_F(LatencyDbTest, DeleteLatenciesOfAWorkerOrOfAWholeKey) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutLatencies("h100", {{1, Latency(1.0, "good")},
                                           {2, Latency(2.0, "bad")},
                                           {3, Latency(3.0, "bad")}})
                  .ok());
  ASSERT_TRUE(store->PutLatencies("a100", {{1, Latency(1.5, "bad")}}).ok());
  auto deleted = store->DeleteLatencies("h100", "bad");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2);
  auto left = store->LookupLatencies("h100", {1, 2, 3});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 1u);
  EXPECT_EQ(left->at(1).worker, "good");
  EXPECT_EQ(*store->CountLatencies("a100"), 1) << "other keys keep theirs";
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  for (const DeviceRow& d : *devices) EXPECT_EQ(d.latencies, 1) << d.key;
  // The forgotten stages can be measured again (first measurement wins anew).
  EXPECT_EQ(*store->PutLatencies("h100", {{2, Latency(2.5, "good")}}), 1);
  deleted = store->DeleteLatencies("h100", "");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ(*store->CountLatencies("h100"), 0);
  EXPECT_EQ(*store->DeleteLatencies("h100", "nobody"), 0);
  auto unknown = store->DeleteLatencies("v100", "");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'v100'"));
}

// A child process writes batches of latencies and reports each committed
// batch through a pipe; it is killed with SIGKILL mid-way. Every reported
// batch must be in the file, batches are all-or-nothing, and the file passes
// an integrity check.
TEST_F(LatencyDbTest, KilledWriterLeavesConsistentFile) {
  const std::string path = PathOf("killed.db");
  ASSERT_NE(OpenStore("killed.db"), nullptr);  // schema exists before the child starts
  constexpr int kBatch = 200;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    auto store = OpenFarmDatabase(path);
    if (!store.ok()) ::_exit(2);
    for (int32_t batch = 0;; ++batch) {
      std::vector<std::pair<uint64_t, StoredLatency>> rows;
      for (int i = 0; i < kBatch; ++i) {
        rows.emplace_back(static_cast<uint64_t>(batch) * kBatch + i, Latency(1.0 + i));
      }
      if (!store->latencies->PutLatencies("h100", rows).ok()) ::_exit(3);
      if (::write(pipe_fds[1], &batch, sizeof(batch)) != sizeof(batch)) ::_exit(4);
    }
  }
  ::close(pipe_fds[1]);
  int32_t last_committed = -1;
  while (last_committed < 20) {
    ASSERT_EQ(::read(pipe_fds[0], &last_committed, sizeof(last_committed)),
              static_cast<ssize_t>(sizeof(last_committed)));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child exited with " << WEXITSTATUS(wait_status);
  // Batches committed after our last read may be in the pipe: drain it.
  int32_t reported = last_committed;
  while (::read(pipe_fds[0], &reported, sizeof(reported)) == sizeof(reported)) {
    last_committed = reported;
  }
  ::close(pipe_fds[0]);

  auto store = OpenStore("killed.db");
  ASSERT_NE(store, nullptr);
  const int64_t count = *store->CountLatencies("h100");
  EXPECT_GE(count, int64_t{last_committed + 1} * kBatch);
  EXPECT_EQ(count % kBatch, 0) << "a batch was partly written";
  std::vector<uint64_t> committed;
  for (int64_t i = 0; i < int64_t{last_committed + 1} * kBatch; ++i) committed.push_back(i);
  EXPECT_EQ(static_cast<int64_t>(store->LookupLatencies("h100", committed)->size()),
            int64_t{last_committed + 1} * kBatch);
  auto devices = store->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, count);  // counter and rows move together
  store.reset();
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  auto check = (*db)->Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok() && *check->Step());
  EXPECT_EQ(check->ColumnText(0), "ok");
}

// Two stores on one file (as two server processes would be) see each other's
// commits.
TEST_F(LatencyDbTest, TwoConnectionsShareOneFile) {
  auto first = OpenStore("shared.db");
  auto second = OpenStore("shared.db");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->PutLatencies("h100", {{1, Latency(1.0, "a")}}).ok());
  EXPECT_EQ(*second->PutLatencies("h100", {{1, Latency(2.0, "b")}, {2, Latency(3.0)}}), 1);
  EXPECT_EQ(first->LookupLatencies("h100", {1})->at(1).worker, "a");
  EXPECT_EQ(*first->CountLatencies("h100"), 2);
}

}  // namespace
}  // namespace iosfarm::server
