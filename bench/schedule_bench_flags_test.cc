#include "bench/schedule_bench_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace iosfarm::bench {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  std::optional<int> exit;
  ScheduleBenchArgs args;
  std::string err;
};

Parsed Parse(std::vector<std::string> flags) {
  flags.insert(flags.begin(), "schedule_bench");
  std::vector<const char*> argv;
  for (const std::string& flag : flags) argv.push_back(flag.c_str());
  Parsed parsed;
  std::ostringstream err;
  parsed.exit =
      ParseScheduleBenchArgs(static_cast<int>(argv.size()), argv.data(), err, parsed.args);
  parsed.err = err.str();
  return parsed;
}

TEST(ScheduleBenchFlagsTest, DefaultsRunTheZooOnTheCpu) {
  Parsed p = Parse({});
  ASSERT_EQ(p.exit, std::nullopt) << p.err;
  EXPECT_EQ(p.args.settings.backend, "cpu");
  EXPECT_EQ(p.args.settings.repeats, 10);
  EXPECT_EQ(p.args.settings.warmup, 2);
  ASSERT_EQ(p.args.models.size(), 6u);
  EXPECT_EQ(p.args.models[0].name, "squeezenet");
  EXPECT_EQ(p.args.models[0].r, 3);
  EXPECT_EQ(p.args.models[0].s, 8);
  EXPECT_EQ(p.args.models[3].name, "randwire");
  EXPECT_EQ(p.args.models[3].r, 1);
  EXPECT_EQ(p.args.models[3].s, 3);
  EXPECT_EQ(p.args.models[3].block_size, 50);
}

TEST(ScheduleBenchFlagsTest, CudaDefaultsAndPerModelBounds) {
  Parsed p = Parse({"--backend", "cuda", "--models", "nasnet_a:2x4:35,resnet50", "--r", "2",
                    "--latency-db", "/tmp/l.db"});
  ASSERT_EQ(p.exit, std::nullopt) << p.err;
  EXPECT_EQ(p.args.settings.repeats, 50);
  EXPECT_EQ(p.args.settings.warmup, 5);
  EXPECT_EQ(p.args.settings.latency_db, "/tmp/l.db");
  ASSERT_EQ(p.args.models.size(), 2u);
  EXPECT_EQ(p.args.models[0].r, 2);
  EXPECT_EQ(p.args.models[0].s, 4);
  EXPECT_EQ(p.args.models[0].block_size, 35);
  EXPECT_EQ(p.args.models[1].r, 2);  // --r
  EXPECT_EQ(p.args.models[1].s, 8);
}

TEST(ScheduleBenchFlagsTest, OldLatencyCacheFlagStillWorks) {
  Parsed p = Parse({"--models", "squeezenet", "--latency-cache", "/tmp/old.db"});
  ASSERT_EQ(p.exit, std::nullopt) << p.err;
  EXPECT_EQ(p.args.settings.latency_db, "/tmp/old.db");
}

TEST(ScheduleBenchFlagsTest, OnnxFilesAreNamedAfterTheirStem) {
  const std::string path = ::testing::TempDir() + "/my_net.onnx";
  std::ofstream(path) << "bytes are read later";
  Parsed p = Parse({"--models", path + ":1x2"});
  ASSERT_EQ(p.exit, std::nullopt) << p.err;
  ASSERT_EQ(p.args.models.size(), 1u);
  EXPECT_TRUE(p.args.models[0].onnx);
  EXPECT_EQ(p.args.models[0].name, "my_net.onnx");
  EXPECT_EQ(p.args.models[0].arg, path);
  EXPECT_EQ(p.args.models[0].r, 1);
  EXPECT_EQ(p.args.models[0].s, 2);
}

TEST(ScheduleBenchFlagsTest, UsageErrorsExitTwoNamingTheProblem) {
  Parsed unknown = Parse({"--models", "no_such_model"});
  EXPECT_EQ(unknown.exit, 2);
  EXPECT_THAT(unknown.err, HasSubstr("model 'no_such_model' is neither a zoo model"));
  Parsed bound = Parse({"--models", "squeezenet:3by8"});
  EXPECT_EQ(bound.exit, 2);
  EXPECT_THAT(bound.err, HasSubstr("bad bound '3by8' (want RxS, both in 1..64)"));
  EXPECT_EQ(Parse({"--models", "squeezenet:3x8junk"}).exit, 2);
  EXPECT_EQ(Parse({"--models", "squeezenet:0x8"}).exit, 2);
  Parsed block = Parse({"--models", "squeezenet:3x8:0"});
  EXPECT_EQ(block.exit, 2);
  EXPECT_THAT(block.err, HasSubstr("bad block size '0' in 'squeezenet:3x8:0'"));
  EXPECT_EQ(Parse({"--backend", "tpu"}).exit, 2);
  EXPECT_EQ(Parse({"--batch", "0"}).exit, 2);
  EXPECT_EQ(Parse({"--rounds", "x"}).exit, 2);
  EXPECT_EQ(Parse({"--help"}).exit, 0);
  Parsed graph_on_cpu = Parse({"--cuda-graph-stages"});
  EXPECT_EQ(graph_on_cpu.exit, 2);
  EXPECT_THAT(graph_on_cpu.err, HasSubstr("--cuda-graph-stages needs --backend cuda"));
  Parsed flush_alone = Parse({"--backend", "cuda", "--cuda-flush-l2"});
  EXPECT_EQ(flush_alone.exit, 2);
  EXPECT_THAT(flush_alone.err, HasSubstr("--cuda-flush-l2 needs --cuda-graph-stages"));
}

TEST(ScheduleBenchFlagsTest, GraphTimedStagesOnCuda) {
  Parsed parsed = Parse({"--backend", "cuda", "--cuda-graph-stages", "--models", "squeezenet"});
  ASSERT_FALSE(parsed.exit.has_value()) << parsed.err;
  EXPECT_TRUE(parsed.args.settings.cuda_graph_stages);
  EXPECT_FALSE(Parse({"--backend", "cuda"}).args.settings.cuda_graph_stages);
  Parsed flushed = Parse({"--backend", "cuda", "--cuda-graph-stages", "--cuda-flush-l2"});
  ASSERT_FALSE(flushed.exit.has_value()) << flushed.err;
  EXPECT_TRUE(flushed.args.settings.cuda_flush_l2);
}

TEST(ScheduleBenchFlagsTest, BoundedSearchByDefaultExhaustiveOnRequest) {
  EXPECT_FALSE(Parse({}).args.settings.exhaustive);
  EXPECT_FALSE(Parse({"--search", "bounded"}).args.settings.exhaustive);
  Parsed exhaustive = Parse({"--search", "exhaustive", "--models", "inception_v3"});
  ASSERT_FALSE(exhaustive.exit.has_value()) << exhaustive.err;
  EXPECT_TRUE(exhaustive.args.settings.exhaustive);
  EXPECT_FALSE(exhaustive.args.settings.no_core_bound);
  EXPECT_TRUE(Parse({"--no-core-bound"}).args.settings.no_core_bound);
  EXPECT_TRUE(Parse({"--no-sub-stage-bound"}).args.settings.no_sub_stage_bound);
  EXPECT_FALSE(exhaustive.args.settings.no_sub_stage_bound);
  Parsed wrong = Parse({"--search", "lazy"});
  EXPECT_EQ(wrong.exit, 2);
  EXPECT_THAT(wrong.err, HasSubstr("--search"));
}

}  // namespace
}  // namespace iosfarm::bench
