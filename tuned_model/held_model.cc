#include "tuned_model/held_model.h"

#include "common/strings.h"
#include "graph/model_loader.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::tuned_model {

StatusOr<graph::Graph> LoadHeldModel(const v1::TunedModel& model, int64_t batch) {
  graph::onnx_import::OnnxImportOptions import;
  import.batch = batch;
  if (model.has_onnx()) {
    return graph::LoadModelData(graph::kOnnxSource, model.model_name(), model.onnx(), import);
  }
  return graph::LoadModelData(graph::kZooSource, model.zoo_name(), "", import);
}

StatusOr<scheduler::ios::ParsedSchedule> HeldSchedule(const v1::TunedModel& model,
                                                      std::string_view file,
                                                      const graph::Graph& graph, int64_t batch) {
  const v1::TunedBatch* entry = FindBatch(model, batch);
  if (entry == nullptr) {
    return absl::NotFoundError(
        StrCat("tuned model file '", file, "' holds batch", model.batches_size() == 1 ? " " : "es ",
               ListBatches(model), "; none for batch ", batch, " (`iosfarm tune ", file,
               " --batch ", BatchesWith(model, batch), " --save FILE` tunes it too)"));
  }
  StatusOr<scheduler::ios::ParsedSchedule> parsed =
      scheduler::ios::ParseScheduleJson(entry->schedule_json(), graph);
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(
        StrCat("tuned model file '", file, "': the schedule of batch ", batch, " does not fit ",
               model.model_name(), ": ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace iosfarm::tuned_model
