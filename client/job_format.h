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

// A measurement whose coefficient of variation is above this is too noisy to
// decide which schedule is faster.
inline constexpr double kNoisyCv = 0.5;

// The measured schedules of `result` whose cv is above kNoisyCv. They all
// took part in choosing the result's schedule (the IOS one unless a baseline
// ran faster end to end), so any of them makes the choice uncertain.
std::vector<std::string> NoisyMeasurements(const v1::JobResult& result);

// "warning: noisy measurement (cv > 0.5): ios cv 0.620; the median of this
// schedule is uncertain" for one schedule run alone (`iosfarm run`); empty when
// cv <= kNoisyCv.
std::string NoisyRunWarning(const std::string& name, double cv);

// True for a job state that will not change again.
bool IsFinal(v1::JobState state);

// "queued", "running", "succeeded", "failed", "cancelled" ("unspecified").
std::string JobStateName(v1::JobState state);

// Seconds for people: "850ms", "12.3s", "4m05s", "2h03m".
std::string FormatSeconds(double seconds);
// Milliseconds since the epoch as UTC "2024-05-01 12:34:56Z"; "-" for 0.
std::string FormatUnixMs(int64_t unix_ms);

nlohmann::json JobJson(const v1::Job& job);
// The schedule parsed when valid JSON; "noisy" lists NoisyMeasurements and
// "choice_uncertain" is true when it is not empty.
nlohmann::json JobResultJson(const v1::JobResult& result);
nlohmann::json WorkerJson(const v1::WorkerInfo& worker);
nlohmann::json PhaseJson(const v1::PhaseEntry& phase);

// The job's estimated stages to profile, and once it succeeded what it
// profiled and the estimate's ratio to that; "-" when not estimated.
std::string EstimateText(const v1::Job& job);
// One job as a key/value block (`iosfarm status`).
std::string JobText(const v1::Job& job);
// Jobs as a table, one row each (`iosfarm list`, `iosfarm retune`).
std::string JobsTable(const std::vector<v1::Job>& jobs);
// The result of a succeeded job (`iosfarm result`): latencies, speedups,
// predicted latency and search statistics, and a warning line when a
// measurement that decided the choice of schedule is noisy (cv > kNoisyCv).
std::string JobResultText(const v1::JobResult& result);
std::string WorkersTable(const std::vector<v1::WorkerInfo>& workers);
// Phases in time order; times are seconds after the first phase was queued.
std::string TimelineTable(const std::vector<v1::PhaseEntry>& phases);

// One line of progress for `iosfarm watch` (no newline): state, a bar of
// blocks done, elapsed time and ETA, phase, stages profiled, cache hits.
// `ticked_s` (>= 0) is added to the server's elapsed time and taken off its
// ETA: the time since the snapshot arrived, so a terminal line keeps ticking.
std::string JobProgressText(const v1::Job& job, double ticked_s = 0);

// Aligns `rows` (the first is the header) in columns separated by two spaces;
// one line per row.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_JOB_FORMAT_H_
