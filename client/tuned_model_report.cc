#include "client/tuned_model_report.h"

#include <cstdio>
#include <vector>

#include "client/job_format.h"
#include "common/strings.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {
namespace {

// What a batch's schedule JSON says of itself: its kind and stage count.
struct ScheduleSummary {
  std::string kind = "?";
  int64_t stages = 0;
};

ScheduleSummary Summarize(const v1::TunedBatch& entry) {
  ScheduleSummary summary;
  const nlohmann::json json = nlohmann::json::parse(entry.schedule_json(), nullptr, false);
  if (!json.is_object()) return summary;
  if (auto search = json.find("search"); search != json.end() && search->is_object()) {
    if (auto kind = search->find("kind"); kind != search->end() && kind->is_string()) {
      summary.kind = kind->get<std::string>();
    }
  }
  if (auto stages = json.find("num_stages"); stages != json.end() && stages->is_number()) {
    summary.stages = stages->get<int64_t>();
  }
  return summary;
}

std::string Ms(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4f", ms);
  return buffer;
}

// "ios 1.2345, sequential 1.5000" (medians, ms); "-" when none was measured.
std::string MeasuredText(const v1::TunedBatch& entry) {
  std::string text;
  for (const v1::MeasuredSchedule& m : entry.measured()) {
    text += StrCat(text.empty() ? "" : ", ", m.schedule(), " ", Ms(m.median_ms()));
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::string TunedModelText(const v1::TunedModel& model, const std::string& file) {
  const std::string source =
      model.has_onnx() ? StrCat("ONNX, ", model.onnx().size(), " bytes") : "built-in zoo model";
  std::string out = StrCat(
      "tuned model  ", file, "\n", "model        ", model.model_name(), " (", source, ")\n",
      "device key   ", model.device_key(), " (backend ", model.backend(), ")\n", "tuned on     ",
      model.tuned_on().empty() ? "-" : model.tuned_on(), "\n", "written by   iosfarm ",
      model.iosfarm_version(), ", ", FormatUnixMs(model.created_unix_s() * 1000), "\n");
  std::vector<std::vector<std::string>> rows = {
      {"batch", "schedule", "stages", "measured median ms (end to end)", "predicted ms", "tuning"}};
  for (const v1::TunedBatch& entry : model.batches()) {
    const ScheduleSummary summary = Summarize(entry);
    rows.push_back({std::to_string(entry.batch()), summary.kind, std::to_string(summary.stages),
                    MeasuredText(entry), Ms(entry.predicted_ms()),
                    FormatSeconds(entry.tuning_s())});
  }
  out += FormatTable(rows);
  out += "predicted: the sum of the schedule's stage latencies, not a measurement\n";
  return out;
}

nlohmann::json TunedModelJson(const v1::TunedModel& model, const std::string& file) {
  nlohmann::json batches = nlohmann::json::array();
  for (const v1::TunedBatch& entry : model.batches()) {
    const ScheduleSummary summary = Summarize(entry);
    nlohmann::json measured = nlohmann::json::object();
    for (const v1::MeasuredSchedule& m : entry.measured()) {
      measured[m.schedule()] = {{"median_ms", m.median_ms()},
                                {"p10_ms", m.p10_ms()},
                                {"p90_ms", m.p90_ms()},
                                {"runs", m.runs()}};
    }
    batches.push_back({{"batch", entry.batch()},
                       {"schedule", summary.kind},
                       {"stages", summary.stages},
                       {"measured", std::move(measured)},
                       {"predicted_ms", entry.predicted_ms()},
                       {"tuning_s", entry.tuning_s()}});
  }
  return {{"file", file},
          {"format_version", tuned_model::kTunedModelFormatVersion},
          {"model", model.model_name()},
          {"source", model.has_onnx() ? "onnx" : "zoo"},
          {"device_key", model.device_key()},
          {"backend", model.backend()},
          {"tuned_on", model.tuned_on()},
          {"iosfarm_version", model.iosfarm_version()},
          {"created", FormatUnixMs(model.created_unix_s() * 1000)},
          {"batches", std::move(batches)}};
}

}  // namespace iosfarm::client
