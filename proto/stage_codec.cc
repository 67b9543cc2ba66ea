#include "proto/stage_codec.h"

#include <cstdio>
#include <utility>

#include "common/strings.h"
#include "graph/op_type.h"
#include "scheduler/ios/stages/merge.h"

namespace iosfarm::proto {
namespace {

using scheduler::ios::Stage;
using scheduler::ios::Strategy;

// `status` with "stage <index>: " in front of its message, same code.
Status WithStage(const Status& status, int index) {
  return Status(status.code(), StrCat("stage ", index, ": ", ToStd(status.message())));
}

}  // namespace

std::string SignatureHex(scheduler::ios::Signature signature) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(signature));
  return buffer;
}

v1::StageSpec EncodeStage(const Stage& stage, scheduler::ios::Signature signature) {
  v1::StageSpec spec;
  spec.set_strategy(std::string(scheduler::ios::StrategyName(stage.strategy)));
  spec.set_signature(signature);
  spec.set_single_core(stage.single_core);
  for (const auto& group : stage.groups) {
    v1::StageGroup* out = spec.add_groups();
    for (graph::NodeId op : group) out->add_ops(op);
  }
  return spec;
}

StatusOr<Stage> StageFromSpec(const graph::Graph& graph, const v1::StageSpec& spec, int index) {
  const std::optional<Strategy> strategy = scheduler::ios::StrategyFromName(spec.strategy());
  if (!strategy) {
    return absl::InvalidArgumentError(StrCat("stage ", index, ": unknown strategy '",
                                             spec.strategy(), "' (expected concurrent or merge)"));
  }
  if (spec.groups().empty()) {
    return absl::InvalidArgumentError(StrCat("stage ", index, ": no groups"));
  }
  Stage stage;
  stage.strategy = *strategy;
  stage.single_core = spec.single_core();  // CanonicalizeStage checks it
  std::vector<bool> seen(graph.num_nodes(), false);
  for (int g = 0; g < spec.groups_size(); ++g) {
    const v1::StageGroup& group = spec.groups(g);
    if (group.ops().empty()) {
      return absl::InvalidArgumentError(StrCat("stage ", index, ": group ", g, " is empty"));
    }
    std::vector<graph::NodeId>& ops = stage.groups.emplace_back();
    for (int32_t op : group.ops()) {
      if (op < 0 || op >= graph.num_nodes()) {
        return absl::InvalidArgumentError(StrCat("stage ", index, ": group ", g, ": node id ", op,
                                                 " out of range (graph has ", graph.num_nodes(),
                                                 " nodes)"));
      }
      const graph::Node& node = graph.node(op);
      if (node.type == graph::OpType::kConstant) {
        return absl::InvalidArgumentError(StrCat("stage ", index, ": group ", g, ": node ", op,
                                                 " ('", node.name, "') is a Constant"));
      }
      if (seen[op]) {
        return absl::InvalidArgumentError(StrCat("stage ", index, ": node ", op, " ('",
                                                 node.name, "') is listed twice"));
      }
      seen[op] = true;
      ops.push_back(op);
    }
  }
  if (stage.strategy == Strategy::kMerge) {
    std::vector<graph::NodeId> convs;
    for (const auto& group : stage.groups) {
      if (group.size() != 1) {
        return absl::InvalidArgumentError(
            StrCat("stage ", index, ": merge stage has a group of ", group.size(),
                   " ops (each convolution must be its own group)"));
      }
      convs.push_back(group[0]);
    }
    StatusOr<scheduler::ios::MergedConv> merged = scheduler::ios::MergeConvs(graph, convs);
    if (!merged.ok()) return WithStage(merged.status(), index);
    stage.merged = *std::move(merged);
  }
  StatusOr<scheduler::ios::Signature> signature = scheduler::ios::CanonicalizeStage(graph, stage);
  if (!signature.ok()) return WithStage(signature.status(), index);
  if (*signature != spec.signature()) {
    return absl::FailedPreconditionError(StrCat(
        "stage ", index, ": signature mismatch: the server sent ", SignatureHex(spec.signature()),
        ", the worker computes ", SignatureHex(*signature),
        " for ", scheduler::ios::StageToString(graph, stage),
        " (server and worker disagree on the graph or the signature version ",
        scheduler::ios::kSignatureVersion, ")"));
  }
  return stage;
}

StatusOr<std::vector<Stage>> StagesFromSpecs(
    const graph::Graph& graph, const google::protobuf::RepeatedPtrField<v1::StageSpec>& specs) {
  std::vector<Stage> stages;
  stages.reserve(specs.size());
  for (int i = 0; i < specs.size(); ++i) {
    ASSIGN_OR_RETURN(Stage stage, StageFromSpec(graph, specs.Get(i), i));
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace iosfarm::proto
