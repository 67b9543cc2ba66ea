#include "worker/backends/sim/device_model.h"

#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace iosfarm::worker::sim {
namespace {

SimDeviceModel Preset(std::string_view name, int sms, double gflops, double gbps,
                      double launch_us, double sync_us) {
  SimDeviceModel m;
  m.name = std::string(name);
  m.sm_count = sms;
  m.peak_gflops = gflops;
  m.bandwidth_gbps = gbps;
  m.kernel_launch_us = launch_us;
  m.stage_sync_us = sync_us;
  return m;
}

// Nominal fp32 (non-tensor-core) figures of the SXM/PCIe parts.
std::vector<SimDeviceModel> MakePresets() {
  std::vector<SimDeviceModel> presets = {
      Preset("v100", 80, 15700, 900, 4.0, 3.0),
      Preset("a100", 108, 19500, 1555, 3.5, 3.0),
      Preset("h100", 132, 67000, 3350, 3.0, 2.5),
      Preset("h200", 132, 67000, 4800, 3.0, 2.5),
      Preset("t4", 40, 8100, 320, 4.0, 3.0),
      // A 4-core AVX2 machine: each core is an "SM"; a core needs fewer work
      // items to be busy, and thread hand-off costs more than a kernel launch.
      Preset("cpu-small", 4, 200, 25, 2.0, 10.0),
  };
  presets.back().items_per_sm = 256;
  presets.back().efficiency = 0.5;
  return presets;
}

const std::vector<SimDeviceModel>& Presets() {
  static const auto* presets = new std::vector<SimDeviceModel>(MakePresets());
  return *presets;
}

bool PositiveFinite(double x) { return x > 0 && std::isfinite(x); }
bool NonNegativeFinite(double x) { return x >= 0 && std::isfinite(x); }

std::string Trimmed(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", x);
  return buffer;
}

}  // namespace

std::vector<std::string_view> SimDevicePresetNames() {
  std::vector<std::string_view> names;
  for (const SimDeviceModel& m : Presets()) names.push_back(m.name);
  return names;
}

StatusOr<SimDeviceModel> SimDevicePreset(std::string_view name) {
  std::string valid;
  for (const SimDeviceModel& m : Presets()) {
    if (m.name == name) return m;
    valid += valid.empty() ? m.name : StrCat(", ", m.name);
  }
  return absl::NotFoundError(
      StrCat("unknown sim device preset \"", name, "\" (valid: ", valid, ")"));
}

Status ValidateSimDeviceModel(const SimDeviceModel& m) {
  auto bad = [&](std::string_view field, double value, std::string_view rule) {
    return absl::InvalidArgumentError(
        StrCat("sim device model \"", m.name, "\": ", field, " = ", value, " must be ", rule));
  };
  if (m.sm_count < 1) return bad("sm_count", m.sm_count, ">= 1");
  if (!PositiveFinite(m.peak_gflops)) return bad("peak_gflops", m.peak_gflops, "> 0");
  if (!PositiveFinite(m.bandwidth_gbps)) return bad("bandwidth_gbps", m.bandwidth_gbps, "> 0");
  if (!(m.efficiency > 0 && m.efficiency <= 1)) return bad("efficiency", m.efficiency, "in (0, 1]");
  if (!PositiveFinite(m.items_per_sm)) return bad("items_per_sm", m.items_per_sm, "> 0");
  if (!PositiveFinite(m.reads_per_item)) return bad("reads_per_item", m.reads_per_item, "> 0");
  if (!NonNegativeFinite(m.kernel_launch_us)) {
    return bad("kernel_launch_us", m.kernel_launch_us, ">= 0");
  }
  if (!NonNegativeFinite(m.stage_sync_us)) return bad("stage_sync_us", m.stage_sync_us, ">= 0");
  return absl::OkStatus();
}

std::string DescribeSimDevice(const SimDeviceModel& m) {
  const bool tera = m.peak_gflops >= 1000;
  return StrCat("sim ", m.name, " (", m.sm_count, " SMs, ",
                Trimmed(tera ? m.peak_gflops / 1000 : m.peak_gflops),
                tera ? " TFLOP/s" : " GFLOP/s", " fp32, ", Trimmed(m.bandwidth_gbps), " GB/s, ",
                m.back_to_back ? "timed back to back, " : "", "simulated)");
}

}  // namespace iosfarm::worker::sim
