#include "scheduler/ios/stages/op_content.h"

#include <cstdio>
#include <variant>

#include "common/strings.h"
#include "graph/attributes.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios {
namespace {

using graph::Attributes;

// Exact text of a float (hex float: no rounding).
std::string ExactFloat(float value) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%a", static_cast<double>(value));
  return buffer;
}

template <typename Container>
std::string List(const Container& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ",";
    out += StrCat(v);
  }
  return out;
}

std::string AttrsString(const Attributes& attrs) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, graph::NoAttrs>) {
          return "";
        } else if constexpr (std::is_same_v<T, graph::ConvAttrs>) {
          return StrCat("oc=", a.out_channels, " k=", List(a.kernel), " s=", List(a.stride),
                        " d=", List(a.dilation), " p=", List(a.pads), " g=", a.groups,
                        " bias=", a.has_bias, " act=", graph::ActivationName(a.activation),
                        a.activation == graph::Activation::kClip
                            ? StrCat(" clip=", ExactFloat(a.clip_min), ",",
                                     ExactFloat(a.clip_max))
                            : std::string());
        } else if constexpr (std::is_same_v<T, graph::ConvTransposeAttrs>) {
          return StrCat("oc=", a.out_channels, " k=", List(a.kernel), " s=", List(a.stride),
                        " d=", List(a.dilation), " p=", List(a.pads),
                        " op=", List(a.output_padding), " g=", a.groups, " bias=", a.has_bias);
        } else if constexpr (std::is_same_v<T, graph::PoolAttrs>) {
          return StrCat("k=", List(a.kernel), " s=", List(a.stride), " p=", List(a.pads),
                        " ceil=", a.ceil_mode, " cip=", a.count_include_pad);
        } else if constexpr (std::is_same_v<T, graph::ClipAttrs>) {
          return StrCat("min=", ExactFloat(a.min), " max=", ExactFloat(a.max));
        } else if constexpr (std::is_same_v<T, graph::HardSigmoidAttrs>) {
          return StrCat("alpha=", ExactFloat(a.alpha), " beta=", ExactFloat(a.beta));
        } else if constexpr (std::is_same_v<T, graph::ConcatAttrs>) {
          return StrCat("axis=", a.axis);
        } else if constexpr (std::is_same_v<T, graph::SplitAttrs>) {
          return StrCat("axis=", a.axis, " sizes=", List(a.sizes));
        } else if constexpr (std::is_same_v<T, graph::SliceAttrs>) {
          return StrCat("axes=", List(a.axes), " starts=", List(a.starts), " ends=",
                        List(a.ends), " steps=", List(a.steps));
        } else if constexpr (std::is_same_v<T, graph::PadAttrs>) {
          return StrCat("pads=", List(a.pads), " mode=", graph::PadModeName(a.mode),
                        " value=", ExactFloat(a.value));
        } else if constexpr (std::is_same_v<T, graph::ReshapeAttrs>) {
          return StrCat("shape=", List(a.shape));
        } else if constexpr (std::is_same_v<T, graph::FlattenAttrs>) {
          return StrCat("axis=", a.axis);
        } else if constexpr (std::is_same_v<T, graph::TransposeAttrs>) {
          return StrCat("perm=", List(a.perm));
        } else if constexpr (std::is_same_v<T, graph::ReduceAttrs>) {
          return StrCat("axes=", List(a.axes), " keepdims=", a.keepdims);
        } else if constexpr (std::is_same_v<T, graph::GemmAttrs>) {
          return StrCat("alpha=", ExactFloat(a.alpha), " beta=", ExactFloat(a.beta),
                        " ta=", a.trans_a, " tb=", a.trans_b);
        } else if constexpr (std::is_same_v<T, graph::SoftmaxAttrs>) {
          return StrCat("axis=", a.axis);
        } else if constexpr (std::is_same_v<T, graph::BatchNormAttrs>) {
          return StrCat("eps=", ExactFloat(a.epsilon));
        } else if constexpr (std::is_same_v<T, graph::ResizeAttrs>) {
          return StrCat("size=", List(a.size), " scale=", ExactFloat(a.scale[0]), ",",
                        ExactFloat(a.scale[1]), " mode=", graph::ResizeModeName(a.mode),
                        " coord=", graph::ResizeCoordinatesName(a.coordinates),
                        " round=", graph::NearestRoundingName(a.rounding));
        } else if constexpr (std::is_same_v<T, graph::UnaryMathAttrs>) {
          return StrCat("fn=", graph::UnaryFunctionName(a.function), " alpha=", ExactFloat(a.alpha),
                        " beta=", ExactFloat(a.beta));
        } else {
          static_assert(sizeof(T) == 0, "OpContentString: unhandled attributes type");
        }
      },
      attrs);
}

}  // namespace

std::string OpContentString(const graph::Graph& graph, const graph::Node& node) {
  // dtype is fp32 throughout the IR today; it is part of the content so that
  // adding dtypes later changes signatures only of non-fp32 ops.
  std::string out = StrCat(graph::OpTypeName(node.type), "|f32|in=");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const graph::Value& value = graph.value(node.inputs[i]);
    const bool constant =
        value.producer != graph::kNoNode && IsFreeNode(graph.node(value.producer));
    out += StrCat(i == 0 ? "" : ";", constant ? "c" : "", graph::ShapeToString(value.shape));
  }
  out += "|out=";
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    out += StrCat(i == 0 ? "" : ";", graph::ShapeToString(graph.value(node.outputs[i]).shape));
  }
  for (const auto& [role, tensor] : node.weights) {
    out += StrCat("|", role, "=", graph::ShapeToString(tensor.shape));
  }
  out += StrCat("|", AttrsString(node.attrs));
  return out;
}

uint64_t OpContentHash(const graph::Graph& graph, const graph::Node& node) {
  return HashBytes(OpContentString(graph, node));
}

}  // namespace iosfarm::scheduler::ios
