#include "graph/serialize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"

namespace iosfarm::graph {
namespace {

using ::testing::HasSubstr;

void ExpectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name(), b.name());
  EXPECT_EQ(a.inputs(), b.inputs());
  EXPECT_EQ(a.outputs(), b.outputs());
  ASSERT_EQ(a.num_values(), b.num_values());
  for (ValueId v = 0; v < a.num_values(); ++v) {
    EXPECT_EQ(a.value(v).name, b.value(v).name);
    EXPECT_EQ(a.value(v).shape, b.value(v).shape);
    EXPECT_EQ(a.value(v).producer, b.value(v).producer);
  }
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  for (NodeId n = 0; n < a.num_nodes(); ++n) {
    const Node& x = a.node(n);
    const Node& y = b.node(n);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_TRUE(x.attrs == y.attrs) << x.name;
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.weights.size(), y.weights.size());
    for (const auto& [role, tensor] : x.weights) {
      EXPECT_EQ(tensor.shape, y.weights.at(role).shape);
      EXPECT_EQ(tensor.data, y.weights.at(role).data);
    }
  }
}

// Every op type with non-default attributes.
Graph AllOpsGraph() {
  GraphBuilder b("all_ops");
  ValueId x = b.Input("x", {1, 8, 9, 9});
  ConvSpec spec;
  spec.out_channels = 8;
  spec.kernel = {3, 1};
  spec.pads = {1, 0, 2, 0};
  spec.stride = {2, 2};
  spec.dilation = {1, 1};
  spec.groups = 2;
  spec.activation = Activation::kClip;
  spec.clip_min = 0.5f;
  spec.clip_max = 3.0f;
  ValueId c = b.Conv(x, spec, "conv");
  ValueId mp = b.MaxPool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, "maxpool", true);
  ValueId ap = b.AveragePool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, "avgpool");
  ValueId s = b.Add(mp, ap, "add");
  s = b.Binary(OpType::kSub, s, mp, "sub");
  s = b.Binary(OpType::kDiv, s, ap, "div");
  s = b.Mul(s, b.HardSigmoid(s, 0.25f, 0.4f, "hsig"), "mul");
  s = b.HardSwish(b.Tanh(b.Sigmoid(b.Clip(b.Relu(s, "relu"), -1, 1, "clip"), "sig"), "tanh"),
                  "hswish");
  s = b.UnaryMath(s, UnaryFunction::kSelu, "selu", 1.67f, 1.05f);
  ValueId cat = b.Concat({c, s}, 1, "concat");
  auto parts = b.Split(cat, 1, {4, 12}, "split");
  ValueId sl = b.AddNode(OpType::kSlice, SliceAttrs{{1}, {2}, {12}, {3}}, {parts[1]}, "slice")[0];
  ValueId pad = b.AddNode(OpType::kPad, PadAttrs{{0, 0, 1, 1, 0, 0, 1, 1}, PadMode::kReflect, 0},
                          {sl}, "pad")[0];
  ValueId bn = b.BatchNorm(pad, "bn");
  ValueId tr = b.Transpose(bn, {0, 2, 3, 1}, "transpose");
  ValueId rs = b.Reshape(tr, {1, 7 * 7 * 4}, "reshape");
  ValueId gm = b.Linear(rs, 6, "gemm");
  ValueId sm = b.Softmax(gm, 1, "softmax");
  ValueId rm = b.ReduceMean(b.GlobalAveragePool(parts[0], "gap"), {2, 3}, false, "reduce");
  ValueId fl = b.Flatten(b.AddNode(OpType::kDropout, NoAttrs{}, {rm}, "dropout")[0], 1, "flatten");
  Tensor value{{4, 3}, std::vector<float>(12, 0.5f)};
  ValueId k = b.AddNode(OpType::kConstant, NoAttrs{}, {}, "const", {{"value", value}})[0];
  ValueId mm = b.AddNode(OpType::kMatMul, NoAttrs{}, {fl, k}, "matmul")[0];
  b.Output(sm);
  b.Output(b.AddNode(OpType::kIdentity, NoAttrs{}, {mm}, "identity")[0]);
  b.Output(b.AddNode(OpType::kGlobalMaxPool, NoAttrs{}, {x}, "gmp")[0]);
  b.Output(b.Resize(x,
                    ResizeAttrs{{18, 5},
                                {2.0f, 0.55f},
                                ResizeMode::kLinear,
                                ResizeCoordinates::kAlignCorners,
                                NearestRounding::kCeil},
                    "resize"));
  b.Output(b.ConvTranspose(
      x, ConvTransposeAttrs{4, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}, {1, 1}, 1, true}, "deconv"));
  b.Output(b.AddNode(OpType::kReduceSum, ReduceAttrs{{1}, true}, {x}, "sum")[0]);
  b.Output(b.AddNode(OpType::kReduceMax, ReduceAttrs{{2, 3}, false}, {x}, "max")[0]);
  b.Output(b.AddNode(OpType::kReduceMin, ReduceAttrs{{}, false}, {x}, "min")[0]);
  return *std::move(b).Finish();
}

TEST(SerializeTest, RoundTripsEveryOpType) {
  Graph g = AllOpsGraph();
  std::set<OpType> types;
  for (const Node& node : g.nodes()) types.insert(node.type);
  EXPECT_EQ(static_cast<int>(types.size()), kNumOpTypes);
  auto parsed = ParseGraph(SerializeGraph(g));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectSameGraph(g, *parsed);
}

TEST(SerializeTest, RoundTripsWeightData) {
  Graph g = testing::SmallBranchyGraph(true);
  auto parsed = ParseGraph(SerializeGraph(g));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectSameGraph(g, *parsed);
  EXPECT_TRUE(SerializeGraph(*parsed) == SerializeGraph(g)) << "not deterministic";
}

TEST(SerializeTest, RejectsGarbageAndBadFields) {
  EXPECT_FALSE(ParseGraph("\xff\xff\xff garbage").ok());
  auto empty = ParseGraph("");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("format_version"));

  std::string bytes = SerializeGraph(testing::SmallBranchyGraph(false));
  // Tamper: rename an op type to one that does not exist.
  const std::string from = "MaxPool";
  bytes.replace(bytes.find(from), from.size(), "MaxPoot");
  auto bad = ParseGraph(bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("unknown op type 'MaxPoot'"));
}

TEST(SerializeTest, TruncatedBytesNeverCrash) {
  const std::string bytes = SerializeGraph(AllOpsGraph());
  for (size_t len = 0; len < bytes.size(); len += 7) {
    auto parsed = ParseGraph(std::string_view(bytes).substr(0, len));
    EXPECT_FALSE(parsed.ok()) << "prefix of " << len << " bytes parsed";
  }
}

}  // namespace
}  // namespace iosfarm::graph
