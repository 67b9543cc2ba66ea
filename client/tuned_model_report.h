// What `iosfarm inspect model.iosfarm` prints about a tuned model file: the
// model, the device key and device it was tuned on, the iosfarm version that
// wrote it, and per batch its schedule, the whole schedules as measured end
// to end on that device, and the schedule's predicted latency (the sum of
// its stage latencies, labelled as predicted).
#ifndef IOSFARM_CLIENT_TUNED_MODEL_REPORT_H_
#define IOSFARM_CLIENT_TUNED_MODEL_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "iosfarm/v1/tuned_model.pb.h"

namespace iosfarm::client {

std::string TunedModelText(const v1::TunedModel& model, const std::string& file);
nlohmann::json TunedModelJson(const v1::TunedModel& model, const std::string& file);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_TUNED_MODEL_REPORT_H_
