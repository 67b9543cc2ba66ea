// The report printed by `iosfarm inspect`, as text or as JSON.
//
// The JSON form is a stable interface documented in docs/cli.md; bump
// kInspectFormatVersion on incompatible changes.
#ifndef IOSFARM_CLIENT_INSPECT_REPORT_H_
#define IOSFARM_CLIENT_INSPECT_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "graph/model_loader.h"
#include "graph/stats.h"

namespace iosfarm::client {

inline constexpr int kInspectFormatVersion = 1;

nlohmann::json InspectJson(const graph::LoadedModel& model, const graph::GraphStats& stats);
std::string InspectText(const graph::LoadedModel& model, const graph::GraphStats& stats);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_INSPECT_REPORT_H_
