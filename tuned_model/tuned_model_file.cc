#include "tuned_model/tuned_model_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/strings.h"
#include "common/text.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::tuned_model {
namespace {

constexpr size_t kHeaderBytes = kTunedModelMagic.size() + 4 + 8;
constexpr size_t kDigestBytes = 64;
constexpr std::string_view kGraphStagesSuffix = "-graph-stages";

void PutLittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(std::string_view in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return value;
}

// The contract of the header comment: InvalidArgument saying what breaks it.
Status CheckContract(const v1::TunedModel& model) {
  if (model.model_name().empty()) return absl::InvalidArgumentError("it names no model");
  if (model.model_case() == v1::TunedModel::MODEL_NOT_SET) {
    return absl::InvalidArgumentError("it holds neither ONNX bytes nor a zoo model name");
  }
  if (model.device_key().empty()) return absl::InvalidArgumentError("it names no device key");
  if (model.batches().empty()) return absl::InvalidArgumentError("it holds no schedule");
  int64_t previous = 0;
  for (const v1::TunedBatch& entry : model.batches()) {
    if (entry.batch() <= previous) {
      return absl::InvalidArgumentError(
          entry.batch() <= 0 ? StrCat("batch ", entry.batch(), " is not positive")
                             : StrCat("batches are not ascending and distinct (", entry.batch(),
                                      " after ", previous, ")"));
    }
    previous = entry.batch();
    const nlohmann::json schedule = nlohmann::json::parse(entry.schedule_json(), nullptr, false);
    const auto format = schedule.is_object() ? schedule.find("format") : schedule.end();
    if (!schedule.is_object() || format == schedule.end() || !format->is_string() ||
        format->get<std::string>() != scheduler::ios::kScheduleFormatName) {
      return absl::InvalidArgumentError(
          StrCat("the schedule of batch ", entry.batch(), " is not an iosfarm.schedule document"));
    }
    const nlohmann::json* schedule_batch = nullptr;
    if (auto it = schedule.find("model"); it != schedule.end() && it->is_object()) {
      if (auto b = it->find("batch"); b != it->end() && b->is_number_integer()) {
        schedule_batch = &*b;
      }
    }
    if (schedule_batch == nullptr || schedule_batch->get<int64_t>() != entry.batch()) {
      return absl::InvalidArgumentError(
          StrCat("the schedule filed under batch ", entry.batch(), " is for batch ",
                 schedule_batch == nullptr ? std::string("(none)")
                                           : std::to_string(schedule_batch->get<int64_t>())));
    }
  }
  return absl::OkStatus();
}

// "0.1.0" -> {0, 1}; nullopt for anything not starting "MAJOR.MINOR".
std::optional<std::pair<int, int>> MajorMinor(std::string_view version) {
  int major = 0;
  int minor = 0;
  const char* end = version.data() + version.size();
  auto [after_major, e1] = std::from_chars(version.data(), end, major);
  if (e1 != std::errc() || after_major == end || *after_major != '.') return std::nullopt;
  auto [after_minor, e2] = std::from_chars(after_major + 1, end, minor);
  if (e2 != std::errc()) return std::nullopt;
  return std::pair{major, minor};
}

std::string_view WithoutGraphStages(std::string_view key) {
  if (key.ends_with(kGraphStagesSuffix)) key.remove_suffix(kGraphStagesSuffix.size());
  return key;
}

}  // namespace

bool HasTunedModelMagic(std::string_view head) { return head.starts_with(kTunedModelMagic); }

bool IsTunedModelFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string head(kTunedModelMagic.size(), '\0');
  if (!file.read(head.data(), static_cast<std::streamsize>(head.size()))) return false;
  return HasTunedModelMagic(head);
}

StatusOr<std::string> EncodeTunedModel(const v1::TunedModel& model) {
  if (Status contract = CheckContract(model); !contract.ok()) {
    return absl::InvalidArgumentError(
        StrCat("cannot write a tuned model file of ", Printable(model.model_name()), ": ",
               contract.message()));
  }
  std::string payload;
  if (!model.SerializeToString(&payload)) {
    return absl::InvalidArgumentError(
        StrCat("cannot serialize the tuned model of ", Printable(model.model_name()),
               " (over protobuf's 2 GiB)"));
  }
  std::string bytes(kTunedModelMagic);
  PutLittleEndian(bytes, kTunedModelFormatVersion, 4);
  PutLittleEndian(bytes, payload.size(), 8);
  bytes += payload;
  bytes += scheduler::ios::Sha256Hex(bytes);
  return bytes;
}

StatusOr<v1::TunedModel> DecodeTunedModel(std::string_view bytes, std::string_view name) {
  auto refuse = [&](const std::string& reason) {
    return absl::InvalidArgumentError(
        StrCat("tuned model file '", Printable(name), "': ", reason));
  };
  if (!HasTunedModelMagic(bytes)) {
    return refuse("not a tuned model file (it does not start with the \\x89IOSFARM magic; "
                  "`iosfarm tune MODEL --save FILE` writes one)");
  }
  if (bytes.size() < kHeaderBytes) return refuse(StrCat("truncated: ", bytes.size(), " bytes"));
  const uint32_t version =
      static_cast<uint32_t>(GetLittleEndian(bytes.substr(kTunedModelMagic.size()), 4));
  if (version != kTunedModelFormatVersion) {
    const std::string message =
        StrCat("format version ", version, "; this iosfarm reads version ",
               kTunedModelFormatVersion,
               version > kTunedModelFormatVersion ? " (a newer iosfarm wrote it: upgrade)" : "");
    if (version > kTunedModelFormatVersion) {
      return absl::FailedPreconditionError(
          StrCat("tuned model file '", Printable(name), "': ", message));
    }
    return refuse(message);
  }
  const uint64_t payload_bytes = GetLittleEndian(bytes.substr(kTunedModelMagic.size() + 4), 8);
  const uint64_t available = bytes.size() - kHeaderBytes;
  if (payload_bytes > available || available - payload_bytes != kDigestBytes) {
    return refuse(StrCat(payload_bytes > available || available - payload_bytes < kDigestBytes
                             ? "truncated"
                             : "bytes after its end",
                         ": its header announces ", payload_bytes, " bytes of model and ",
                         kDigestBytes, " of checksum after ", kHeaderBytes,
                         " of header, the file has ", bytes.size()));
  }
  const size_t checked = kHeaderBytes + payload_bytes;
  if (scheduler::ios::Sha256Hex(bytes.substr(0, checked)) != bytes.substr(checked)) {
    return refuse(
        "its SHA-256 checksum does not match its contents: the file was changed or damaged "
        "after iosfarm wrote it; tune again with `iosfarm tune MODEL --save FILE`");
  }
  v1::TunedModel model;
  if (!model.ParseFromArray(bytes.data() + kHeaderBytes, static_cast<int>(payload_bytes))) {
    return refuse("its payload is not a TunedModel message");
  }
  if (Status contract = CheckContract(model); !contract.ok()) {
    return refuse(std::string(contract.message()));
  }
  return model;
}

StatusOr<v1::TunedModel> ReadTunedModelFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(StrCat("cannot read tuned model file '", path, "'"));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::NotFoundError(StrCat("cannot read tuned model file '", path, "'"));
  return DecodeTunedModel(bytes, path);
}

Status WriteTunedModelFile(const std::string& path, const v1::TunedModel& model) {
  ASSIGN_OR_RETURN(std::string bytes, EncodeTunedModel(model));
  return WriteFileAtomically(path, bytes, "tuned model file");
}

std::string ListBatches(const v1::TunedModel& model) {
  std::string text;
  for (const v1::TunedBatch& entry : model.batches()) {
    if (!text.empty()) text += ", ";
    text += std::to_string(entry.batch());
  }
  return text;
}

std::string BatchesWith(const v1::TunedModel& model, int64_t batch) {
  std::vector<int64_t> batches = {batch};
  for (const v1::TunedBatch& entry : model.batches()) {
    if (entry.batch() != batch) batches.push_back(entry.batch());
  }
  std::sort(batches.begin(), batches.end());
  std::string text;
  for (int64_t b : batches) text += StrCat(text.empty() ? "" : ",", b);
  return text;
}

const v1::TunedBatch* FindBatch(const v1::TunedModel& model, int64_t batch) {
  for (const v1::TunedBatch& entry : model.batches()) {
    if (entry.batch() == batch) return &entry;
  }
  return nullptr;
}

bool CompatibleVersions(std::string_view written_by, std::string_view reader) {
  if (written_by == reader) return true;
  const auto a = MajorMinor(written_by);
  const auto b = MajorMinor(reader);
  if (!a || !b || a->first != b->first) return false;
  return a->first > 0 || a->second == b->second;
}

bool CompatibleDeviceKeys(std::string_view tuned, std::string_view running) {
  return WithoutGraphStages(tuned) == WithoutGraphStages(running);
}

}  // namespace iosfarm::tuned_model
