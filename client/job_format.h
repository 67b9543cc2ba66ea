// How the remote commands print farm objects: text for people (tables and
// key/value blocks) and JSON for machines (`--format json`).
//
// JSON uses the proto field names (snake_case), plain JSON numbers for 64-bit
// integers, job states as lower-case words ("queued", "running", ...), and
// null for an unknown ETA. Every top-level document the CLI prints carries
// "format_version": 1; fields are only ever added within a version.
// Pure functions; thread-safe.
#ifndef IOSFARM_CLIENT_JOB_FORMAT_H_
#define IOSFARM_CLIENT_JOB_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "iosfarm/v1/farm.pb.h"

namespace iosfarm::client {

inline constexpr int kRemoteFormatVersion = 1;

// True for a job state that will not change again.
bool IsFinal(v1::JobState state);

// "queued", "running", "succeeded", "failed", "cancelled" ("unspecified").
std::string JobStateName(v1::JobState state);

// Seconds for people: "850ms", "12.3s", "4m05s", "2h03m".
std::string FormatSeconds(double seconds);
// Milliseconds since the epoch as UTC "2024-05-01 12:34:56Z"; "-" for 0.
std::string FormatUnixMs(int64_t unix_ms);

nlohmann::json JobJson(const v1::Job& job);
nlohmann::json JobResultJson(const v1::JobResult& result);  // schedule parsed when valid JSON
nlohmann::json WorkerJson(const v1::WorkerInfo& worker);
nlohmann::json PhaseJson(const v1::PhaseEntry& phase);

// One job as a key/value block (`iosfarm status`).
std::string JobText(const v1::Job& job);
// Jobs as a table, one row each (`iosfarm list`, `iosfarm retune`).
std::string JobsTable(const std::vector<v1::Job>& jobs);
// The result of a succeeded job (`iosfarm result`): latencies, speedups,
// predicted latency and search statistics.
std::string JobResultText(const v1::JobResult& result);
std::string WorkersTable(const std::vector<v1::WorkerInfo>& workers);
// Phases in time order; times are seconds after the first phase was queued.
std::string TimelineTable(const std::vector<v1::PhaseEntry>& phases);

// One line of progress for `iosfarm watch` (no newline): state, a bar of
// blocks done, phase, stages profiled, cache hits, elapsed time and ETA.
std::string ProgressLine(const v1::Job& job);

// Aligns `rows` (the first is the header) in columns separated by two spaces;
// one line per row.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_JOB_FORMAT_H_
