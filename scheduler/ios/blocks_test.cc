#include "scheduler/ios/blocks.h"

#include <map>
#include <set>
#include <string>

#include "graph/graph_builder.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {
namespace {

using graph::Graph;
using graph::NodeId;

std::vector<std::vector<std::string>> BlockNames(const Graph& graph, const BlockPartition& p) {
  std::vector<std::vector<std::string>> out;
  for (const Block& block : p.blocks) {
    std::vector<std::string> names;
    for (NodeId id : block.ops) names.push_back(graph.node(id).name);
    out.push_back(names);
  }
  return out;
}

// Every op in exactly one block, blocks in execution order (no edge from a
// later block to an earlier one), ops of a block topologically ordered.
void ExpectWellFormed(const Graph& graph, const BlockPartition& p, int max_ops) {
  std::map<NodeId, std::pair<int, int>> where;  // block, index
  for (size_t b = 0; b < p.blocks.size(); ++b) {
    EXPECT_LE(static_cast<int>(p.blocks[b].ops.size()), max_ops);
    EXPECT_FALSE(p.blocks[b].ops.empty());
    for (size_t i = 0; i < p.blocks[b].ops.size(); ++i) {
      EXPECT_TRUE(where.emplace(p.blocks[b].ops[i], std::make_pair(int(b), int(i))).second);
    }
  }
  int ops = 0;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const graph::Node& node = graph.node(id);
    if (IsFreeNode(node)) {
      EXPECT_FALSE(where.count(id)) << node.name;
      continue;
    }
    ++ops;
    ASSERT_TRUE(where.count(id)) << node.name;
    for (graph::ValueId v : node.inputs) {
      const NodeId producer = graph.value(v).producer;
      if (producer == graph::kNoNode || IsFreeNode(graph.node(producer))) continue;
      EXPECT_LT(where[producer], where[id]) << graph.node(producer).name << " -> " << node.name;
    }
  }
  EXPECT_EQ(p.num_ops, ops);
}

TEST(BlocksTest, SmallGraphCutsAtArticulationPoints) {
  const Graph graph = graph::testing::SmallBranchyGraph(false);
  auto partition = PartitionIntoBlocks(graph, BlockOptions{});
  ASSERT_TRUE(partition.ok()) << partition.status();
  ExpectWellFormed(graph, *partition, 50);
  // conv1, bn1, relu1 are cut points; conv2 and pool run in parallel up to
  // concat; then a chain.
  const std::vector<std::vector<std::string>> expected = {
      {"conv1"}, {"bn1"}, {"relu1"}, {"conv2", "pool", "concat"}, {"identity"},
      {"gap"},   {"flatten"}, {"fc"}};
  EXPECT_EQ(BlockNames(graph, *partition), expected);
  EXPECT_EQ(partition->blocks[0].start, BlockStart::kGraphStart);
  EXPECT_EQ(partition->blocks[3].start, BlockStart::kArticulation);
  EXPECT_EQ(partition->articulation_cuts, 7);
  EXPECT_EQ(partition->size_cuts, 0);
  EXPECT_EQ(partition->largest_block, 3);
  EXPECT_EQ(partition->blocks[3].input_tensors, 1);
}

TEST(BlocksTest, SkipConnectionPreventsACut) {
  // a -> b -> c -> add(a, c): b and c are not cut points (a feeds add).
  graph::GraphBuilder b("skip");
  auto x = b.Input("x", {1, 4, 8, 8});
  auto a = b.Relu(x, "a");
  auto bb = b.Relu(a, "b");
  auto c = b.Relu(bb, "c");
  b.Output(b.Add(a, c, "add"));
  Graph graph = *std::move(b).Finish();
  auto partition = PartitionIntoBlocks(graph, BlockOptions{});
  ASSERT_TRUE(partition.ok());
  const std::vector<std::vector<std::string>> expected = {{"a"}, {"b", "c", "add"}};
  EXPECT_EQ(BlockNames(graph, *partition), expected);
}

// stem -> module(stem) -> module(m1, stem) -> ...: each module has three
// parallel chains joined by an Add chain, and reads the stem too, so no op
// between modules is a cut point.
Graph ModuleChain(int modules, int chain_length) {
  graph::GraphBuilder b("modules");
  auto x = b.Input("x", {1, 8, 8, 8});
  auto stem = b.Relu(x, "stem");
  auto current = stem;
  for (int m = 0; m < modules; ++m) {
    std::vector<graph::ValueId> ends;
    for (int c = 0; c < 3; ++c) {
      auto v = current;
      for (int i = 0; i < chain_length; ++i) {
        v = b.Relu(v, "m" + std::to_string(m) + "_c" + std::to_string(c) + "_" + std::to_string(i));
      }
      ends.push_back(v);
    }
    auto sum = b.Add(ends[0], ends[1], "m" + std::to_string(m) + "_sum0");
    sum = b.Add(sum, ends[2], "m" + std::to_string(m) + "_sum1");
    current = b.Add(sum, stem, "m" + std::to_string(m) + "_out");
  }
  b.Output(current);
  return *std::move(b).Finish();
}

TEST(BlocksTest, SizeCutsKeepParallelBranchesTogether) {
  const Graph graph = ModuleChain(4, 6);  // 1 + 4 * 21 ops, no cut point after the stem
  auto partition = PartitionIntoBlocks(graph, BlockOptions{30});
  ASSERT_TRUE(partition.ok());
  ExpectWellFormed(graph, *partition, 30);
  EXPECT_GT(partition->size_cuts, 0);
  // Every module lies entirely inside one block.
  std::map<std::string, int> block_of_module;
  for (size_t b = 0; b < partition->blocks.size(); ++b) {
    for (NodeId id : partition->blocks[b].ops) {
      const std::string& name = graph.node(id).name;
      if (name[0] != 'm') continue;
      const std::string module = name.substr(0, name.find('_'));
      auto [it, inserted] = block_of_module.emplace(module, static_cast<int>(b));
      EXPECT_EQ(it->second, static_cast<int>(b)) << name << " split from its module";
    }
  }
  EXPECT_EQ(block_of_module.size(), 4u);
}

TEST(BlocksTest, RejectsBadOptions) {
  const Graph graph = graph::testing::SmallBranchyGraph(false);
  EXPECT_EQ(PartitionIntoBlocks(graph, BlockOptions{0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PartitionIntoBlocks(graph, BlockOptions{5000}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlocksTest, ZooModelsPartitionWithinTheLimit) {
  for (const auto& model : graph::models::ZooModels()) {
    auto graph = graph::models::BuildZooModel(model.name, 1);
    ASSERT_TRUE(graph.ok());
    auto partition = PartitionIntoBlocks(*graph, BlockOptions{});
    ASSERT_TRUE(partition.ok()) << model.name;
    SCOPED_TRACE(std::string(model.name));
    ExpectWellFormed(*graph, *partition, 50);
  }
}

TEST(BlocksTest, SummaryTextAndJson) {
  const Graph graph = graph::testing::SmallBranchyGraph(false);
  auto partition = PartitionIntoBlocks(graph, BlockOptions{});
  ASSERT_TRUE(partition.ok());
  const std::string text = BlockPartitionText(graph, *partition);
  EXPECT_NE(text.find("blocks: 8 (10 ops"), std::string::npos) << text;
  EXPECT_NE(text.find("block 3: 3 ops, articulation, 1 input tensor, conv2 .. concat"),
            std::string::npos)
      << text;
  const nlohmann::json json = BlockPartitionJson(graph, *partition);
  EXPECT_EQ(json["num_blocks"], 8);
  EXPECT_EQ(json["blocks"][3]["ops"], nlohmann::json({"conv2", "pool", "concat"}));
  EXPECT_FALSE(BlockPartitionJson(graph, *partition, false)["blocks"][0].contains("ops"));
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
