// The tuned model file (".iosfarm", docs/tuned-model-format.md): one model,
// one IOS schedule per batch size, the device key and versions they were
// tuned with, and their measured latencies, in one file a user ships as
// TensorRT users ship an engine. `iosfarm tune --batch 1,8 --save FILE`
// writes it; the runtime's Session opens it and picks the schedule by the
// input's batch.
//
// Layout: a 12-byte magic ("\x89IOSFARM\r\n\x1a\n"), the format version
// (uint32, little-endian), the payload's length (uint64, little-endian),
// the payload (a serialized iosfarm.v1.TunedModel,
// proto/iosfarm/v1/tuned_model.proto), then the SHA-256 of everything
// before it as 64 lower-case hex digits. A reader refuses, naming the file
// and the reason, anything else: another magic, a version it does not know,
// a truncated or extended file, a changed byte, a payload that does not
// parse or breaks the contract below.
//
// Contract of a decoded TunedModel: a model name; ONNX bytes or a zoo name;
// a device key; at least one batch, ascending, each positive and once, each
// with schedule JSON of format "iosfarm.schedule" whose model.batch is that
// batch. Whether a schedule fits the model's graph is checked by whoever
// opens the graph (scheduler/ios/schedule_json.h).
#ifndef IOSFARM_TUNED_MODEL_TUNED_MODEL_FILE_H_
#define IOSFARM_TUNED_MODEL_TUNED_MODEL_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "iosfarm/v1/tuned_model.pb.h"

namespace iosfarm::tuned_model {

inline constexpr uint32_t kTunedModelFormatVersion = 1;
inline constexpr std::string_view kTunedModelMagic("\x89IOSFARM\r\n\x1a\n", 12);

// Whether `head` (a file's first bytes, at least the magic's length) starts
// with the magic.
bool HasTunedModelMagic(std::string_view head);

// Whether `path` is a readable file that starts with the magic.
bool IsTunedModelFile(const std::string& path);

// The file's bytes for `model` (framed as above). InvalidArgument when
// `model` breaks the contract.
StatusOr<std::string> EncodeTunedModel(const v1::TunedModel& model);

// Decodes the bytes of a file named `name` (in messages). InvalidArgument
// "tuned model file '<name>': <reason>" for anything but a well-formed file
// of a known version; FailedPrecondition for a newer format version.
StatusOr<v1::TunedModel> DecodeTunedModel(std::string_view bytes, std::string_view name);

// Reads and decodes `path`; NotFound when it cannot be read.
StatusOr<v1::TunedModel> ReadTunedModelFile(const std::string& path);

// Encodes `model` and writes it to `path` atomically (a temporary file
// renamed over it); Unavailable naming the path when it cannot.
Status WriteTunedModelFile(const std::string& path, const v1::TunedModel& model);

// "1, 8, 32": the batches of `model`.
std::string ListBatches(const v1::TunedModel& model);

// "1,4,8": the batches of `model` and `batch`, ascending, as `iosfarm tune
// --batch` takes them.
std::string BatchesWith(const v1::TunedModel& model, int64_t batch);

// The entry for `batch`, or nullptr.
const v1::TunedBatch* FindBatch(const v1::TunedModel& model, int64_t batch);

// Whether a file written by iosfarm `written_by` may be run by iosfarm
// `reader`: the same major version and, before 1.0, the same minor one
// (schedules carry stage signatures and merge descriptions that a minor
// release may change while 0.x).
bool CompatibleVersions(std::string_view written_by, std::string_view reader);

// Whether schedules tuned under device key `tuned` suit a session whose key
// is `running`: the same key, or the same GPU with and without the
// "-graph-stages" suffix (stages timed eagerly or as CUDA graphs on one GPU).
bool CompatibleDeviceKeys(std::string_view tuned, std::string_view running);

}  // namespace iosfarm::tuned_model

#endif  // IOSFARM_TUNED_MODEL_TUNED_MODEL_FILE_H_
