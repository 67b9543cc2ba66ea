#include "scheduler/farm/phase.h"

#include "gtest/gtest.h"

namespace iosfarm::scheduler::farm {
namespace {

TEST(PhaseTest, KindNamesRoundTrip) {
  for (PhaseKind kind : {PhaseKind::kEnumerate, PhaseKind::kBuild, PhaseKind::kProfile,
                         PhaseKind::kUpdate, PhaseKind::kMeasure}) {
    EXPECT_EQ(PhaseKindFromName(PhaseKindName(kind)), kind);
  }
  EXPECT_EQ(PhaseKindName(PhaseKind::kProfile), "profile");
  EXPECT_EQ(PhaseKindFromName("Profile"), std::nullopt);
  EXPECT_EQ(PhaseKindFromName(""), std::nullopt);
}

TEST(PhaseTest, PolicyAndOutcomeNamesRoundTrip) {
  for (Policy p :
       {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous, Policy::kCriticalPath}) {
    EXPECT_EQ(PolicyFromName(PolicyName(p)), p);
  }
  EXPECT_EQ(PolicyName(Policy::kInterleaved), "interleaved");
  EXPECT_EQ(PolicyName(Policy::kCriticalPath), "critical-path");
  EXPECT_EQ(PolicyFromName("round-robin"), std::nullopt);
  for (PhaseOutcome o : {PhaseOutcome::kOk, PhaseOutcome::kFailed, PhaseOutcome::kWorkerLost,
                         PhaseOutcome::kCancelled}) {
    EXPECT_EQ(PhaseOutcomeFromName(PhaseOutcomeName(o)), o);
  }
  EXPECT_EQ(PhaseOutcomeName(PhaseOutcome::kWorkerLost), "worker_lost");
}

TEST(PhaseTest, UrgencyExtrapolatesTheJobsOwnPaceAndAddsPriority) {
  // 2 of 10 blocks done in 100 s of its own phases: 400 s left.
  EXPECT_DOUBLE_EQ(EstimateUrgencySeconds(100, 2, 10, 0), 400);
  EXPECT_DOUBLE_EQ(EstimateUrgencySeconds(0, 0, 10, 0), 0);     // nothing to go by yet
  EXPECT_DOUBLE_EQ(EstimateUrgencySeconds(100, 10, 10, 0), 0);  // search done
  EXPECT_DOUBLE_EQ(EstimateUrgencySeconds(100, 2, 10, 2), 400 + 2 * kPriorityUrgencySeconds);
  EXPECT_DOUBLE_EQ(EstimateUrgencySeconds(100, 2, 10, -1), 0);  // never negative
}

TEST(PhaseTest, ResourceClassesAndNames) {
  EXPECT_EQ(ResourceClassOf(PhaseKind::kEnumerate), ResourceClass::kServerCpu);
  EXPECT_EQ(ResourceClassOf(PhaseKind::kUpdate), ResourceClass::kServerCpu);
  EXPECT_EQ(ResourceClassOf(PhaseKind::kBuild), ResourceClass::kWorkerCpu);
  EXPECT_EQ(ResourceClassOf(PhaseKind::kProfile), ResourceClass::kWorkerGpu);
  EXPECT_EQ(ResourceClassOf(PhaseKind::kMeasure), ResourceClass::kWorkerGpu);
  EXPECT_EQ(ServerSlotResource(3), "server-cpu/3");
  EXPECT_EQ(WorkerCpuResource("w1"), "w1/cpu");
  EXPECT_EQ(WorkerGpuResource("w1"), "w1/gpu");
  EXPECT_EQ(WorkerDeviceResource("w1", MeasuringDevice::kGpu), "w1/gpu");
  // A CPU worker measures on its CPU: neither "/gpu" nor its build resource.
  EXPECT_EQ(WorkerDeviceResource("w1", MeasuringDevice::kCpu), "w1/device");
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
