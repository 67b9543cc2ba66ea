#include "bench/bench_latency_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

namespace iosfarm::bench {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string FreshPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

TEST(BenchLatencyCacheTest, KeysByBackendDeviceAndSignatureVersion) {
  EXPECT_EQ(BenchLatencyCache::DeviceKey("cuda", "NVIDIA H100 (sm_90)"),
            "cuda|NVIDIA H100 (sm_90)|v" + std::to_string(scheduler::ios::kSignatureVersion));
}

TEST(BenchLatencyCacheTest, AnswersWhatWasAddedAcrossReopens) {
  const std::string path = FreshPath("bench_cache_reopen.db");
  {
    auto cache = BenchLatencyCache::Open(path, "cpu", "test cpu");
    ASSERT_TRUE(cache.ok()) << cache.status();
    EXPECT_EQ((*cache)->path(), path);
    EXPECT_EQ(*(*cache)->Count(), 0);
    EXPECT_EQ(*(*cache)->Find(42), std::nullopt);
    ASSERT_TRUE((*cache)->Add(42, 1.25).ok());
    ASSERT_TRUE((*cache)->Add(0xffffffffffffffffULL, 0.5).ok());  // the top bit survives
    EXPECT_EQ(*(*cache)->Find(42), 1.25);
    EXPECT_EQ(*(*cache)->Count(), 2);
  }
  auto again = BenchLatencyCache::Open(path, "cpu", "test cpu");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*(*again)->Count(), 2);
  EXPECT_EQ(*(*again)->Find(42), 1.25);
  EXPECT_EQ(*(*again)->Find(0xffffffffffffffffULL), 0.5);
  EXPECT_EQ(*(*again)->Find(7), std::nullopt);
}

TEST(BenchLatencyCacheTest, OtherDevicesAndBackendsAreNotAnswered) {
  const std::string path = FreshPath("bench_cache_devices.db");
  {
    auto cpu = BenchLatencyCache::Open(path, "cpu", "machine A");
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    ASSERT_TRUE((*cpu)->Add(9, 3.0).ok());
  }
  auto other_device = BenchLatencyCache::Open(path, "cpu", "machine B");
  ASSERT_TRUE(other_device.ok()) << other_device.status();
  EXPECT_EQ(*(*other_device)->Find(9), std::nullopt);
  EXPECT_EQ(*(*other_device)->Count(), 0);
  auto other_backend = BenchLatencyCache::Open(path, "cuda", "machine A");
  ASSERT_TRUE(other_backend.ok()) << other_backend.status();
  EXPECT_EQ(*(*other_backend)->Find(9), std::nullopt);
}

TEST(BenchLatencyCacheTest, FirstMeasurementWins) {
  auto cache = BenchLatencyCache::Open(FreshPath("bench_cache_first.db"), "cpu", "x");
  ASSERT_TRUE(cache.ok()) << cache.status();
  ASSERT_TRUE((*cache)->Add(5, 2.0).ok());
  ASSERT_TRUE((*cache)->Add(5, 9.0).ok());
  EXPECT_EQ(*(*cache)->Find(5), 2.0);
  EXPECT_EQ(*(*cache)->Count(), 1);
}

TEST(BenchLatencyCacheTest, RefusesBadLatenciesAndWritesNothing) {
  auto cache = BenchLatencyCache::Open(FreshPath("bench_cache_bad.db"), "cpu", "x");
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ((*cache)->Add(1, -1.0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*cache)->Add(2, std::nan("")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*(*cache)->Count(), 0);
}

TEST(BenchLatencyCacheTest, OldTextCacheIsRefusedNamingTheFile) {
  const std::string path = FreshPath("latency_cache.txt");
  std::ofstream(path) << "cpu|x|v1\t000000000000002a\t1.5\n";
  auto cache = BenchLatencyCache::Open(path, "cpu", "x");
  ASSERT_FALSE(cache.ok());
  EXPECT_THAT(cache.status().message(), HasSubstr(path));
}

// A replay answers from one device key of an existing database and stores
// nothing; a key it lacks, or no key where it holds several, is named.
TEST(BenchLatencyCacheTest, AReplayAnswersFromOneStoredDeviceKeyAndStoresNothing) {
  const std::string path = FreshPath("bench_cache_replay.db");
  EXPECT_THAT(std::string(BenchLatencyCache::OpenForReplay(path, "").status().message()),
              HasSubstr("no such file"));
  {
    auto gpu = BenchLatencyCache::Open(path, "cuda", "NVIDIA H200");
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    ASSERT_TRUE((*gpu)->Add(5, 0.125).ok());
  }
  auto only = BenchLatencyCache::OpenForReplay(path, "");
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_EQ((*only)->device_key(), BenchLatencyCache::DeviceKey("cuda", "NVIDIA H200"));
  EXPECT_EQ(*(*only)->Find(5), 0.125);
  EXPECT_EQ(*(*only)->Find(6), std::nullopt);
  EXPECT_EQ((*only)->Add(6, 1.0).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*(*only)->Count(), 1);
  {
    auto cpu = BenchLatencyCache::Open(path, "cpu", "here");
    ASSERT_TRUE(cpu.ok()) << cpu.status();
  }
  const Status several = BenchLatencyCache::OpenForReplay(path, "").status();
  EXPECT_EQ(several.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(several.message()),
              AllOf(HasSubstr("several device keys"), HasSubstr("cuda|NVIDIA H200|v"),
                    HasSubstr("cpu|here|v")));
  const std::string absent = BenchLatencyCache::DeviceKey("rocm", "x");
  EXPECT_THAT(std::string(BenchLatencyCache::OpenForReplay(path, absent).status().message()),
              HasSubstr("no device key '" + absent + "'"));
  // Keys end in this build's signature version: another's never matches.
  const Status stale = BenchLatencyCache::OpenForReplay(path, "cpu|here|v999").status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(stale.message()), HasSubstr("not of this build's stage signatures"));
  auto named = BenchLatencyCache::OpenForReplay(path, BenchLatencyCache::DeviceKey("cpu", "here"));
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(*(*named)->Find(5), std::nullopt);  // the GPU's latency is not the cpu's
}

}  // namespace
}  // namespace iosfarm::bench
