#include "scheduler/ios/schedule_json.h"

#include "graph/models/zoo.h"
#include "graph/serialize.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/stages/stable_hash.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using nlohmann::json;

void ExpectSameSchedule(const Schedule& a, const Schedule& b) {
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(a.stages[i].stage.strategy, b.stages[i].stage.strategy);
    EXPECT_EQ(a.stages[i].stage.groups, b.stages[i].stage.groups);
    EXPECT_EQ(a.stages[i].stage.merged.has_value(), b.stages[i].stage.merged.has_value());
    EXPECT_EQ(a.stages[i].signature, b.stages[i].signature);
    EXPECT_EQ(a.stages[i].block, b.stages[i].block);
    EXPECT_DOUBLE_EQ(a.stages[i].latency_ms, b.stages[i].latency_ms);
  }
  EXPECT_NEAR(a.latency_ms, b.latency_ms, 1e-12);
}

struct Fixture {
  graph::Graph graph;
  SearchOptions options;
  SearchResult result;
  json document;
};

// Searches with the analytic oracle, or a random one (which picks merges
// often) when `random_seed` is not 0.
Fixture SearchAndWrite(graph::Graph graph, uint64_t random_seed = 0) {
  Fixture f{std::move(graph), SearchOptions{}, {}, {}};
  // A random oracle breaks the bounded search's assumption (a stage is never
  // faster than its slowest group): the exhaustive DP finds its merges.
  f.options.exhaustive = random_seed != 0;
  f.result = *RunSearch(f.graph, f.options,
                        random_seed == 0 ? MakeAnalyticOracle(f.graph)
                                         : testing::RandomOracle(f.graph, random_seed));
  f.document = ScheduleToJson(f.graph, f.result.schedule,
                              MakeScheduleMetadata(f.graph, "sim", "ios", &f.options));
  return f;
}

TEST(ScheduleJsonTest, ModelDigestHashesTheGraphsEncodingStreamed) {
  auto graph = graph::models::BuildZooModel("squeezenet", 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Weight values too (over 1 MiB, more than one piece of the stream).
  for (graph::NodeId id = 0; id < graph->num_nodes(); ++id) {
    for (auto& [role, tensor] : graph->mutable_node(id).weights) {
      tensor.data.assign(static_cast<size_t>(tensor.num_elements()), 0.5f);
    }
  }
  const std::string bytes = graph::SerializeGraph(*graph);
  ASSERT_GT(bytes.size(), size_t{1} << 20);
  EXPECT_EQ(ModelDigest(*graph), "sha256:" + Sha256Hex(bytes));
  std::string pieces;
  graph::SerializeGraphTo(*graph, [&](std::string_view piece) { pieces.append(piece); });
  EXPECT_EQ(pieces, bytes);
  // Known answer: sha256 of "abc".
  EXPECT_EQ(Sha256HexOf([](absl::FunctionRef<void(std::string_view)> sink) {
              sink("a");
              sink("bc");
            }),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ScheduleJsonTest, RoundTripsZooSchedules) {
  for (const char* model : {"inception_v3", "squeezenet", "resnet50"}) {
    SCOPED_TRACE(model);
    Fixture f = SearchAndWrite(*graph::models::BuildZooModel(model, 1));
    const std::string text = f.document.dump(2);
    auto parsed = ParseScheduleJson(text, f.graph);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ExpectSameSchedule(parsed->schedule, f.result.schedule);
    EXPECT_EQ(parsed->metadata.model_name, model);
    EXPECT_EQ(parsed->metadata.batch, 1);
    EXPECT_EQ(parsed->metadata.device_key, "sim");
    EXPECT_EQ(parsed->metadata.kind, "ios");
    EXPECT_EQ(parsed->metadata.max_group_ops, 3);
    EXPECT_EQ(parsed->metadata.max_groups, 8);
    EXPECT_EQ(parsed->metadata.model_digest, ModelDigest(f.graph));
    // Writing the parsed schedule again gives the same document.
    EXPECT_EQ(ScheduleToJson(f.graph, parsed->schedule, parsed->metadata), f.document);
  }
}

TEST(ScheduleJsonTest, RoundTripsMergesAndBaselines) {
  int merges = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Fixture f = SearchAndWrite(testing::RandomDag(seed, 12), seed);
    auto parsed = ScheduleFromJson(f.document, f.graph);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ExpectSameSchedule(parsed->schedule, f.result.schedule);
    for (const ScheduledStage& s : parsed->schedule.stages) {
      merges += s.stage.strategy == Strategy::kMerge ? 1 : 0;
    }
    Schedule greedy = *GreedySchedule(f.graph, 8);
    ASSERT_TRUE(CostSchedule(f.graph, greedy, MakeAnalyticOracle(f.graph)).ok());
    const json doc =
        ScheduleToJson(f.graph, greedy, MakeScheduleMetadata(f.graph, "sim", "greedy", nullptr));
    auto greedy_parsed = ScheduleFromJson(doc, f.graph);
    ASSERT_TRUE(greedy_parsed.ok()) << greedy_parsed.status();
    ExpectSameSchedule(greedy_parsed->schedule, greedy);
  }
  EXPECT_GT(merges, 0);
}

TEST(ScheduleJsonTest, DocumentShape) {
  Fixture f = SearchAndWrite(*graph::models::BuildZooModel("squeezenet", 1));
  const json& d = f.document;
  EXPECT_EQ(d["format"], "iosfarm.schedule");
  EXPECT_EQ(d["version"], 1);
  EXPECT_EQ(d["model"]["digest"].get<std::string>().rfind("sha256:", 0), 0u);
  EXPECT_EQ(d["model"]["digest"].get<std::string>().size(), 7u + 64u);
  EXPECT_EQ(d["model"]["num_ops"], f.result.schedule.num_ops());
  EXPECT_EQ(d["num_stages"], f.result.schedule.stages.size());
  EXPECT_EQ(d["search"]["signature_version"], kSignatureVersion);
  EXPECT_EQ(d["blocks"][0]["stages"][0]["index"], 0);
  EXPECT_EQ(d["blocks"][0]["stages"][0]["signature"].get<std::string>().size(), 16u);
}

// Edits `document` with `edit` and expects ScheduleFromJson to fail with
// `code` and a message containing `needle`.
void ExpectRejected(const Fixture& f, const std::function<void(json&)>& edit,
                    absl::StatusCode code, const std::string& needle) {
  json broken = f.document;
  edit(broken);
  auto parsed = ScheduleFromJson(broken, f.graph);
  ASSERT_FALSE(parsed.ok()) << "accepted after edit expecting '" << needle << "'";
  EXPECT_EQ(parsed.status().code(), code) << parsed.status();
  EXPECT_NE(parsed.status().message().find(needle), absl::string_view::npos)
      << parsed.status();
}

TEST(ScheduleJsonTest, RejectsBrokenSchedules) {
  Fixture f = SearchAndWrite(*graph::models::BuildZooModel("inception_v3", 1));
  using Code = absl::StatusCode;
  ExpectRejected(f, [](json& d) { d["version"] = 99; }, Code::kInvalidArgument, "version 99");
  ExpectRejected(f, [](json& d) { d["format"] = "other"; }, Code::kInvalidArgument, "format");
  ExpectRejected(f, [](json& d) { d["model"]["digest"] = "sha256:00"; },
                 Code::kFailedPrecondition,
                 "schedule is for another version of inception_v3, batch 1");
  // Another model or batch is said in words.
  ExpectRejected(
      f,
      [](json& d) {
        d["model"]["digest"] = "sha256:00";
        d["model"]["name"] = "squeezenet";
      },
      Code::kFailedPrecondition, "schedule is for squeezenet, batch 1; this model is inception_v3");
  ExpectRejected(
      f,
      [](json& d) {
        d["model"]["digest"] = "sha256:00";
        d["model"]["batch"] = 8;
      },
      Code::kFailedPrecondition, "schedule is for inception_v3, batch 8; this is batch 1");
  ExpectRejected(f, [](json& d) { d["model"].erase("batch"); }, Code::kInvalidArgument,
                 "missing field 'batch'");
  ExpectRejected(f, [](json& d) { d["blocks"][0]["stages"][0]["groups"][0][0] = "nope"; },
                 Code::kInvalidArgument, "unknown op 'nope'");
  ExpectRejected(f, [](json& d) { d["blocks"][0]["stages"][0]["strategy"] = "magic"; },
                 Code::kInvalidArgument, "unknown strategy");
  ExpectRejected(f, [](json& d) { d["blocks"][0]["stages"][0]["signature"] = "0123456789abcdef"; },
                 Code::kFailedPrecondition, "signature");
  // An op twice: copy the first stage's groups into the second stage.
  ExpectRejected(f,
                 [](json& d) {
                   d["blocks"][0]["stages"].push_back(d["blocks"][0]["stages"][0]);
                 },
                 Code::kInvalidArgument, "twice");
  // An op missing: drop the last stage of the last block.
  ExpectRejected(f,
                 [](json& d) {
                   json& stages = d["blocks"].back()["stages"];
                   const double latency = stages.back()["predicted_latency_ms"];
                   stages.erase(stages.size() - 1);
                   d["predicted_latency_ms"] = d["predicted_latency_ms"].get<double>() - latency;
                 },
                 Code::kInvalidArgument, "not scheduled");
  // Dependencies: swap the first two blocks.
  ExpectRejected(f,
                 [](json& d) {
                   std::swap(d["blocks"][0]["index"], d["blocks"][1]["index"]);
                   std::swap(d["blocks"][0], d["blocks"][1]);
                 },
                 Code::kInvalidArgument, "before its input producer");
  ExpectRejected(f, [](json& d) { d["predicted_latency_ms"] = 1e9; }, Code::kInvalidArgument,
                 "sum of its stages");
  EXPECT_FALSE(ParseScheduleJson("{not json", f.graph).ok());
  // Another batch size is another graph.
  const graph::Graph batch2 = *graph::models::BuildZooModel("inception_v3", 2);
  EXPECT_EQ(ScheduleFromJson(f.document, batch2).status().code(), Code::kFailedPrecondition);
}

TEST(ScheduleJsonTest, RejectsForgedMergeDescriptions) {
  // Find a random graph whose schedule has a merge stage.
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Fixture f = SearchAndWrite(testing::RandomDag(seed, 12), seed);
    for (size_t b = 0; b < f.document["blocks"].size(); ++b) {
      json& stages = f.document["blocks"][b]["stages"];
      for (size_t k = 0; k < stages.size(); ++k) {
        if (stages[k]["strategy"] != "merge") continue;
        ExpectRejected(f, [&](json& d) { d["blocks"][b]["stages"][k]["merged"]["out_channels"] = 1; },
                       absl::StatusCode::kInvalidArgument, "does not describe");
        ExpectRejected(f, [&](json& d) { d["blocks"][b]["stages"][k].erase("merged"); },
                       absl::StatusCode::kInvalidArgument, "without 'merged'");
        return;
      }
    }
  }
  FAIL() << "no random graph produced a merge stage";
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
