#include "client/inspect_report.h"

#include <cstdio>

#include "common/strings.h"

namespace iosfarm::client {
namespace {

nlohmann::json ShapesJson(const std::vector<graph::NamedShape>& shapes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : shapes) out.push_back({{"name", s.name}, {"shape", s.shape}});
  return out;
}

std::string Giga(int64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f G", static_cast<double>(value) / 1e9);
  return buffer;
}

std::string Mega(int64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f M", static_cast<double>(value) / 1e6);
  return buffer;
}

}  // namespace

nlohmann::json InspectJson(const graph::LoadedModel& model, const graph::GraphStats& stats) {
  nlohmann::json out;
  out["format_version"] = kInspectFormatVersion;
  out["model"] = stats.name;
  out["source"] = model.source;
  if (!model.path.empty()) out["path"] = model.path;
  out["batch"] = stats.inputs.empty() || stats.inputs[0].shape.empty()
                     ? 0
                     : stats.inputs[0].shape[0];
  out["ops"] = stats.num_ops;
  out["op_counts"] = stats.op_counts;
  out["params"] = stats.cost.params;
  out["macs"] = stats.cost.macs;
  out["flops"] = stats.cost.flops;
  out["bytes_read"] = stats.cost.bytes_read;
  out["bytes_written"] = stats.cost.bytes_written;
  out["width"] = stats.width.width;
  out["width_exact"] = stats.width.exact;
  out["inputs"] = ShapesJson(stats.inputs);
  out["outputs"] = ShapesJson(stats.outputs);
  return out;
}

std::string InspectText(const graph::LoadedModel& model, const graph::GraphStats& stats) {
  std::string out = StrCat("model     ", stats.name, " (", model.source,
                           model.path.empty() ? "" : StrCat(": ", model.path), ")\n");
  for (const auto& in : stats.inputs) {
    out += StrCat("input     ", in.name, " ", graph::ShapeToString(in.shape), "\n");
  }
  for (const auto& o : stats.outputs) {
    out += StrCat("output    ", o.name, " ", graph::ShapeToString(o.shape), "\n");
  }
  out += StrCat("ops       ", stats.num_ops, "\n");
  out += StrCat("params    ", Mega(stats.cost.params), " (", stats.cost.params, ")\n");
  out += StrCat("MACs      ", Giga(stats.cost.macs), " (", stats.cost.macs, ")\n");
  out += StrCat("FLOPs     ", Giga(stats.cost.flops), "\n");
  out += StrCat("memory    ", Mega(stats.cost.bytes_read), "B read, ",
                Mega(stats.cost.bytes_written), "B written\n");
  out += StrCat("width     ", stats.width.width, stats.width.exact ? "" : " (lower bound)", "\n");
  out += "op counts\n";
  for (const auto& [type, count] : stats.op_counts) {
    char line[64];
    std::snprintf(line, sizeof(line), "  %-20s %6lld\n", type.c_str(),
                  static_cast<long long>(count));
    out += line;
  }
  return out;
}

}  // namespace iosfarm::client
