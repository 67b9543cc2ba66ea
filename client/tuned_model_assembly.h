// What `iosfarm tune --save FILE` writes: the tuned model file
// (tuned_model/tuned_model_file.h) assembled from the model the jobs tuned
// and their results, each schedule checked against the model's graph at its
// batch first, so that a file `tune` writes is one the runtime opens.
#ifndef IOSFARM_CLIENT_TUNED_MODEL_ASSEMBLY_H_
#define IOSFARM_CLIENT_TUNED_MODEL_ASSEMBLY_H_

#include <string>
#include <vector>

#include "client/farm_client.h"
#include "common/status.h"
#include "iosfarm/v1/tuned_model.pb.h"

namespace iosfarm::client {

// The model of `request` (ONNX bytes or zoo name) with one entry per result
// (ascending batch; each batch is the one its schedule names), the device key
// and backend of the results, `tuned_on` (the measuring device's
// description) and `iosfarm_version`, to be written to `file` (named in
// messages). InvalidArgument when the results disagree on the device key or
// repeat a batch; the errors of tuned_model::HeldSchedule when a schedule
// does not fit the model at its batch.
StatusOr<v1::TunedModel> AssembleTunedModel(const v1::SubmitJobRequest& request,
                                            const std::vector<v1::JobResult>& results,
                                            const std::string& tuned_on,
                                            const std::string& iosfarm_version,
                                            const std::string& file);

// MODEL as `iosfarm tune` and `submit` take it, when it is a tuned model
// file: its model as a request (ONNX bytes or zoo name, model name), and its
// batches in `batches`. Errors: those of reading the file.
StatusOr<v1::SubmitJobRequest> RequestFromTunedModelFile(const std::string& path,
                                                         std::vector<int64_t>* batches);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_TUNED_MODEL_ASSEMBLY_H_
