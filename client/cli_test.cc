#include "client/cli.h"
#include "client/cli_testing.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace iosfarm::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Result = CliResult;

TEST(CliTest, ModelsListsTheSixZooModels) {
  Result r = RunIosfarm({"models"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* name :
       {"inception_v3", "resnet50", "squeezenet", "randwire", "nasnet_a", "nasnet_a_mobile"}) {
    EXPECT_THAT(r.out, HasSubstr(name));
  }
  Result json = RunIosfarm({"models", "--format", "json"});
  ASSERT_EQ(json.code, kExitOk);
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["models"].size(), 6u);
  EXPECT_EQ(parsed["models"][0]["name"], "inception_v3");
}

TEST(CliTest, InspectZooModelAsJson) {
  Result r = RunIosfarm({"inspect", "resnet50", "--batch", "2", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["model"], "resnet50");
  EXPECT_EQ(j["source"], "zoo");
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["op_counts"]["Conv"], 53);
  EXPECT_NEAR(j["macs"].get<double>() / 2, 4.1e9, 0.1e9);
  EXPECT_EQ(j["inputs"][0]["shape"], (std::vector<int64_t>{2, 3, 224, 224}));
  EXPECT_EQ(j["outputs"][0]["shape"], (std::vector<int64_t>{2, 1000}));
  EXPECT_GE(j["width"].get<int>(), 2);
  EXPECT_EQ(j["block_size"], 50);
  EXPECT_GE(j["blocks"]["num_blocks"].get<int>(), 2);
  EXPECT_EQ(j["blocks"]["num_ops"], j["ops"]);
  EXPECT_TRUE(r.err.empty());
}

TEST(CliTest, InspectTextAndDot) {
  const std::string dot = (std::filesystem::temp_directory_path() / "iosfarm_cli_test.dot").string();
  Result r = RunIosfarm({"inspect", "squeezenet", "--dot", dot});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("model     squeezenet (zoo)"));
  EXPECT_THAT(r.out, HasSubstr("Conv"));
  std::ifstream in(dot);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "digraph \"squeezenet\" {");
  std::remove(dot.c_str());
}

TEST(CliTest, FailuresExitOneWithOneLineMessage) {
  Result r = RunIosfarm({"inspect", "no_such_model"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("iosfarm: error: model 'no_such_model'"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_TRUE(r.out.empty());

  const std::string bad = (std::filesystem::temp_directory_path() / "iosfarm_bad.onnx").string();
  std::ofstream(bad) << "this is not an onnx model";
  Result b = RunIosfarm({"inspect", bad});
  EXPECT_EQ(b.code, kExitFailure);
  EXPECT_THAT(b.err, HasSubstr(bad));
  std::remove(bad.c_str());
}

TEST(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunIosfarm({}).code, kExitUsage);
  EXPECT_EQ(RunIosfarm({"frobnicate"}).code, kExitUsage);
  EXPECT_EQ(RunIosfarm({"inspect"}).code, kExitUsage);
  EXPECT_EQ(RunIosfarm({"inspect", "resnet50", "--batch", "0"}).code, kExitUsage);
  EXPECT_EQ(RunIosfarm({"inspect", "resnet50", "--format", "xml"}).code, kExitUsage);
  Result r = RunIosfarm({"models", "--bogus"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--bogus"));
}

TEST(CliTest, HelpExitsZero) {
  Result r = RunIosfarm({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("inspect"));
  Result sub = RunIosfarm({"inspect", "--help"});
  EXPECT_EQ(sub.code, kExitOk);
  EXPECT_THAT(sub.out, HasSubstr("--batch"));
}

}  // namespace
}  // namespace iosfarm::client
