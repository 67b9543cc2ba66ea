// Every unsupported or malformed input fails with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "graph/onnx/onnx_importer.h"
#include "common/strings.h"
#include "graph/onnx/onnx_test_util.h"

namespace iosfarm::graph::onnx_import {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::OnnxModelBuilder;
using testing::SetAttr;

StatusOr<Graph> Import(const std::string& bytes, const OnnxImportOptions& options = {}) {
  return ImportOnnxBytes(bytes, "bad_model", options);
}

StatusOr<Graph> Import(const OnnxModelBuilder& builder, const OnnxImportOptions& options = {}) {
  return Import(builder.Serialize(), options);
}

// Asserts failure with InvalidArgument and a message naming the model and
// containing every fragment.
void ExpectError(const StatusOr<Graph>& result, std::vector<std::string> fragments) {
  ASSERT_FALSE(result.ok()) << "import unexpectedly succeeded";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  const std::string message(result.status().message());
  EXPECT_THAT(message, HasSubstr("ONNX model 'bad_model'"));
  for (const std::string& fragment : fragments) EXPECT_THAT(message, HasSubstr(fragment));
}

OnnxModelBuilder ReluModel(int64_t opset = 13) {
  OnnxModelBuilder b(opset);
  b.Input("x", {1, 3, 8, 8}).Output("y");
  b.Node("Relu", {"x"}, {"y"}, "relu1");
  return b;
}

TEST(OnnxErrorsTest, UnknownOpNamesOpNodeAndModel) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("FancyOp", {"x"}, {"y"}, "fancy_node");
  ExpectError(Import(b), {"FancyOp", "fancy_node"});
}

TEST(OnnxErrorsTest, UnsupportedOpsNameWhatToUseInstead) {
  const struct {
    const char* op;
    const char* hint;
  } cases[] = {
      {"Upsample", "export at opset 11 to 17, where it is Resize"},
      {"GroupNormalization", "InstanceNormalization, which is supported"},
      {"Attention", "attention-based networks (Transformers) are out of scope"},
      {"MultiHeadAttention", "attention-based networks (Transformers) are out of scope"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    OnnxModelBuilder b(17);
    b.Input("x", {1, 4, 8, 8}).Output("y");
    b.Node(c.op, {"x"}, {"y"}, "the_node");
    ExpectError(Import(b), {StrCat("unsupported op type '", c.op, "'"), "the_node", c.hint});
  }
}

TEST(OnnxErrorsTest, EinsumIsAMatMulOrRefused) {
  for (const char* equation : {"bij,bjk->bik", "ij,jk->ik", "...ij,...jk->...ik", "bhij,jk->bhik",
                               " b i j , b j k -> b i k"}) {
    SCOPED_TRACE(equation);
    OnnxModelBuilder b(17);
    const bool two_d = std::string_view(equation) == "ij,jk->ik";
    const bool four_d = std::string_view(equation).starts_with("bh");
    const std::vector<int64_t> a = two_d    ? std::vector<int64_t>{3, 4}
                                   : four_d ? std::vector<int64_t>{2, 5, 3, 4}
                                            : std::vector<int64_t>{2, 3, 4};
    b.Input("a", a).Output("y");
    b.Weight("w", four_d || two_d ? std::vector<int64_t>{4, 6} : std::vector<int64_t>{2, 4, 6});
    SetAttr(b.Node("Einsum", {"a", "w"}, {"y"}, "e"), "equation", equation);
    auto graph = Import(b);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::vector<int64_t> expected = a;
    expected.back() = 6;
    EXPECT_EQ(graph->value(graph->outputs()[0]).shape, expected);
    bool matmul = false;
    for (const Node& node : graph->nodes()) matmul = matmul || node.type == OpType::kMatMul;
    EXPECT_TRUE(matmul);
  }
  for (const char* equation :
       {"bij,bkj->bik", "bij,bjk->bki", "ij,jk", "iij,ijk->iik", "bij,bjk->bij"}) {
    SCOPED_TRACE(equation);
    OnnxModelBuilder b(17);
    b.Input("a", {2, 3, 4}).Output("y");
    b.Weight("w", {2, 4, 6});
    SetAttr(b.Node("Einsum", {"a", "w"}, {"y"}, "e"), "equation", equation);
    ExpectError(Import(b), {"is not supported: only an Einsum that is a MatMul", "'e'"});
  }
  OnnxModelBuilder wrong_rank(17);
  wrong_rank.Input("a", {2, 2, 3, 4}).Output("y");
  wrong_rank.Weight("w", {2, 4, 6});
  SetAttr(wrong_rank.Node("Einsum", {"a", "w"}, {"y"}, "e"), "equation", "bij,bjk->bik");
  ExpectError(Import(wrong_rank), {"names 3 axes of input 0 of shape [2,2,3,4]"});
}

TEST(OnnxErrorsTest, OpInOtherDomain) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"}, "r").set_domain("com.microsoft");
  ExpectError(Import(b), {"com.microsoft", "'r'"});
}

TEST(OnnxErrorsTest, DynamicBatchWithoutOverride) {
  OnnxModelBuilder b;
  b.Input("images", {-1, 3, 8, 8}).Output("y");
  b.Node("Relu", {"images"}, {"y"});
  ExpectError(Import(b), {"graph input 'images'", "dimension 0", "'N'", "dynamic", "batch"});
  OnnxImportOptions options;
  options.batch = 2;
  auto graph = Import(b, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[0]).shape, (Shape{2, 3, 8, 8}));
}

TEST(OnnxErrorsTest, DynamicSpatialDimEvenWithBatch) {
  OnnxModelBuilder b;
  b.Input("images", {-1, 3, 0, 8}).Output("y");
  b.Node("Relu", {"images"}, {"y"});
  OnnxImportOptions options;
  options.batch = 1;
  ExpectError(Import(b, options), {"graph input 'images'", "dimension 2", "dynamic"});
}

TEST(OnnxErrorsTest, InvalidBatchOption) {
  OnnxImportOptions options;
  options.batch = 0;
  ExpectError(Import(ReluModel(), options), {"batch"});
}

TEST(OnnxErrorsTest, TrainingModeBatchNorm) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 4, 4}).Output("y");
  b.Weight("s", {2}).Weight("bb", {2}).Weight("m", {2}).Weight("v", {2});
  onnx::NodeProto& bn = b.Node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"y"}, "bn1");
  SetAttr(bn, "training_mode", int64_t{1});
  ExpectError(Import(b), {"bn1", "training-mode node"});
}

TEST(OnnxErrorsTest, BatchNormWithRunningStatsOutputs) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 4, 4}).Output("y");
  b.Weight("s", {2}).Weight("bb", {2}).Weight("m", {2}).Weight("v", {2});
  b.Node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"y", "rm", "rv"}, "bn2");
  ExpectError(Import(b), {"bn2", "training-mode node"});
}

TEST(OnnxErrorsTest, EmptyBytes) { ExpectError(Import(std::string()), {"empty"}); }

TEST(OnnxErrorsTest, NotProtobuf) {
  ExpectError(Import(std::string("this is definitely not an onnx file\xff\xff\xff")),
              {"not a valid ONNX model"});
}

TEST(OnnxErrorsTest, EveryTruncationFailsCleanly) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3});
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  const std::string bytes = b.Serialize();
  ASSERT_TRUE(Import(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto result = Import(bytes.substr(0, n));
    // A prefix may even parse (protobuf has no end marker); it must never
    // crash, and it must not silently produce the full model.
    if (result.ok()) {
      ADD_FAILURE() << "prefix of " << n << " bytes imported";
    } else {
      EXPECT_THAT(std::string(result.status().message()), HasSubstr("ONNX model 'bad_model'"));
    }
  }
  ExpectError(Import(bytes.substr(0, bytes.size() / 2)), {});
}

TEST(OnnxErrorsTest, RandomBytesFailCleanly) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(1 + rng() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto result = Import(bytes);
    EXPECT_FALSE(result.ok());
  }
}

TEST(OnnxErrorsTest, RandomMutationsOfValidModelNeverCrash) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3}).Ints("shape", {1, -1});
  b.Node("Conv", {"x", "W"}, {"c"}, "conv");
  b.Node("Reshape", {"c", "shape"}, {"y"}, "reshape");
  const std::string bytes = b.Serialize();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) mutated[rng() % mutated.size()] = static_cast<char>(rng());
    (void)Import(mutated);  // any status is fine; no crash, no abort
  }
}

TEST(OnnxErrorsTest, ModelOverByteLimit) {
  OnnxImportOptions options;
  options.max_model_bytes = 16;
  ExpectError(Import(ReluModel(), options), {"over the limit of 16 bytes"});
}

TEST(OnnxErrorsTest, TooManyNodes) {
  OnnxImportOptions options;
  options.max_nodes = 2;
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("c");
  b.Node("Relu", {"x"}, {"a"});
  b.Node("Relu", {"a"}, {"b"});
  b.Node("Relu", {"b"}, {"c"});
  ExpectError(Import(b, options), {"3 nodes", "limit of 2"});
}

TEST(OnnxErrorsTest, TensorOverElementLimit) {
  OnnxImportOptions options;
  options.max_tensor_elements = 100;
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3});
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b, options), {"graph input 'x'", "limit of 100"});
}

TEST(OnnxErrorsTest, SharedWeightCopiesAreBounded) {
  // One 9-element initializer used by n convs: n copies in the IR.
  auto chain = [](int n) {
    OnnxModelBuilder b;
    b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {3, 3, 1, 1});
    for (int i = 0; i < n; ++i) {
      b.Node("Conv", {i == 0 ? "x" : "a" + std::to_string(i - 1), "W"},
             {i == n - 1 ? "y" : "a" + std::to_string(i)}, "conv" + std::to_string(i));
    }
    return b;
  };
  OnnxImportOptions options;
  options.max_tensor_elements = 250;
  ASSERT_TRUE(Import(chain(20), options).ok());
  ExpectError(Import(chain(40), options), {"weight 'W'", "weight elements per model"});
}

TEST(OnnxErrorsTest, RankLimit) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  onnx::TensorProto k = testing::FloatTensor("k", std::vector<int64_t>(40, 1));
  *b.graph().add_initializer() = k;
  b.Node("Add", {"x", "k"}, {"y"}, "add");
  ExpectError(Import(b), {"initializer 'k'", "rank 40"});
}

TEST(OnnxErrorsTest, HugeConstantOfShapeIsRefusedBeforeAllocating) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y").Ints("huge", {1 << 30, 1 << 30, 1 << 30});
  b.Node("ConstantOfShape", {"huge"}, {"c"}, "cos");
  b.Node("Add", {"x", "c"}, {"y"});
  ExpectError(Import(b), {"'cos' (ConstantOfShape)", "limit"});
}

TEST(OnnxErrorsTest, NegativeAndHugeInputDims) {
  OnnxModelBuilder neg;
  neg.Input("x", {1, 3, 8, 8}).Output("y");
  neg.graph()
      .mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(2)
      ->set_dim_value(-5);
  neg.Node("Relu", {"x"}, {"y"});
  ExpectError(Import(neg), {"graph input 'x'", "dimension 2 is -5"});

  OnnxModelBuilder huge;
  huge.Input("x", {1, int64_t{1} << 40, int64_t{1} << 40, 8}).Output("y");
  huge.Node("Relu", {"x"}, {"y"});
  ExpectError(Import(huge), {"graph input 'x'", "limit"});
}

TEST(OnnxErrorsTest, NegativeInitializerDim) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y");
  onnx::TensorProto w = testing::FloatTensor("W", {4, 3, 3, 3});
  w.set_dims(1, -3);
  *b.graph().add_initializer() = w;
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b), {"initializer 'W'", "negative dimension"});
}

TEST(OnnxErrorsTest, Cycle) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Add", {"x", "b"}, {"a"}, "first");
  b.Node("Relu", {"a"}, {"b"}, "second");
  b.Node("Relu", {"a"}, {"y"}, "third");
  ExpectError(Import(b), {"cycle"});
}

TEST(OnnxErrorsTest, DanglingInput) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  ExpectError(Import(b), {"adder", "'ghost'", "dangling"});
}

TEST(OnnxErrorsTest, MissingInitializer) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y");
  b.Node("Conv", {"x", "W_missing"}, {"y"}, "conv");
  ExpectError(Import(b), {"'conv' (Conv)", "'W_missing'", "dangling"});
}

TEST(OnnxErrorsTest, WeightThatIsAGraphInput) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Input("W", {4, 3, 3, 3}).Output("y");
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b), {"'conv' (Conv)", "'W'", "must be a constant"});
}

TEST(OnnxErrorsTest, GemmWithActivationB) {
  OnnxModelBuilder b;
  b.Input("a", {2, 4}).Input("bmat", {4, 3}).Output("y");
  b.Node("Gemm", {"a", "bmat"}, {"y"}, "gemm");
  ExpectError(Import(b), {"'gemm' (Gemm)", "'B'", "must be a constant"});
}

TEST(OnnxErrorsTest, RawDataOfWrongLength) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y");
  onnx::TensorProto w = testing::FloatTensor("W", {4, 3, 3, 3});
  w.mutable_raw_data()->resize(100);
  *b.graph().add_initializer() = w;
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b), {"initializer 'W'", "wrong data length"});
}

TEST(OnnxErrorsTest, FloatDataOfWrongLength) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2}).Output("y");
  onnx::TensorProto k;
  k.set_name("k");
  k.set_data_type(onnx::TensorProto::FLOAT);
  k.add_dims(2);
  k.add_float_data(1.0f);
  *b.graph().add_initializer() = k;
  b.Node("Add", {"x", "k"}, {"y"}, "add");
  ExpectError(Import(b), {"initializer 'k'", "wrong data length"});
}

TEST(OnnxErrorsTest, ExternalData) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y");
  onnx::TensorProto w;
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 3, 3}) w.add_dims(d);
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  *b.graph().add_initializer() = w;
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b), {"initializer 'W'", "external"});
}

TEST(OnnxErrorsTest, StringTensor) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2}).Output("y");
  onnx::TensorProto k;
  k.set_name("k");
  k.set_data_type(onnx::TensorProto::STRING);
  k.add_dims(1);
  k.add_string_data("hello");
  *b.graph().add_initializer() = k;
  b.Node("Add", {"x", "k"}, {"y"}, "add");
  ExpectError(Import(b), {"initializer 'k'", "STRING"});
}

TEST(OnnxErrorsTest, AttributeOfWrongType) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3});
  onnx::NodeProto& conv = b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  SetAttr(conv, "strides", 2.0f);
  ExpectError(Import(b), {"'conv' (Conv)", "attribute 'strides' must be INTS, got FLOAT"});
}

TEST(OnnxErrorsTest, AttributeOfWrongLength) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3});
  onnx::NodeProto& conv = b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  SetAttr(conv, "pads", std::vector<int64_t>{1, 1});
  ExpectError(Import(b), {"'conv' (Conv)", "'pads'", "expected 4"});
}

TEST(OnnxErrorsTest, DuplicateAttribute) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  onnx::NodeProto& flatten = b.Node("Flatten", {"x"}, {"y"}, "flat");
  SetAttr(flatten, "axis", int64_t{1});
  SetAttr(flatten, "axis", int64_t{0});
  ExpectError(Import(b), {"'flat'", "attribute 'axis' appears more than once"});
}

TEST(OnnxErrorsTest, UnsupportedOpsets) {
  ExpectError(Import(ReluModel(9)), {"opset 9", "11 to 17"});
  ExpectError(Import(ReluModel(18)), {"opset 18"});
  OnnxModelBuilder b = ReluModel();
  b.model().clear_opset_import();
  ExpectError(Import(b), {"no opset"});
}

TEST(OnnxErrorsTest, NonFloatInput) {
  OnnxModelBuilder b;
  b.Input("ids", {1, 4}, onnx::TensorProto::INT64).Output("y");
  b.Node("Relu", {"ids"}, {"y"});
  ExpectError(Import(b), {"graph input 'ids'", "INT64"});
}

TEST(OnnxErrorsTest, NoGraph) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  ExpectError(Import(model.SerializeAsString()), {"no graph"});
}

TEST(OnnxErrorsTest, ValueProducedTwice) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"}, "one");
  b.Node("Sigmoid", {"x"}, {"y"}, "two");
  ExpectError(Import(b), {"'y'", "produced by both"});
}

TEST(OnnxErrorsTest, OutputNotProduced) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("nowhere");
  b.Node("Relu", {"x"}, {"y"});
  ExpectError(Import(b), {"graph output 'nowhere'"});
}

TEST(OnnxErrorsTest, ReshapeWithDynamicShapeInput) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Input("s", {2}).Output("y");
  b.Node("Reshape", {"x", "s"}, {"y"}, "reshape");
  ExpectError(Import(b), {"'reshape' (Reshape)", "'shape'", "must be a constant"});
}

TEST(OnnxErrorsTest, ReshapeElementCountMismatch) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y").Ints("shape", {3, -1});
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  ExpectError(Import(b), {"'reshape' (Reshape)", "cannot reshape"});
}

TEST(OnnxErrorsTest, IntegerOverflowInFolding) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Ints("big", {int64_t{1} << 62});
  b.Node("Mul", {"big", "big"}, {"sq"}, "square");
  b.Node("Reshape", {"x", "sq"}, {"y"});
  ExpectError(Import(b), {"'square' (Mul)", "overflows"});
}

TEST(OnnxErrorsTest, GatherOnActivation) {
  OnnxModelBuilder b;
  b.Input("x", {4, 4}).Output("y").Ints("idx", {0});
  b.Node("Gather", {"x", "idx"}, {"y"}, "gather");
  ExpectError(Import(b), {"'gather' (Gather)", "constant inputs"});
}

TEST(OnnxErrorsTest, Conv1dIsRejected) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8}).Output("y").Weight("W", {4, 3, 3});
  b.Node("Conv", {"x", "W"}, {"y"}, "conv1d");
  ExpectError(Import(b), {"'conv1d' (Conv)", "4-D"});
}

TEST(OnnxErrorsTest, ChannelMismatchFromShapeInference) {
  OnnxModelBuilder b;
  b.Input("x", {1, 5, 8, 8}).Output("y").Weight("W", {4, 3, 3, 3});
  b.Node("Conv", {"x", "W"}, {"y"}, "conv");
  ExpectError(Import(b), {"'conv'"});
}

TEST(OnnxErrorsTest, MissingFile) {
  auto result = ImportOnnxFile("/nonexistent/dir/model.onnx");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("/nonexistent/dir/model.onnx"));
}

TEST(OnnxErrorsTest, FileOverSizeLimitIsNotRead) {
  const std::string path = ::testing::TempDir() + "/big_relu.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    out << ReluModel().Serialize();
  }
  OnnxImportOptions options;
  options.max_model_bytes = 8;
  auto result = ImportOnnxFile(path, options);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), AllOf(HasSubstr(path), HasSubstr("over the limit")));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
