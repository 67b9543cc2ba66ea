#include "server/worker_registry.h"

#include <limits>

#include "gtest/gtest.h"

namespace iosfarm::server {
namespace {

class NullLink final : public WorkerLink {
 public:
  bool Send(const WorkerCommand&) override { return true; }
  void Close() override {}
};

WorkerRegistration Registration(const std::string& id, const std::string& key) {
  WorkerRegistration r;
  r.worker_id = id;
  r.device_key = key;
  r.backend = "sim";
  return r;
}

TEST(WorkerRegistryTest, BoundsNameTheFieldAndCutFreeText) {
  WorkerRegistration r = Registration("w1", "k");
  r.device_description = std::string(5000, 'd') + "\x1b[2J";
  auto bounded = WorkerRegistry::Bounded(r);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_LE(bounded->device_description.size(), WorkerRegistry::kMaxDescriptionBytes + 64);
  EXPECT_EQ(bounded->device_description.find('\x1b'), std::string::npos);

  r = Registration("w\n1", "k");
  auto bad = WorkerRegistry::Bounded(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("register: worker_id"), std::string::npos);
  r = Registration("w1", "");
  EXPECT_NE(std::string(WorkerRegistry::Bounded(r).status().message()).find("register: device_key"),
            std::string::npos);

  r = Registration("w1", "k");
  r.cores = 16;
  ASSERT_TRUE(WorkerRegistry::Bounded(r).ok());
  EXPECT_EQ(WorkerRegistry::Bounded(r)->cores, 16);
  for (const int cores : {-1, WorkerRegistry::kMaxCores + 1}) {
    r.cores = cores;
    EXPECT_NE(std::string(WorkerRegistry::Bounded(r).status().message()).find("register: cores"),
              std::string::npos)
        << cores;
  }

  r.cores = 0;
  r.device_floor.launch_ms = -0.001;  // a hostile or broken worker's floor
  EXPECT_NE(std::string(WorkerRegistry::Bounded(r).status().message())
                .find("register: device floor: launch_ms"),
            std::string::npos);
  r.device_floor.launch_ms = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(WorkerRegistry::Bounded(r).ok());
  r.device_floor.launch_ms = 0.003;
  ASSERT_TRUE(WorkerRegistry::Bounded(r).ok());
  EXPECT_DOUBLE_EQ(WorkerRegistry::Bounded(r)->device_floor.launch_ms, 0.003);

  PhaseReport report;
  report.error = std::string(1 << 20, 'e');
  EXPECT_LE(WorkerRegistry::BoundedReport(report).error.size(),
            WorkerRegistry::kMaxWorkerErrorBytes + 64);
}

TEST(WorkerRegistryTest, TracksWhatEachWorkerDoesAndWhoWentSilent) {
  WorkerRegistry registry;
  ASSERT_TRUE(registry.Add(Registration("w1", "a"), std::make_shared<NullLink>(), 1000).ok());
  ASSERT_TRUE(registry.Add(Registration("w2", "b"), std::make_shared<NullLink>(), 1000).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(
      registry.Add(Registration("w1", "a"), std::make_shared<NullLink>(), 1000)));
  EXPECT_TRUE(registry.HasDeviceKey("b"));
  EXPECT_FALSE(registry.HasDeviceKey("c"));

  registry.Started("w1", scheduler::farm::PhaseKind::kProfile, 7);
  auto snapshot = registry.Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].state, "profile");
  EXPECT_EQ(snapshot[0].job_id, 7);
  EXPECT_EQ(snapshot[1].state, "idle");
  // Its CPU builds for another job meanwhile: the GPU's phase shows first.
  registry.Started("w1", scheduler::farm::PhaseKind::kBuild, 9);
  snapshot = registry.Snapshot();
  EXPECT_EQ(snapshot[0].state, "profile");
  EXPECT_EQ(snapshot[0].job_id, 7);
  EXPECT_EQ(snapshot[0].build_job_id, 9);
  registry.Finished("w1", scheduler::farm::PhaseKind::kProfile);
  snapshot = registry.Snapshot();
  EXPECT_EQ(snapshot[0].state, "build");
  EXPECT_EQ(snapshot[0].job_id, 9);
  registry.Finished("w1", scheduler::farm::PhaseKind::kBuild);
  registry.Started("w2", scheduler::farm::PhaseKind::kBuild, 8);
  registry.Released("w2", scheduler::farm::PhaseKind::kBuild);
  snapshot = registry.Snapshot();
  EXPECT_EQ(snapshot[0].state, "idle");
  EXPECT_EQ(snapshot[0].build_job_id, 0);
  EXPECT_EQ(snapshot[0].phases_done, 2);
  EXPECT_EQ(snapshot[1].state, "idle");
  EXPECT_EQ(snapshot[1].phases_done, 0);  // a released phase is not done

  registry.Heartbeat("w2", 6000);
  EXPECT_TRUE(registry.Silent(6000, 5.0).empty());
  EXPECT_EQ(registry.Silent(6001, 5.0), std::vector<std::string>{"w1"});
  EXPECT_NE(registry.Remove("w1"), nullptr);
  EXPECT_EQ(registry.Remove("w1"), nullptr);
  EXPECT_EQ(registry.size(), 1u);
}

}  // namespace
}  // namespace iosfarm::server
