#include "client/cli.h"
#include "client/cli_testing.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/npy.h"

namespace iosfarm::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Result = CliResult;

// `iosfarm search inception_v3 --backend sim:h100 --format json` and `extra`.
Result SearchInceptionV3Json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"search",   "inception_v3", "--backend",
                                   "sim:h100", "--format",     "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunIosfarm(args);
}

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

TEST(CliTest, CudaOnlyFlagsNeedTheCudaBackend) {
  Result r = RunIosfarm({"search", "squeezenet", "--backend", "sim", "--cuda-graph-stages"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--cuda-graph-stages needs --backend cuda"));
  Result run = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--profiler-range"});
  EXPECT_EQ(run.code, kExitUsage);
  EXPECT_THAT(run.err, HasSubstr("--profiler-range needs --backend cuda"));
  Result tune = RunIosfarm({"tune", "squeezenet", "--backend", "cpu", "--cuda-graph-stages"});
  EXPECT_EQ(tune.code, kExitUsage);
  EXPECT_THAT(tune.err, HasSubstr("--cuda-graph-stages needs --backend cuda"));
}

TEST(CliTest, SearchLabelsPredictedFiguresAndShowsProgressOnStderr) {
  Result r = RunIosfarm({"search", "squeezenet", "--backend", "sim"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ios:        "));
  EXPECT_THAT(r.out, HasSubstr(" ms predicted ("));
  EXPECT_THAT(r.out, HasSubstr("predicted speedup: "));
  EXPECT_THAT(r.out, Not(HasSubstr("search: 0/")));  // progress stays off stdout
  // Off a terminal: plain lines, the first before anything is measured, the
  // last with every block solved.
  EXPECT_THAT(r.err, StartsWith("search: 0/"));
  EXPECT_THAT(r.err, HasSubstr(" blocks solved, "));
  EXPECT_THAT(r.err, HasSubstr(" stages measured, "));
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  std::istringstream lines(r.err);
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  const std::string total = last.substr(last.find('/') + 1, last.find(' ', last.find('/')) -
                                                                 last.find('/') - 1);
  EXPECT_THAT(last, StartsWith("search: " + total + "/" + total + " blocks solved"));

  Result json = RunIosfarm({"search", "squeezenet", "--backend", "sim", "--format", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["latency_kind"], "predicted");
  EXPECT_GT(j["latency_ms"]["ios"].get<double>(), 0);
}

// Small blocks make boundary windows (re-solved once every block is):
// off a terminal they add no line each, and the last line counts them all,
// as many as the summary reports.
TEST(CliTest, SearchProgressCountsBoundaryWindowsWithoutALineEach) {
  Result r = RunIosfarm(
      {"search", "randwire", "--backend", "sim", "--block-size", "12", "--search-threads", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string summary = "boundary windows (";
  const size_t at = r.out.find(summary);
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t begin = r.out.rfind(", ", at) + 2;
  const int windows = std::stoi(r.out.substr(begin, at - begin));
  ASSERT_GT(windows, 0) << "the test needs a search with windows";
  std::istringstream lines(r.err);
  std::string line, last;
  int all_blocks_lines = 0;
  while (std::getline(lines, line)) {
    const size_t slash = line.find('/');
    const size_t space = line.find(' ', slash);
    if (line.rfind("search: ", 0) == 0 && slash != std::string::npos &&
        line.substr(8, slash - 8) == line.substr(slash + 1, space - slash - 1)) {
      ++all_blocks_lines;
    }
    last = line;
  }
  // One as the last block is solved, one at the end.
  EXPECT_LE(all_blocks_lines, 2) << r.err;
  const std::string counted = std::to_string(windows) + "/" + std::to_string(windows);
  EXPECT_THAT(last, HasSubstr(", " + counted + " boundary windows, ")) << r.err;
}

TEST(CliTest, SearchThreadsGiveTheSameScheduleAndAreReported) {
  auto search = [](const std::string& threads) {
    return SearchInceptionV3Json({"--search-threads", threads});
  };
  Result one = search("1");
  Result three = search("3");
  ASSERT_EQ(one.code, kExitOk) << one.err;
  ASSERT_EQ(three.code, kExitOk) << three.err;
  auto a = nlohmann::json::parse(one.out);
  auto b = nlohmann::json::parse(three.out);
  EXPECT_EQ(a["search_threads"], 1);
  EXPECT_EQ(b["search_threads"], 3);
  EXPECT_EQ(a["schedule"], b["schedule"]);
  // The same statistics, but for the walks shared (one thread walks each
  // shape in one walk; three threads may split one).
  EXPECT_GT(a["stats"]["shared_bound_walk_blocks"].get<int>(), 0);
  EXPECT_GT(b["stats"]["shared_bound_walk_blocks"].get<int>(), 0);
  for (const char* shared : {"shared_walk_blocks", "shared_bound_walk_blocks"}) {
    a["stats"].erase(shared);
    b["stats"].erase(shared);
  }
  EXPECT_EQ(a["stats"], b["stats"]);
  Result zero = search("0");
  EXPECT_EQ(zero.code, kExitUsage);
  EXPECT_THAT(zero.err, HasSubstr("--search-threads"));
}

// --back-to-back-floor keeps the sim's launches and work but drops its issue
// order (device_floor.h), and stays exact on inception_v3; it needs a floor.
TEST(CliTest, SearchBackToBackFloorDropsTheIssueOrderAndStaysExact) {
  Result full = SearchInceptionV3Json({});
  Result b2b = SearchInceptionV3Json({"--back-to-back-floor"});
  ASSERT_EQ(full.code, kExitOk) << full.err;
  ASSERT_EQ(b2b.code, kExitOk) << b2b.err;
  const auto a = nlohmann::json::parse(full.out);
  const auto b = nlohmann::json::parse(b2b.out);
  EXPECT_EQ(a["device_floor"]["back_to_back"], false);
  EXPECT_EQ(a["device_floor"]["issue_order"], "round-robin");
  EXPECT_EQ(b["device_floor"]["back_to_back"], true);
  EXPECT_EQ(b["device_floor"]["issue_order"], "unknown");
  EXPECT_EQ(b["device_floor"]["launch_ms"], a["device_floor"]["launch_ms"]);
  EXPECT_NEAR(b["latency_ms"]["ios"].get<double>(), a["latency_ms"]["ios"].get<double>(), 1e-9);
  Result both = SearchInceptionV3Json({"--back-to-back-floor", "--no-device-floor"});
  EXPECT_EQ(both.code, kExitUsage);
  EXPECT_THAT(both.err, HasSubstr("--no-device-floor"));
}

// --no-sub-stage-bound drops the bound from stages of some of a stage's
// groups: nothing is tightened, more stages are measured, the same latency.
TEST(CliTest, SearchWithoutTheSubStageBoundTightensNothing) {
  Result with = SearchInceptionV3Json({"--no-device-floor"});
  Result without = SearchInceptionV3Json({"--no-device-floor", "--no-sub-stage-bound"});
  ASSERT_EQ(with.code, kExitOk) << with.err;
  ASSERT_EQ(without.code, kExitOk) << without.err;
  const auto a = nlohmann::json::parse(with.out);
  const auto b = nlohmann::json::parse(without.out);
  EXPECT_GT(a["stats"]["tightened_bounds"].get<int64_t>(), 0);
  EXPECT_EQ(b["stats"]["tightened_bounds"].get<int64_t>(), 0);
  EXPECT_GT(b["stats"]["stages_measured"].get<int64_t>(),
            a["stats"]["stages_measured"].get<int64_t>());
  EXPECT_NEAR(b["latency_ms"]["ios"].get<double>(), a["latency_ms"]["ios"].get<double>(), 1e-9);
}

TEST(CliTest, RunTimesExactlyTheIterationsAskedFor) {
  Result r = RunIosfarm({"run", "squeezenet", "--backend", "sim", "--iterations", "5", "--warmup",
                         "0", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["latency_ms"]["repeats"], 5);
  EXPECT_EQ(RunIosfarm({"run", "squeezenet", "--backend", "sim", "--iterations", "0"}).code,
            kExitUsage);
}

TEST(CliTest, RunReadsNpyInputsAndWritesNpyOutputs) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "iosfarm_cli_test_npy";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  graph::Tensor image{{1, 3, 224, 224}, std::vector<float>(3 * 224 * 224)};
  for (size_t i = 0; i < image.data.size(); ++i) image.data[i] = std::sin(0.01f * i);
  ASSERT_TRUE(graph::WriteNpy((dir / "image.npy").string(), image).ok());
  for (float& x : image.data) x = -x;
  ASSERT_TRUE(graph::WriteNpy((dir / "negated.npy").string(), image).ok());

  const auto run = [&](const std::string& input, const std::string& out) {
    return RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--threads", "2", "--iterations",
                       "1", "--warmup", "0", "--input", "input=" + (dir / input).string(),
                       "--output", (dir / out).string()});
  };
  Result first = run("image.npy", "a");
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, HasSubstr("inputs    from --input files"));
  EXPECT_THAT(first.out, HasSubstr("outputs   1 written to"));
  ASSERT_EQ(run("image.npy", "b").code, kExitOk);
  ASSERT_EQ(run("negated.npy", "c").code, kExitOk);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "a")) {
    files.push_back(entry.path().filename());
  }
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".npy");
  auto a = graph::ReadNpy((dir / "a" / files[0]).string());
  auto b = graph::ReadNpy((dir / "b" / files[0]).string());
  auto c = graph::ReadNpy((dir / "c" / files[0]).string());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status() << b.status() << c.status();
  EXPECT_THAT(a->shape, ElementsAre(1, 1000));
  EXPECT_EQ(a->data, b->data);  // the same input, the same output
  EXPECT_NE(a->data, c->data);  // the input file is what ran

  Result unknown = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--input",
                               "mask=" + (dir / "image.npy").string()});
  EXPECT_EQ(unknown.code, kExitFailure);
  EXPECT_THAT(unknown.err, HasSubstr("the model has no input 'mask'; its inputs: 'input' "
                                     "[1,3,224,224]"));
  ASSERT_TRUE(graph::WriteNpy((dir / "small.npy").string(),
                              graph::Tensor{{1, 3, 32, 32}, std::vector<float>(3 * 32 * 32)})
                  .ok());
  Result shape = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--input",
                             "input=" + (dir / "small.npy").string()});
  EXPECT_EQ(shape.code, kExitFailure);
  EXPECT_THAT(shape.err,
              HasSubstr("input 'input' has shape [1,3,32,32], the model wants [1,3,224,224]"));
  // One input: a bare file is that input's.
  Result bare = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--threads", "2",
                            "--iterations", "1", "--warmup", "0", "--input",
                            (dir / "image.npy").string(), "--output", (dir / "d").string()});
  ASSERT_EQ(bare.code, kExitOk) << bare.err;
  auto d = graph::ReadNpy((dir / "d" / files[0]).string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->data, a->data);
  Result malformed = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--input", "=x.npy"});
  EXPECT_EQ(malformed.code, kExitFailure);
  EXPECT_THAT(malformed.err, HasSubstr("--input '=x.npy': expected NAME=FILE.npy"));
  Result missing = RunIosfarm({"run", "squeezenet", "--backend", "cpu", "--input",
                               "input=" + (dir / "absent.npy").string()});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_THAT(missing.err, HasSubstr("absent.npy"));
  std::filesystem::remove_all(dir);
}

TEST(CliTest, RunNamesTheModelAndBatchAScheduleWasMadeFor) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "iosfarm_cli_test_squeezenet.json").string();
  ASSERT_EQ(RunIosfarm({"search", "squeezenet", "--backend", "sim", "-o", path}).code, kExitOk);
  Result other = RunIosfarm({"run", "resnet50", "--backend", "sim", "--schedule", path});
  EXPECT_EQ(other.code, kExitFailure);
  EXPECT_THAT(other.err,
              HasSubstr("schedule is for squeezenet, batch 1; this model is resnet50, batch 1"));
  Result batch = RunIosfarm({"run", "squeezenet", "--batch", "4", "--backend", "sim",
                             "--schedule", path});
  EXPECT_EQ(batch.code, kExitFailure);
  EXPECT_THAT(batch.err, HasSubstr("schedule is for squeezenet, batch 1; this is batch 4"));
  std::remove(path.c_str());
}

TEST(CliTest, UnknownCommandSuggestsTheNearestOne) {
  Result r = RunIosfarm({"stauts", "7"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("iosfarm: unknown command 'stauts'; did you mean 'status'?\n"));
  Result far = RunIosfarm({"frobnicate"});
  EXPECT_EQ(far.code, kExitUsage);
  EXPECT_THAT(far.err, StartsWith("iosfarm: unknown command 'frobnicate'\n"));
  EXPECT_THAT(far.err, Not(HasSubstr("subcommand is required")));
}

TEST(CliTest, UnknownFlagSuggestsTheNearestOne) {
  Result r = RunIosfarm({"search", "squeezenet", "--bakend", "sim"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("iosfarm: unknown flag '--bakend' for 'iosfarm search'; did you "
                                "mean '--backend'?\n"));
  EXPECT_THAT(r.err, HasSubstr("iosfarm search --help"));
  Result bogus = RunIosfarm({"models", "--bogus"});
  EXPECT_EQ(bogus.code, kExitUsage);
  EXPECT_THAT(bogus.err, StartsWith("iosfarm: unknown flag '--bogus' for 'iosfarm models'\n"));
  // Negative numbers are values, not flags: the range check answers.
  Result negative = RunIosfarm({"inspect", "resnet50", "--batch", "-3"});
  EXPECT_EQ(negative.code, kExitUsage);
  EXPECT_THAT(negative.err, Not(HasSubstr("unknown flag")));
}

TEST(CliTest, HelpCommandShowsProgramOrCommandHelp) {
  Result all = RunIosfarm({"help"});
  EXPECT_EQ(all.code, kExitOk);
  EXPECT_THAT(all.out, HasSubstr("inspect"));
  Result one = RunIosfarm({"help", "search"});
  EXPECT_EQ(one.code, kExitOk);
  EXPECT_THAT(one.out, HasSubstr("--block-size"));
  Result typo = RunIosfarm({"help", "serach"});
  EXPECT_EQ(typo.code, kExitUsage);
  EXPECT_THAT(typo.err, HasSubstr("did you mean 'search'?"));
}

TEST(CliTest, VersionFlag) {
  Result r = RunIosfarm({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, VersionText() + "\n");
  EXPECT_THAT(r.out, ::testing::MatchesRegex("iosfarm [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

TEST(CliTest, JobIdMustBeAPositiveInteger) {
  for (const char* command : {"status", "watch", "cancel", "result", "timeline"}) {
    Result r = RunIosfarm({command, "abc"});
    EXPECT_EQ(r.code, kExitUsage) << command;
    EXPECT_THAT(r.err, HasSubstr("job id must be a positive integer, got 'abc'")) << command;
    EXPECT_LT(r.err.size(), 200u) << r.err;  // no 300-digit range
  }
  EXPECT_THAT(RunIosfarm({"status", "0"}).err, HasSubstr("got '0'"));
  EXPECT_THAT(RunIosfarm({"status", "99999999999999999999"}).err,
              HasSubstr("job id must be a positive integer"));
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
