#include "scheduler/ios/schedule_json.h"


#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/atomic_file.h"
#include "common/strings.h"
#include "graph/serialize.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios {
namespace {

using nlohmann::json;

json Pair(const std::array<int64_t, 2>& a) { return json::array({a[0], a[1]}); }

json MergedToJson(const graph::Graph& graph, const MergedConv& merged) {
  json branches = json::array();
  for (const MergedBranch& b : merged.branches) {
    branches.push_back({{"op", graph.node(b.op).name},
                        {"channels", json::array({b.channel_begin, b.channel_end})},
                        {"kernel_offset", Pair(b.kernel_offset)}});
  }
  const graph::ConvAttrs& a = merged.attrs;
  json j = {{"input", graph.value(merged.input).name},
            {"out_channels", a.out_channels},
            {"kernel", Pair(a.kernel)},
            {"stride", Pair(a.stride)},
            {"dilation", Pair(a.dilation)},
            {"pads", json::array({a.pads[0], a.pads[1], a.pads[2], a.pads[3]})},
            {"has_bias", a.has_bias},
            {"activation", std::string(graph::ActivationName(a.activation))},
            {"branches", std::move(branches)}};
  if (a.activation == graph::Activation::kClip) {
    j["clip"] = json::array({a.clip_min, a.clip_max});
  }
  return j;
}

// Field access without exceptions.
StatusOr<const json*> Field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) return absl::InvalidArgumentError(StrCat(where, ": not an object"));
  auto it = object.find(key);
  if (it == object.end()) {
    return absl::InvalidArgumentError(StrCat(where, ": missing field '", key, "'"));
  }
  return &*it;
}

StatusOr<std::string> StringField(const json& object, const char* key, const std::string& where) {
  ASSIGN_OR_RETURN(const json* value, Field(object, key, where));
  if (!value->is_string()) {
    return absl::InvalidArgumentError(StrCat(where, ": '", key, "' must be a string"));
  }
  return value->get<std::string>();
}

StatusOr<int64_t> IntField(const json& object, const char* key, const std::string& where) {
  ASSIGN_OR_RETURN(const json* value, Field(object, key, where));
  if (!value->is_number_integer()) {
    return absl::InvalidArgumentError(StrCat(where, ": '", key, "' must be an integer"));
  }
  return value->get<int64_t>();
}

StatusOr<double> NumberField(const json& object, const char* key, const std::string& where) {
  ASSIGN_OR_RETURN(const json* value, Field(object, key, where));
  if (!value->is_number()) {
    return absl::InvalidArgumentError(StrCat(where, ": '", key, "' must be a number"));
  }
  return value->get<double>();
}

StatusOr<const json*> ArrayField(const json& object, const char* key, const std::string& where) {
  ASSIGN_OR_RETURN(const json* value, Field(object, key, where));
  if (!value->is_array()) {
    return absl::InvalidArgumentError(StrCat(where, ": '", key, "' must be an array"));
  }
  return value;
}

}  // namespace

std::string ModelDigest(const graph::Graph& graph) {
  // Streamed: a large model's encoding is never held whole.
  return "sha256:" + Sha256HexOf([&](absl::FunctionRef<void(std::string_view)> sink) {
           graph::SerializeGraphTo(graph, sink);
         });
}

int64_t GraphBatch(const graph::Graph& graph) {
  if (graph.inputs().empty()) return 0;
  const graph::Shape& shape = graph.value(graph.inputs()[0]).shape;
  return shape.empty() ? 0 : shape[0];
}

ScheduleMetadata MakeScheduleMetadata(const graph::Graph& graph, std::string device_key,
                                      std::string kind, const SearchOptions* options) {
  ScheduleMetadata m;
  m.model_name = graph.name();
  m.model_digest = ModelDigest(graph);
  m.batch = GraphBatch(graph);
  m.device_key = std::move(device_key);
  m.kind = std::move(kind);
  if (options != nullptr) {
    m.max_group_ops = options->max_group_ops;
    m.max_groups = options->max_groups;
    m.max_block_ops = options->max_block_ops;
  }
  return m;
}

nlohmann::json ScheduleToJson(const graph::Graph& graph, const Schedule& schedule,
                              const ScheduleMetadata& metadata) {
  json blocks = json::array();
  json* block = nullptr;
  int current_block = -1;
  for (size_t i = 0; i < schedule.stages.size(); ++i) {
    const ScheduledStage& scheduled = schedule.stages[i];
    if (block == nullptr || scheduled.block != current_block) {
      blocks.push_back({{"index", scheduled.block},
                        {"predicted_latency_ms", 0.0},
                        {"stages", json::array()}});
      block = &blocks.back();
      current_block = scheduled.block;
    }
    json groups = json::array();
    for (const auto& group : scheduled.stage.groups) {
      json names = json::array();
      for (graph::NodeId id : group) names.push_back(graph.node(id).name);
      groups.push_back(std::move(names));
    }
    json stage = {{"index", i},
                  {"strategy", std::string(StrategyName(scheduled.stage.strategy))},
                  {"signature", Hex64(scheduled.signature)},
                  {"predicted_latency_ms", scheduled.latency_ms},
                  {"groups", std::move(groups)}};
    if (scheduled.stage.merged) stage["merged"] = MergedToJson(graph, *scheduled.stage.merged);
    (*block)["predicted_latency_ms"] =
        (*block)["predicted_latency_ms"].get<double>() + scheduled.latency_ms;
    (*block)["stages"].push_back(std::move(stage));
  }
  return {{"format", kScheduleFormatName},
          {"version", kScheduleFormatVersion},
          {"model",
           {{"name", metadata.model_name},
            {"digest", metadata.model_digest},
            {"batch", metadata.batch},
            {"num_ops", schedule.num_ops()}}},
          {"device_key", metadata.device_key},
          {"search",
           {{"kind", metadata.kind},
            {"r", metadata.max_group_ops},
            {"s", metadata.max_groups},
            {"max_block_ops", metadata.max_block_ops},
            {"signature_version", kSignatureVersion}}},
          {"predicted_latency_ms", schedule.latency_ms},
          {"num_stages", schedule.stages.size()},
          {"blocks", std::move(blocks)}};
}

StatusOr<ParsedSchedule> ScheduleFromJson(const nlohmann::json& j, const graph::Graph& graph) {
  ParsedSchedule parsed;
  const std::string top = "schedule";
  ASSIGN_OR_RETURN(std::string format, StringField(j, "format", top));
  if (format != kScheduleFormatName) {
    return absl::InvalidArgumentError(
        StrCat("schedule: format is '", format, "', expected '", kScheduleFormatName, "'"));
  }
  ASSIGN_OR_RETURN(int64_t version, IntField(j, "version", top));
  if (version < 1 || version > kScheduleFormatVersion) {
    return absl::InvalidArgumentError(StrCat("schedule: unsupported format version ", version,
                                             " (this build reads 1..", kScheduleFormatVersion,
                                             ")"));
  }
  ASSIGN_OR_RETURN(const json* model, Field(j, "model", top));
  ScheduleMetadata& m = parsed.metadata;
  ASSIGN_OR_RETURN(m.model_name, StringField(*model, "name", "schedule.model"));
  ASSIGN_OR_RETURN(m.model_digest, StringField(*model, "digest", "schedule.model"));
  ASSIGN_OR_RETURN(m.batch, IntField(*model, "batch", "schedule.model"));
  const std::string digest = ModelDigest(graph);
  if (m.model_digest != digest) {
    // Say what differs in words first; the digests tell versions apart.
    const int64_t batch = GraphBatch(graph);
    std::string what;
    if (m.model_name != graph.name()) {
      what = StrCat("schedule is for ", m.model_name, ", batch ", m.batch, "; this model is ",
                    graph.name(), ", batch ", batch);
    } else if (m.batch != batch) {
      what = StrCat("schedule is for ", m.model_name, ", batch ", m.batch, "; this is batch ",
                    batch);
    } else {
      what = StrCat("schedule is for another version of ", m.model_name, ", batch ", m.batch,
                    " (other weights, shapes or operators)");
    }
    return absl::FailedPreconditionError(StrCat(what, ": schedule model digest ", m.model_digest,
                                                ", this graph's ", digest));
  }
  ASSIGN_OR_RETURN(m.device_key, StringField(j, "device_key", top));
  ASSIGN_OR_RETURN(const json* search, Field(j, "search", top));
  ASSIGN_OR_RETURN(m.kind, StringField(*search, "kind", "schedule.search"));
  ASSIGN_OR_RETURN(int64_t r, IntField(*search, "r", "schedule.search"));
  ASSIGN_OR_RETURN(int64_t s, IntField(*search, "s", "schedule.search"));
  ASSIGN_OR_RETURN(int64_t block_ops, IntField(*search, "max_block_ops", "schedule.search"));
  ASSIGN_OR_RETURN(int64_t signature_version,
                   IntField(*search, "signature_version", "schedule.search"));
  m.max_group_ops = static_cast<int>(r);
  m.max_groups = static_cast<int>(s);
  m.max_block_ops = static_cast<int>(block_ops);

  std::unordered_map<std::string, graph::NodeId> by_name;
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    auto [it, inserted] = by_name.emplace(graph.node(id).name, id);
    if (!inserted) it->second = graph::kNoNode;  // ambiguous
  }
  ASSIGN_OR_RETURN(const json* blocks, ArrayField(j, "blocks", top));
  Schedule& schedule = parsed.schedule;
  for (size_t b = 0; b < blocks->size(); ++b) {
    const std::string where_block = StrCat("schedule.blocks[", b, "]");
    const json& block = (*blocks)[b];
    ASSIGN_OR_RETURN(int64_t block_index, IntField(block, "index", where_block));
    ASSIGN_OR_RETURN(const json* stages, ArrayField(block, "stages", where_block));
    for (size_t k = 0; k < stages->size(); ++k) {
      const std::string where = StrCat(where_block, ".stages[", k, "]");
      const json& js = (*stages)[k];
      ScheduledStage scheduled;
      scheduled.block = static_cast<int>(block_index);
      ASSIGN_OR_RETURN(std::string strategy, StringField(js, "strategy", where));
      std::optional<Strategy> parsed_strategy = StrategyFromName(strategy);
      if (!parsed_strategy) {
        return absl::InvalidArgumentError(
            StrCat(where, ": unknown strategy '", strategy, "'"));
      }
      scheduled.stage.strategy = *parsed_strategy;
      ASSIGN_OR_RETURN(scheduled.latency_ms, NumberField(js, "predicted_latency_ms", where));
      if (!std::isfinite(scheduled.latency_ms) || scheduled.latency_ms < 0) {
        return absl::InvalidArgumentError(StrCat(where, ": bad predicted_latency_ms"));
      }
      ASSIGN_OR_RETURN(const json* groups, ArrayField(js, "groups", where));
      for (const json& group : *groups) {
        if (!group.is_array() || group.empty()) {
          return absl::InvalidArgumentError(StrCat(where, ": a group must be a non-empty array"));
        }
        std::vector<graph::NodeId> ids;
        for (const json& name : group) {
          if (!name.is_string()) {
            return absl::InvalidArgumentError(StrCat(where, ": op names must be strings"));
          }
          auto it = by_name.find(name.get<std::string>());
          if (it == by_name.end() || it->second == graph::kNoNode) {
            return absl::InvalidArgumentError(
                StrCat(where, ": ", it == by_name.end() ? "unknown" : "ambiguous", " op '",
                       name.get<std::string>(), "'"));
          }
          ids.push_back(it->second);
        }
        scheduled.stage.groups.push_back(std::move(ids));
      }
      // Recompute what the signature and the merge depend on.
      StatusOr<Signature> signature = StageSignature(graph, scheduled.stage);
      if (!signature.ok()) {
        return absl::InvalidArgumentError(
            StrCat(where, ": ", ToStd(signature.status().message())));
      }
      scheduled.signature = *signature;
      ASSIGN_OR_RETURN(std::string signature_text, StringField(js, "signature", where));
      uint64_t stated = 0;
      if (!ParseHex64(signature_text, &stated)) {
        return absl::InvalidArgumentError(
            StrCat(where, ": signature '", signature_text, "' is not 16 hex digits"));
      }
      if (stated != *signature) {
        return absl::FailedPreconditionError(StrCat(
            where, ": signature ", signature_text, " differs from the recomputed ",
            Hex64(*signature), " (schedule written with signature version ", signature_version,
            ", this build uses ", kSignatureVersion, ")"));
      }
      if (scheduled.stage.strategy == Strategy::kMerge) {
        if (!js.contains("merged")) {
          return absl::InvalidArgumentError(StrCat(where, ": merge stage without 'merged'"));
        }
        std::vector<graph::NodeId> convs;
        for (const auto& group : scheduled.stage.groups) convs.push_back(group[0]);
        StatusOr<MergedConv> merged = MergeConvs(graph, convs);
        if (!merged.ok()) {
          return absl::InvalidArgumentError(
              StrCat(where, ": illegal merge: ", ToStd(merged.status().message())));
        }
        if (js["merged"] != MergedToJson(graph, *merged)) {
          return absl::InvalidArgumentError(
              StrCat(where, ": 'merged' does not describe the merge of its groups"));
        }
        scheduled.stage.merged = *std::move(merged);
      } else if (js.contains("merged")) {
        return absl::InvalidArgumentError(StrCat(where, ": concurrent stage with 'merged'"));
      }
      schedule.latency_ms += scheduled.latency_ms;
      schedule.stages.push_back(std::move(scheduled));
    }
  }
  Status valid = ValidateSchedule(graph, schedule);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(StrCat("schedule: ", ToStd(valid.message())));
  }
  ASSIGN_OR_RETURN(double total, NumberField(j, "predicted_latency_ms", top));
  if (std::abs(total - schedule.latency_ms) > 1e-6 * std::max(1.0, std::abs(total))) {
    return absl::InvalidArgumentError(
        StrCat("schedule: predicted_latency_ms ", total, " is not the sum of its stages (",
               schedule.latency_ms, ")"));
  }
  return parsed;
}

StatusOr<ParsedSchedule> ParseScheduleJson(std::string_view text, const graph::Graph& graph) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("schedule: not valid JSON");
  return ScheduleFromJson(j, graph);
}

StatusOr<ParsedSchedule> ReadScheduleFile(const std::string& path, const graph::Graph& graph) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(StrCat("cannot read schedule file '", path, "'"));
  std::stringstream text;
  text << file.rdbuf();
  auto parsed = ParseScheduleJson(text.str(), graph);
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        StrCat("schedule file '", path, "': ", parsed.status().message()));
  }
  return parsed;
}

Status WriteScheduleFile(const std::string& path, const graph::Graph& graph,
                         const Schedule& schedule, const ScheduleMetadata& metadata) {
  return WriteFileAtomically(path, ScheduleToJson(graph, schedule, metadata).dump(2) + "\n",
                             "schedule file");
}

}  // namespace iosfarm::scheduler::ios
