#include "graph/dot_export.h"

#include "common/strings.h"

namespace iosfarm::graph {
namespace {

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string Detail(const Node& node) {
  if (const auto* conv = std::get_if<ConvAttrs>(&node.attrs)) {
    std::string detail = StrCat(conv->kernel[0], "x", conv->kernel[1], "/", conv->stride[0]);
    if (conv->groups > 1) detail += StrCat(" g", conv->groups);
    if (conv->activation != Activation::kNone) detail += StrCat(" +", ActivationName(conv->activation));
    return detail;
  }
  if (const auto* pool = std::get_if<PoolAttrs>(&node.attrs)) {
    return StrCat(pool->kernel[0], "x", pool->kernel[1], "/", pool->stride[0]);
  }
  return "";
}

}  // namespace

std::string ExportDot(const Graph& graph) {
  std::string out = StrCat("digraph \"", Escape(graph.name()), "\" {\n  rankdir=TB;\n");
  for (ValueId v : graph.inputs()) {
    out += StrCat("  v", v, " [shape=ellipse,label=\"", Escape(graph.value(v).name), "\\n",
                  ShapeToString(graph.value(v).shape), "\"];\n");
  }
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const Node& node = graph.node(n);
    std::string label = StrCat(Escape(node.name), "\\n", OpTypeName(node.type));
    const std::string detail = Detail(node);
    if (!detail.empty()) label += StrCat(" ", detail);
    if (!node.outputs.empty()) {
      label += StrCat("\\n", ShapeToString(graph.value(node.outputs[0]).shape));
    }
    out += StrCat("  n", n, " [shape=box,label=\"", label, "\"];\n");
    for (ValueId in : node.inputs) {
      const Value& value = graph.value(in);
      const std::string from =
          value.producer == kNoNode ? StrCat("v", in) : StrCat("n", value.producer);
      out += StrCat("  ", from, " -> n", n, " [label=\"", ShapeToString(value.shape), "\"];\n");
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const ValueId v = graph.outputs()[i];
    const Value& value = graph.value(v);
    out += StrCat("  out", i, " [shape=ellipse,label=\"", Escape(value.name), "\"];\n");
    const std::string from =
        value.producer == kNoNode ? StrCat("v", v) : StrCat("n", value.producer);
    out += StrCat("  ", from, " -> out", i, ";\n");
  }
  return out + "}\n";
}

}  // namespace iosfarm::graph
