// Tests of the cuda backend on a real GPU: every op, concurrent and merged
// stages, whole schedules with and without CUDA graphs, against the
// reference executor. Without a GPU they skip, printing why; the no-device
// error and the support checks are tested everywhere.
#include "worker/backends/cuda/device/cuda_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/cuda/device/stream_timer.h"
#include "worker/backends/cuda/planner/op_support.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/executor.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

using graph::GraphBuilder;
using graph::NodeId;
using graph::OpType;
using graph::Shape;
using graph::ValueId;
using graph::testing::ConvSpecOf;
using ::iosfarm::scheduler::ios::testing::ConcurrentStage;
using ::iosfarm::scheduler::ios::testing::MergeStage;
using ::iosfarm::scheduler::ios::testing::ScheduleOf;
using scheduler::ios::Schedule;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr double kTolerance = 1e-3;  // as the conformance suite

// The backend shared by the tests of this binary (created once), or the
// reason it cannot be created here.
StatusOr<CudaBackend*> SharedBackend() {
  static auto* const backend = new StatusOr<std::unique_ptr<CudaBackend>>(CudaBackend::Create());
  if (!backend->ok()) return backend->status();
  return backend->value().get();
}

#define CUDA_BACKEND_OR_SKIP(var)                                           \
  CudaBackend* var = nullptr;                                               \
  do {                                                                      \
    auto shared_ = SharedBackend();                                         \
    if (!shared_.ok()) GTEST_SKIP() << "no usable GPU: " << shared_.status(); \
    var = *shared_;                                                         \
  } while (false)

ProfileOptions Quick() {
  ProfileOptions options;
  options.warmup = 1;
  options.min_repeats = 2;
  options.max_repeats = 3;
  options.max_seconds = 1.0;
  return options;
}

// Runs `schedule` on the GPU (outputs requested) and compares with the
// reference executor on the same inputs.
Status RunAndCompare(CudaBackend& backend, const graph::Graph& graph, const Schedule& schedule,
                     const std::string& what, bool cuda_graph = false) {
  RunOptions options;
  options.profile = Quick();
  options.return_outputs = true;
  options.cuda_graph = cuda_graph;
  options.input_seed = 3;
  ASSIGN_OR_RETURN(RunResult result, backend.RunSchedule(graph, schedule, options));
  if (result.latency.repeats < 1 || !(result.latency.median_ms > 0)) {
    return absl::InternalError(StrCat(what, ": no latency measured"));
  }
  ASSIGN_OR_RETURN(std::vector<graph::Tensor> expected,
                   reference::ExecuteSchedule(graph, schedule, MakeGraphInputs(graph, 3)));
  return reference::CompareTensorLists(result.outputs, expected, kTolerance, what);
}

// RunAndCompare run eagerly and as one CUDA graph ("<what>, graph").
void ExpectMatchesReferenceEagerAndAsGraph(CudaBackend& backend, const graph::Graph& graph,
                                           const Schedule& schedule, const std::string& what) {
  for (bool cuda_graph : {false, true}) {
    const Status status = RunAndCompare(backend, graph, schedule,
                                        cuda_graph ? StrCat(what, ", graph") : what, cuda_graph);
    EXPECT_TRUE(status.ok()) << status;
  }
}

Status RunSequentialAndCompare(CudaBackend& backend, const graph::Graph& graph,
                               const std::string& what) {
  ASSIGN_OR_RETURN(Schedule schedule, scheduler::ios::SequentialSchedule(graph));
  return RunAndCompare(backend, graph, schedule, what);
}

graph::Tensor Shaped(Shape shape) {
  graph::Tensor t;
  t.shape = std::move(shape);
  return t;
}

// One node reading fresh graph inputs; every output a graph output. Inputs
// are scaled by 4 first when `spread` (to reach every branch of clipping
// activations).
StatusOr<graph::Graph> SingleOp(const std::vector<Shape>& inputs, OpType type,
                                graph::Attributes attrs,
                                std::map<std::string, graph::Tensor> weights = {},
                                bool spread = false) {
  GraphBuilder b("case");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId x = b.Input(StrCat("x", i), inputs[i]);
    if (spread) {
      graph::Tensor four = Shaped({1});
      four.data = {4.0f};
      std::map<std::string, graph::Tensor> w;
      w["value"] = four;
      ValueId c = b.AddNode(OpType::kConstant, graph::NoAttrs{}, {}, StrCat("four", i), w)[0];
      x = b.Mul(x, c, StrCat("scale", i));
    }
    xs.push_back(x);
  }
  for (ValueId y : b.AddNode(type, std::move(attrs), xs, "op", std::move(weights))) b.Output(y);
  return std::move(b).Finish();
}

graph::ConvAttrs ConvA(int64_t out, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                       std::array<int64_t, 4> pads, std::array<int64_t, 2> dilation,
                       int64_t groups, bool bias, graph::Activation act) {
  // A clip range that both ends of Clip meet on the random inputs.
  return graph::ConvAttrs{out, kernel, stride, dilation, pads, groups, bias, act, -0.2f, 0.3f};
}

StatusOr<graph::Graph> Conv(Shape in, const graph::ConvAttrs& a) {
  std::map<std::string, graph::Tensor> w;
  w["W"] = Shaped({a.out_channels, in[1] / a.groups, a.kernel[0], a.kernel[1]});
  if (a.has_bias) w["B"] = Shaped({a.out_channels});
  return SingleOp({in}, OpType::kConv, a, std::move(w));
}

StatusOr<graph::Graph> Pool(OpType type, Shape in, std::array<int64_t, 2> k,
                            std::array<int64_t, 2> s, std::array<int64_t, 4> p, bool ceil,
                            bool include_pad) {
  return SingleOp({in}, type, graph::PoolAttrs{k, s, p, ceil, include_pad});
}

StatusOr<graph::Graph> Gemm(Shape a_shape, graph::GemmAttrs attrs, Shape b_shape,
                            std::optional<Shape> c_shape) {
  std::map<std::string, graph::Tensor> w;
  w["B"] = Shaped(b_shape);
  if (c_shape.has_value()) w["C"] = Shaped(*c_shape);
  return SingleOp({a_shape}, OpType::kGemm, attrs, std::move(w));
}

struct OpCase {
  std::string name;
  std::function<StatusOr<graph::Graph>()> build;
};

std::vector<OpCase> OpCases() {
  using graph::Activation;
  const float inf = std::numeric_limits<float>::infinity();
  std::map<std::string, graph::Tensor> bn;
  for (const char* role : {"scale", "bias", "mean", "var"}) bn[role] = Shaped({6});
  return {
      // Conv: fused bias+Relu, epilogue activations, groups, asymmetric pads.
      {"conv_3x3_relu", [] { return Conv({1, 8, 10, 10}, ConvA(16, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true, Activation::kRelu)); }},
      {"conv_relu_no_bias", [] { return Conv({2, 8, 6, 6}, ConvA(8, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false, Activation::kRelu)); }},
      {"conv_asym_clip", [] { return Conv({1, 8, 11, 11}, ConvA(12, {3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 1, false, Activation::kClip)); }},
      {"conv_dilated_sigmoid", [] { return Conv({1, 6, 12, 12}, ConvA(8, {5, 5}, {1, 1}, {4, 4, 4, 4}, {2, 2}, 1, true, Activation::kSigmoid)); }},
      {"conv_grouped_tanh", [] { return Conv({1, 16, 9, 9}, ConvA(32, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4, true, Activation::kTanh)); }},
      {"conv_depthwise", [] { return Conv({1, 32, 14, 14}, ConvA(32, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 32, true, Activation::kRelu)); }},
      {"conv_1x1_batch2_bias", [] { return Conv({2, 64, 7, 7}, ConvA(40, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true, Activation::kNone)); }},
      {"conv_1x7", [] { return Conv({1, 16, 9, 9}, ConvA(24, {1, 7}, {1, 1}, {0, 3, 0, 3}, {1, 1}, 1, true, Activation::kNone)); }},
      // Pools: cuDNN (symmetric, floor) and the kernel (ceil, asymmetric).
      {"maxpool_cudnn", [] { return Pool(OpType::kMaxPool, {1, 16, 13, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false); }},
      {"avgpool_cudnn_include", [] { return Pool(OpType::kAveragePool, {1, 16, 9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, true); }},
      {"avgpool_cudnn_exclude", [] { return Pool(OpType::kAveragePool, {2, 16, 9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, false); }},
      {"maxpool_ceil_kernel", [] { return Pool(OpType::kMaxPool, {1, 16, 14, 14}, {3, 3}, {2, 2}, {0, 0, 0, 0}, true, false); }},
      {"maxpool_asym_kernel", [] { return Pool(OpType::kMaxPool, {1, 8, 7, 7}, {2, 2}, {2, 2}, {0, 0, 1, 1}, false, false); }},
      {"avgpool_ceil_include_kernel", [] { return Pool(OpType::kAveragePool, {1, 8, 10, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, true); }},
      {"global_avgpool", [] { return SingleOp({{2, 40, 7, 7}}, OpType::kGlobalAveragePool, graph::NoAttrs{}); }},
      {"global_maxpool", [] { return SingleOp({{1, 3, 5, 5}}, OpType::kGlobalMaxPool, graph::NoAttrs{}); }},
      // Activations: cuDNN on 4-D, kernels otherwise.
      {"relu_4d", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kRelu, graph::NoAttrs{}, {}, true); }},
      {"relu_2d", [] { return SingleOp({{3, 17}}, OpType::kRelu, graph::NoAttrs{}, {}, true); }},
      {"sigmoid_4d", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kSigmoid, graph::NoAttrs{}, {}, true); }},
      {"tanh_2d", [] { return SingleOp({{3, 17}}, OpType::kTanh, graph::NoAttrs{}, {}, true); }},
      {"clip", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kClip, graph::ClipAttrs{-0.5f, 0.25f}, {}, true); }},
      {"clip_no_max", [inf] { return SingleOp({{3, 17}}, OpType::kClip, graph::ClipAttrs{-0.3f, inf}, {}, true); }},
      {"hardsigmoid", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kHardSigmoid, graph::HardSigmoidAttrs{0.2f, 0.5f}, {}, true); }},
      {"hardswish", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kHardSwish, graph::NoAttrs{}, {}, true); }},
      // Binary with broadcasting.
      {"add_same", [] { return SingleOp({{2, 24, 5, 5}, {2, 24, 5, 5}}, OpType::kAdd, graph::NoAttrs{}); }},
      {"add_channel", [] { return SingleOp({{2, 24, 5, 5}, {1, 24, 1, 1}}, OpType::kAdd, graph::NoAttrs{}); }},
      {"sub_lower_rank", [] { return SingleOp({{2, 24, 5, 5}, {5}}, OpType::kSub, graph::NoAttrs{}); }},
      {"mul_both_broadcast", [] { return SingleOp({{1, 24, 1, 1}, {1, 1, 5, 5}}, OpType::kMul, graph::NoAttrs{}); }},
      // Data movement.
      {"concat_channels", [] { return SingleOp({{1, 8, 6, 6}, {1, 16, 6, 6}, {1, 5, 6, 6}}, OpType::kConcat, graph::ConcatAttrs{1}); }},
      {"concat_height_batch2", [] { return SingleOp({{2, 16, 3, 6}, {2, 16, 5, 6}}, OpType::kConcat, graph::ConcatAttrs{2}); }},
      {"split_channels", [] { return SingleOp({{1, 40, 6, 6}}, OpType::kSplit, graph::SplitAttrs{1, {8, 24, 8}}); }},
      {"split_batch2", [] { return SingleOp({{2, 40, 3, 3}}, OpType::kSplit, graph::SplitAttrs{1, {10, 30}}); }},
      {"slice_steps", [] { return SingleOp({{1, 24, 10, 10}}, OpType::kSlice, graph::SliceAttrs{{2, 3}, {1, 0}, {9, 10}, {2, 3}}); }},
      {"pad_constant", [] { return SingleOp({{1, 8, 5, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 1, 2, 0, 0, 2, 1}, graph::PadMode::kConstant, 0.5f}); }},
      {"pad_reflect", [] { return SingleOp({{1, 24, 5, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 2, 1, 0, 0, 1, 2}, graph::PadMode::kReflect, 0.0f}); }},
      {"pad_edge", [] { return SingleOp({{2, 8, 4, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 3, 0, 0, 0, 0, 2}, graph::PadMode::kEdge, 0.0f}); }},
      {"transpose", [] { return SingleOp({{2, 3, 4, 5}}, OpType::kTranspose, graph::TransposeAttrs{{3, 1, 0, 2}}); }},
      {"reshape", [] { return SingleOp({{2, 24, 4, 4}}, OpType::kReshape, graph::ReshapeAttrs{{2, 384}}); }},
      {"flatten", [] { return SingleOp({{2, 24, 3, 3}}, OpType::kFlatten, graph::FlattenAttrs{2}); }},
      {"identity", [] { return SingleOp({{3, 17}}, OpType::kIdentity, graph::NoAttrs{}); }},
      // Reductions and normalisation.
      {"reducemean_spatial", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMean, graph::ReduceAttrs{{2, 3}, false}); }},
      {"reducemean_channels", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMean, graph::ReduceAttrs{{1}, true}); }},
      {"reducemean_all", [] { return SingleOp({{3, 17}}, OpType::kReduceMean, graph::ReduceAttrs{{}, false}); }},
      {"softmax_logits", [] { return SingleOp({{3, 1000}}, OpType::kSoftmax, graph::SoftmaxAttrs{1}); }},
      {"softmax_channels", [] { return SingleOp({{2, 8, 3, 3}}, OpType::kSoftmax, graph::SoftmaxAttrs{1}); }},
      {"softmax_axis0", [] { return SingleOp({{4, 6}}, OpType::kSoftmax, graph::SoftmaxAttrs{0}); }},
      {"batchnorm", [bn] { return SingleOp({{2, 6, 5, 5}}, OpType::kBatchNormalization, graph::BatchNormAttrs{1e-3f}, bn); }},
      // cuBLAS.
      {"gemm_linear", [] { return Gemm({4, 64}, graph::GemmAttrs{1, 1, false, true}, {10, 64}, Shape{10}); }},
      {"gemm_alpha_beta", [] { return Gemm({4, 64}, graph::GemmAttrs{0.5f, 2.0f, false, false}, {64, 10}, Shape{4, 10}); }},
      {"gemm_trans_a_column_c", [] { return Gemm({64, 4}, graph::GemmAttrs{1, 0.5f, true, true}, {10, 64}, Shape{4, 1}); }},
      {"gemm_no_c", [] { return Gemm({3, 20}, graph::GemmAttrs{2, 1, false, false}, {20, 6}, std::nullopt); }},
      {"matmul_batched", [] { return SingleOp({{2, 4, 8}, {2, 8, 6}}, OpType::kMatMul, graph::NoAttrs{}); }},
      {"matmul_broadcast", [] { return SingleOp({{2, 1, 4, 5}, {3, 5, 6}}, OpType::kMatMul, graph::NoAttrs{}); }},
      {"matmul_matrix_vector", [] {
         std::map<std::string, graph::Tensor> w;
         w["B"] = Shaped({8});
         return SingleOp({{3, 4, 8}}, OpType::kMatMul, graph::NoAttrs{}, w);
       }},
  };
}

TEST(CudaBackendCreateTest, NoDeviceGivesAClearError) {
  auto backend = CudaBackend::Create();
  if (ListCudaDevices().ok()) {
    ASSERT_TRUE(backend.ok()) << backend.status();
    EXPECT_EQ((*backend)->name(), "cuda");
    EXPECT_FALSE((*backend)->device_description().empty());
    CudaBackendOptions missing;
    missing.device = 1000;
    EXPECT_EQ(CudaBackend::Create(missing).status().code(), absl::StatusCode::kNotFound);
    return;
  }
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnavailable) << backend.status();
  EXPECT_THAT(std::string(backend.status().message()), StartsWith("no CUDA device"));
}

TEST(CudaOpSupportTest, EveryIrOpIsSupported) {
  for (int t = 0; t < graph::kNumOpTypes; ++t) {
    EXPECT_TRUE(CudaSupportedOps().test(t)) << t;
  }
  for (const OpCase& c : OpCases()) {
    auto g = c.build();
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status();
    EXPECT_TRUE(CheckGraphSupported(*g).ok()) << c.name;
  }
}

TEST(CudaOpSupportTest, RanksBeyondTheKernelsAreUnimplemented) {
  GraphBuilder b("deep");
  const Shape nine(9, 2);
  ValueId x = b.Input("x", nine);
  b.Output(b.Add(x, x, "too_deep"));
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status();
  Status status = CheckGraphSupported(*g);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()), HasSubstr("'too_deep' (Add)"));
}

class CudaOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaOpTest, MatchesReference) {
  CUDA_BACKEND_OR_SKIP(backend);
  auto g = GetParam().build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(backend->CheckSupported(*g).ok());
  Status status = RunSequentialAndCompare(*backend, *g, GetParam().name);
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpTest, ::testing::ValuesIn(OpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                           return info.param.name;
                         });

// x -> {conv3x3 -> conv1x1 | avgpool | conv1x1 -> relu} -> concat.
StatusOr<graph::Graph> ThreeBranches(int64_t batch) {
  GraphBuilder b("three");
  ValueId x = b.Input("x", {batch, 32, 10, 10});
  ValueId a =
      b.Conv(b.Conv(x, ConvSpecOf(32, {3, 3}, {1, 1}), "a1"), ConvSpecOf(16, {1, 1}, {0, 0}), "a2");
  ValueId p = b.AveragePool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, "pool");
  ValueId c =
      b.Relu(b.Conv(x, ConvSpecOf(24, {1, 1}, {0, 0}, graph::Activation::kNone), "c1"), "c2");
  b.Output(b.Concat({a, p, c}, 1, "cat"));
  return std::move(b).Finish();
}

// x -> conv1x1, conv3x3 (no bias), conv1x3, conv3x1 (one merge) -> concat.
StatusOr<graph::Graph> MergeBlock(int64_t batch) {
  GraphBuilder b("merge");
  ValueId x = b.Input("x", {batch, 24, 9, 9});
  std::vector<ValueId> outs = {
      b.Conv(x, ConvSpecOf(16, {1, 1}, {0, 0}), "m1x1"),
      b.Conv(x, ConvSpecOf(20, {3, 3}, {1, 1}, graph::Activation::kRelu, false), "m3x3"),
      b.Conv(x, ConvSpecOf(8, {1, 3}, {0, 1}), "m1x3"),
      b.Conv(x, ConvSpecOf(12, {3, 1}, {1, 0}), "m3x1")};
  b.Output(b.Concat(outs, 1, "cat"));
  return std::move(b).Finish();
}

TEST(CudaStageTest, ConcurrentGroupsMatchReference) {
  CUDA_BACKEND_OR_SKIP(backend);
  for (int64_t batch : {1, 2}) {
    auto g = ThreeBranches(batch);
    ASSERT_TRUE(g.ok()) << g.status();
    Schedule s = ScheduleOf({ConcurrentStage({{0, 1}, {2}, {3, 4}}), ConcurrentStage({{5}})});
    ExpectMatchesReferenceEagerAndAsGraph(*backend, *g, s, StrCat("three groups, batch ", batch));
  }
}

TEST(CudaStageTest, MergedConvMatchesReference) {
  CUDA_BACKEND_OR_SKIP(backend);
  for (int64_t batch : {1, 2}) {
    auto g = MergeBlock(batch);
    ASSERT_TRUE(g.ok()) << g.status();
    auto merge = MergeStage(*g, {0, 1, 2, 3});
    ASSERT_TRUE(merge.ok()) << merge.status();
    Schedule s = ScheduleOf({*merge, ConcurrentStage({{4}})});
    ExpectMatchesReferenceEagerAndAsGraph(*backend, *g, s, StrCat("merge, batch ", batch));
  }
}

TEST(CudaStageTest, ProfileTimesConcurrentAndMergedStages) {
  CUDA_BACKEND_OR_SKIP(backend);
  auto three = ThreeBranches(1);
  auto merged = MergeBlock(1);
  ASSERT_TRUE(three.ok() && merged.ok());
  auto merge = MergeStage(*merged, {0, 1, 2, 3});
  ASSERT_TRUE(merge.ok());
  auto concurrent_plans = backend->Build(*three, {ConcurrentStage({{0, 1}, {2}, {3, 4}}),
                                                  ConcurrentStage({{0, 1, 2, 3, 4}})});
  ASSERT_TRUE(concurrent_plans.ok()) << concurrent_plans.status();
  auto merge_plans = backend->Build(*merged, {*merge, ConcurrentStage({{0}, {1}, {2}, {3}})});
  ASSERT_TRUE(merge_plans.ok()) << merge_plans.status();
  std::vector<const StagePlan*> plans;
  for (const auto& p : *concurrent_plans) plans.push_back(p.get());
  for (const auto& p : *merge_plans) plans.push_back(p.get());
  ProfileOptions options = Quick();
  auto stats = backend->Profile(plans, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), plans.size());
  for (const LatencyStats& s : *stats) {
    EXPECT_GE(s.repeats, options.min_repeats);
    EXPECT_GT(s.median_ms, 0.0);
    EXPECT_LE(s.p10_ms, s.median_ms);
    EXPECT_LE(s.median_ms, s.p90_ms);
  }
}

// With graph_stages each stage is captured as a CUDA graph and its replays
// are timed; the device description says so (latencies kept apart).
TEST(CudaStageTest, GraphTimedStagesProfileConcurrentAndMergedStages) {
  CUDA_BACKEND_OR_SKIP(shared);
  (void)shared;
  CudaBackendOptions graph_options;
  graph_options.execution.graph_stages = true;
  auto backend = CudaBackend::Create(graph_options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->device_description(), HasSubstr("stages timed as CUDA graphs"));
  EXPECT_THAT(shared->device_description(), Not(HasSubstr("CUDA graphs")));
  auto three = ThreeBranches(1);
  auto merged = MergeBlock(1);
  ASSERT_TRUE(three.ok() && merged.ok());
  auto merge = MergeStage(*merged, {0, 1, 2, 3});
  ASSERT_TRUE(merge.ok());
  auto concurrent = (*backend)->Build(*three, {ConcurrentStage({{0, 1}, {2}, {3, 4}})});
  ASSERT_TRUE(concurrent.ok()) << concurrent.status();
  auto merge_plans = (*backend)->Build(*merged, {*merge});
  ASSERT_TRUE(merge_plans.ok()) << merge_plans.status();
  auto stats = (*backend)->Profile({(*concurrent)[0].get(), (*merge_plans)[0].get()}, Quick());
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 2u);
  for (const LatencyStats& s : *stats) EXPECT_GT(s.median_ms, 0.0);
}

// The floor the backend declares (cuda_device_floor.h): back to back, from a launch
// cost of a few microseconds, none with graph-timed stages; and a stage of
// three groups it profiles does not beat it (the floor's assumption, also
// checked over whole blocks by bench/bound_audit_bench --backend cuda).
TEST(CudaStageTest, DeclaresABackToBackFloorItsStagesKeep) {
  CUDA_BACKEND_OR_SKIP(backend);
  const scheduler::ios::DeviceFloor floor = backend->device_floor();
  EXPECT_TRUE(floor.back_to_back);
  EXPECT_EQ(floor.free_ops, scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_GT(floor.launch_ms, 0.0002);
  EXPECT_LT(floor.launch_ms, 0.05);
  CudaBackendOptions graph_options;
  graph_options.execution.graph_stages = true;
  auto graph_timed = CudaBackend::Create(graph_options);
  ASSERT_TRUE(graph_timed.ok()) << graph_timed.status();
  EXPECT_FALSE((*graph_timed)->device_floor().bounds_anything());
  auto three = ThreeBranches(1);
  ASSERT_TRUE(three.ok());
  const Stage stage = ConcurrentStage({{0, 1}, {2}, {3, 4}});
  double kernels = 0;
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group) {
      kernels += scheduler::ios::ComputeOpFloor(*three, three->node(id), floor).kernels;
    }
  }
  auto plans = backend->Build(*three, {stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  auto stats = backend->Profile({(*plans)[0].get()}, Quick());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE((*stats)[0].p10_ms, scheduler::ios::StageFloorMs(floor, kernels, 0))
      << kernels << " kernels, " << scheduler::ios::DescribeDeviceFloor(floor);
}

// flush_l2: each replay follows an L2 flush and is timed alone; the
// description says so, and it needs graph-timed stages.
TEST(CudaStageTest, FlushedReplaysProfileAndAreKeptApart) {
  CUDA_BACKEND_OR_SKIP(shared);
  (void)shared;
  CudaBackendOptions alone;
  alone.execution.flush_l2 = true;
  EXPECT_EQ(CudaBackend::Create(alone).status().code(), absl::StatusCode::kInvalidArgument);
  CudaBackendOptions flushed = alone;
  flushed.execution.graph_stages = true;
  auto backend = CudaBackend::Create(flushed);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->device_description(), HasSubstr("L2 flushed before each replay"));
  auto three = ThreeBranches(1);
  ASSERT_TRUE(three.ok());
  auto plans = (*backend)->Build(*three, {ConcurrentStage({{0, 1}, {2}, {3, 4}})});
  ASSERT_TRUE(plans.ok()) << plans.status();
  auto stats = (*backend)->Profile({(*plans)[0].get()}, Quick());
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_GT((*stats)[0].median_ms, 0.0);
}

// A sample holds enough back-to-back launches to last about 0.2 ms, 1 to 16.
TEST(StreamTimerTest, LaunchesPerSampleAmortiseShortWork) {
  EXPECT_EQ(StreamTimer::LaunchesPerSample(1.0), 1);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(StreamTimer::kSampleTargetMs), 1);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(0.08), 3);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(0.03), 7);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(0.001), StreamTimer::kMaxLaunchesPerSample);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(0.0), StreamTimer::kMaxLaunchesPerSample);
  EXPECT_EQ(StreamTimer::LaunchesPerSample(std::numeric_limits<double>::quiet_NaN()),
            StreamTimer::kMaxLaunchesPerSample);
}

TEST(StreamTimerTest, OneSampleEnqueuesEveryLaunch) {
  CUDA_BACKEND_OR_SKIP(backend);
  (void)backend;  // makes the device current
  auto stream = CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto timer = StreamTimer::Create();
  ASSERT_TRUE(timer.ok()) << timer.status();
  int calls = 0;
  const auto count = [&] {
    ++calls;
    return absl::OkStatus();
  };
  auto per_launch = timer->Time(stream->get(), count, 5);
  ASSERT_TRUE(per_launch.ok()) << per_launch.status();
  EXPECT_EQ(calls, 5);
  EXPECT_GE(*per_launch, StreamTimer::kResolutionMs);
  EXPECT_EQ(timer->Time(stream->get(), count, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  int failing = 0;
  auto failed = timer->Time(
      stream->get(),
      [&] { return ++failing == 2 ? absl::InternalError("second") : absl::OkStatus(); }, 4);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(failing, 2);
  // Behind the hold kernel: the same launches, timed on the GPU alone.
  calls = 0;
  auto device_only = timer->TimeDeviceOnly(stream->get(), count, 3);
  ASSERT_TRUE(device_only.ok()) << device_only.status();
  EXPECT_EQ(calls, 3);
  EXPECT_GE(*device_only, StreamTimer::kResolutionMs);
  // Each launch after its own `before_each`, timed alone.
  calls = 0;
  int befores = 0;
  auto each = timer->TimeEachDeviceOnly(
      stream->get(),
      [&] {
        ++befores;
        return absl::OkStatus();
      },
      count, 4);
  ASSERT_TRUE(each.ok()) << each.status();
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(befores, 4);
  EXPECT_GE(*each, StreamTimer::kResolutionMs);
  EXPECT_EQ(
      timer->TimeEachDeviceOnly(stream->get(), count, count, StreamTimer::kMaxLaunchesPerSample + 1)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CudaStageTest, ProfileRejectsForeignPlans) {
  CUDA_BACKEND_OR_SKIP(backend);
  class Foreign : public StagePlan {};
  Foreign foreign;
  auto stats = backend->Profile({&foreign}, Quick());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaScheduleTest, ZooModelsMatchReferenceWithAndWithoutCudaGraph) {
  CUDA_BACKEND_OR_SKIP(backend);
  for (const char* model : {"squeezenet", "nasnet_a_mobile"}) {
    auto g = graph::models::BuildZooModel(model, 1);
    ASSERT_TRUE(g.ok()) << g.status();
    auto greedy = scheduler::ios::GreedySchedule(*g, 4);
    ASSERT_TRUE(greedy.ok());
    ExpectMatchesReferenceEagerAndAsGraph(*backend, *g, *greedy, StrCat(model, " greedy"));
  }
}

TEST(CudaScheduleTest, CudaGraphGivesTheSameOutputs) {
  CUDA_BACKEND_OR_SKIP(backend);
  auto g = graph::models::BuildZooModel("squeezenet", 2);
  ASSERT_TRUE(g.ok()) << g.status();
  auto greedy = scheduler::ios::GreedySchedule(*g, 4);
  ASSERT_TRUE(greedy.ok());
  RunOptions options;
  options.profile = Quick();
  options.return_outputs = true;
  auto eager = backend->RunSchedule(*g, *greedy, options);
  ASSERT_TRUE(eager.ok()) << eager.status();
  options.cuda_graph = true;
  auto graphed = backend->RunSchedule(*g, *greedy, options);
  ASSERT_TRUE(graphed.ok()) << graphed.status();
  // Same program, same algorithms: the replayed graph computes the same values.
  Status same = reference::CompareTensorLists(graphed->outputs, eager->outputs, 1e-6, "graph");
  EXPECT_TRUE(same.ok()) << same;
  EXPECT_GT(graphed->latency.median_ms, 0.0);
}

TEST(CudaScheduleTest, RejectsInvalidSchedules) {
  CUDA_BACKEND_OR_SKIP(backend);
  auto g = ThreeBranches(1);
  ASSERT_TRUE(g.ok());
  Schedule missing = ScheduleOf({ConcurrentStage({{0, 1}, {2}})});  // ops 3..5 never run
  EXPECT_EQ(backend->RunSchedule(*g, missing, RunOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::worker::cuda
