#include "client/tuned_model_assembly.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "tuned_model/held_model.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {
namespace {

// The batch a result's schedule was made for (model.batch of its JSON).
StatusOr<int64_t> ScheduleBatch(const v1::JobResult& result) {
  const nlohmann::json json = nlohmann::json::parse(result.schedule_json(), nullptr, false);
  if (json.is_object()) {
    if (auto model = json.find("model"); model != json.end() && model->is_object()) {
      if (auto batch = model->find("batch"); batch != model->end() && batch->is_number_integer()) {
        return batch->get<int64_t>();
      }
    }
  }
  return absl::InvalidArgumentError(
      StrCat("the schedule of job ", result.job_id(), " names no batch"));
}

}  // namespace

StatusOr<v1::TunedModel> AssembleTunedModel(const v1::SubmitJobRequest& request,
                                            const std::vector<v1::JobResult>& results,
                                            const std::string& tuned_on,
                                            const std::string& iosfarm_version,
                                            const std::string& file) {
  if (results.empty()) return absl::InvalidArgumentError("no tuning results to save");
  v1::TunedModel model;
  model.set_model_name(request.model_name());
  if (request.has_onnx()) {
    model.set_onnx(request.onnx());
  } else {
    model.set_zoo_name(request.zoo_name());
  }
  model.set_device_key(results.front().device_key());
  model.set_backend(results.front().backend());
  model.set_tuned_on(tuned_on);
  model.set_iosfarm_version(iosfarm_version);
  model.set_created_unix_s(std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
  std::vector<v1::TunedBatch> batches;
  for (const v1::JobResult& result : results) {
    if (result.device_key() != model.device_key()) {
      return absl::InvalidArgumentError(
          StrCat("job ", result.job_id(), " was tuned for device key ", result.device_key(),
                 ", job ", results.front().job_id(), " for ", model.device_key(),
                 ": one file holds schedules of one device key"));
    }
    v1::TunedBatch entry;
    ASSIGN_OR_RETURN(const int64_t batch, ScheduleBatch(result));
    entry.set_batch(batch);
    entry.set_schedule_json(result.schedule_json());
    entry.set_predicted_ms(result.predicted_ms());
    entry.set_tuning_s(result.search_s());
    for (const v1::ScheduleLatency& latency : result.measured()) {
      v1::MeasuredSchedule* measured = entry.add_measured();
      measured->set_schedule(latency.name());
      measured->set_median_ms(latency.median_ms());
      measured->set_p10_ms(latency.p10_ms());
      measured->set_p90_ms(latency.p90_ms());
      measured->set_runs(latency.repeats());
    }
    batches.push_back(std::move(entry));
  }
  std::sort(batches.begin(), batches.end(),
            [](const v1::TunedBatch& a, const v1::TunedBatch& b) { return a.batch() < b.batch(); });
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i].batch() == batches[i - 1].batch()) {
      return absl::InvalidArgumentError(StrCat("two schedules for batch ", batches[i].batch(),
                                               ": one file holds one schedule a batch"));
    }
  }
  for (v1::TunedBatch& entry : batches) *model.add_batches() = std::move(entry);
  // What the runtime will check when it opens the file, checked now.
  for (const v1::TunedBatch& entry : model.batches()) {
    ASSIGN_OR_RETURN(graph::Graph graph, tuned_model::LoadHeldModel(model, entry.batch()));
    RETURN_IF_ERROR(tuned_model::HeldSchedule(model, file, graph, entry.batch()).status());
  }
  return model;
}

StatusOr<v1::SubmitJobRequest> RequestFromTunedModelFile(const std::string& path,
                                                         std::vector<int64_t>* batches) {
  ASSIGN_OR_RETURN(v1::TunedModel model, tuned_model::ReadTunedModelFile(path));
  v1::SubmitJobRequest request;
  request.set_model_name(model.model_name());
  if (model.has_onnx()) {
    request.set_onnx(model.onnx());
  } else {
    request.set_zoo_name(model.zoo_name());
  }
  batches->clear();
  for (const v1::TunedBatch& entry : model.batches()) batches->push_back(entry.batch());
  return request;
}

}  // namespace iosfarm::client
