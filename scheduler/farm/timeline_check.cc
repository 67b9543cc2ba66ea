#include "scheduler/farm/timeline_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/strings.h"

namespace iosfarm::scheduler::farm {
namespace {

std::string Describe(const PhaseRecord& r) {
  return StrCat("phase ", r.phase, " (job ", r.job, ", ", PhaseKindName(r.kind), ", ",
                r.resource.empty() ? std::string("no resource") : r.resource, ", [", r.start_s,
                ", ", r.end_s, "], ", PhaseOutcomeName(r.outcome), ")");
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Status CheckRecord(const PhaseRecord& r) {
  if (!std::isfinite(r.queued_s) || !std::isfinite(r.start_s) || !std::isfinite(r.end_s)) {
    return absl::InvalidArgumentError(StrCat(Describe(r), ": a time is not finite"));
  }
  if (r.start_s < r.queued_s) {
    return absl::InvalidArgumentError(
        StrCat(Describe(r), ": starts at ", r.start_s, " before it was queued at ", r.queued_s));
  }
  if (r.end_s < r.start_s) {
    return absl::InvalidArgumentError(StrCat(Describe(r), ": ends before it starts"));
  }
  if (PhaseOutcomeName(r.outcome) == "unknown") {
    return absl::InvalidArgumentError(StrCat(Describe(r), ": no valid outcome"));
  }
  if (PhaseKindName(r.kind) == "unknown") {
    return absl::InvalidArgumentError(StrCat(Describe(r), ": no valid kind"));
  }
  switch (ResourceClassOf(r.kind)) {
    case ResourceClass::kServerCpu:
      if (r.resource.rfind("server-cpu/", 0) != 0 || !r.worker.empty()) {
        return absl::InvalidArgumentError(
            StrCat(Describe(r), ": a server phase must run on a server-cpu/<i> slot"));
      }
      break;
    case ResourceClass::kWorkerCpu:
      if (r.worker.empty() || r.resource != WorkerCpuResource(r.worker)) {
        return absl::InvalidArgumentError(
            StrCat(Describe(r), ": a build must run on its worker's CPU (<worker>/cpu)"));
      }
      break;
    case ResourceClass::kWorkerGpu:
      if (r.worker.empty() ||
          (r.resource != WorkerDeviceResource(r.worker, MeasuringDevice::kGpu) &&
           r.resource != WorkerDeviceResource(r.worker, MeasuringDevice::kCpu))) {
        return absl::InvalidArgumentError(StrCat(
            Describe(r),
            ": a profile/measure phase must run on its worker's device (<worker>/gpu or "
            "<worker>/device)"));
      }
      break;
  }
  if ((EndsWith(r.resource, "/gpu") || EndsWith(r.resource, "/device")) &&
      ResourceClassOf(r.kind) != ResourceClass::kWorkerGpu) {
    return absl::InvalidArgumentError(
        StrCat(Describe(r), ": not a profile/measure phase on a measuring device"));
  }
  return absl::OkStatus();
}

// Sorted by (start, end, phase): zero-length phases at an instant come first.
std::vector<const PhaseRecord*> SortedByStart(std::vector<const PhaseRecord*> records) {
  std::sort(records.begin(), records.end(), [](const PhaseRecord* a, const PhaseRecord* b) {
    if (a->start_s != b->start_s) return a->start_s < b->start_s;
    if (a->end_s != b->end_s) return a->end_s < b->end_s;
    return a->phase < b->phase;
  });
  return records;
}

}  // namespace

// `list`'s phases run one at a time, each queued no earlier than the end of
// the previous one; `what` names the chain in messages.
Status CheckSerial(const std::string& what, const std::vector<const PhaseRecord*>& list) {
  const PhaseRecord* previous = nullptr;
  for (const PhaseRecord* r : SortedByStart(list)) {
    if (previous != nullptr && r->start_s < previous->end_s) {
      return absl::FailedPreconditionError(StrCat(
          what, " has two phases in flight at once: ", Describe(*previous), " and ", Describe(*r)));
    }
    if (previous != nullptr && r->queued_s < previous->end_s) {
      return absl::FailedPreconditionError(
          StrCat(what, ": ", Describe(*r), " was queued at ", r->queued_s,
                 " before its previous phase ended: ", Describe(*previous)));
    }
    previous = r;
  }
  return absl::OkStatus();
}

// The rules for a job with parallel batches (the header's last rule).
Status CheckParallelJob(JobId job, int max_batches, const std::vector<const PhaseRecord*>& list) {
  std::vector<const PhaseRecord*> server;
  std::map<int64_t, std::vector<const PhaseRecord*>> batches;
  std::vector<const PhaseRecord*> measures;
  double last_other_end = 0;
  // (time, +1 start / -1 end) of the job's worker phases.
  std::vector<std::pair<double, int>> changes;
  for (const PhaseRecord* r : list) {
    if (r->kind == PhaseKind::kMeasure) {
      measures.push_back(r);
      continue;
    }
    last_other_end = std::max(last_other_end, r->end_s);
    if (ResourceClassOf(r->kind) == ResourceClass::kServerCpu) server.push_back(r);
    if (r->kind != PhaseKind::kEnumerate) batches[r->batch].push_back(r);
    if (ResourceClassOf(r->kind) != ResourceClass::kServerCpu && r->start_s < r->end_s) {
      changes.emplace_back(r->start_s, +1);
      changes.emplace_back(r->end_s, -1);
    }
  }
  RETURN_IF_ERROR(CheckSerial(StrCat("job ", job, " (its server phases)"), server));
  for (const auto& [batch, phases] : batches) {
    RETURN_IF_ERROR(CheckSerial(StrCat("job ", job, " batch ", batch), phases));
  }
  RETURN_IF_ERROR(CheckSerial(StrCat("job ", job, " (its measures)"), measures));
  for (const PhaseRecord* m : measures) {
    if (m->queued_s < last_other_end) {
      return absl::FailedPreconditionError(
          StrCat("job ", job, ": ", Describe(*m), " was queued at ", m->queued_s,
                 " before its last batch ended at ", last_other_end));
    }
  }
  std::sort(changes.begin(), changes.end());  // ends (-1) before starts at one instant
  int in_flight = 0;
  for (const auto& [time, change] : changes) {
    in_flight += change;
    if (in_flight > max_batches) {
      return absl::FailedPreconditionError(StrCat("job ", job, " has ", in_flight,
                                                  " worker phases in flight at ", time,
                                                  ", more than its ", max_batches, " batches"));
    }
  }
  return absl::OkStatus();
}

Status CheckTimeline(const std::vector<PhaseRecord>& records,
                     const std::map<JobId, int>& parallel_batches) {
  std::unordered_set<PhaseId> ids;
  std::map<std::string, std::vector<const PhaseRecord*>> by_resource;
  std::map<JobId, std::vector<const PhaseRecord*>> by_job;
  for (const PhaseRecord& r : records) {
    RETURN_IF_ERROR(CheckRecord(r));
    if (!ids.insert(r.phase).second) {
      return absl::InvalidArgumentError(
          StrCat(Describe(r), ": phase id ", r.phase, " appears twice in the log"));
    }
    by_resource[r.resource].push_back(&r);
    by_job[r.job].push_back(&r);
  }
  for (auto& [resource, list] : by_resource) {
    const PhaseRecord* latest = nullptr;  // the earlier phase that ends last
    for (const PhaseRecord* r : SortedByStart(list)) {
      if (latest != nullptr && r->start_s < latest->end_s) {
        return absl::FailedPreconditionError(
            StrCat("resource ", resource, " runs two phases at overlapping times: ",
                   Describe(*latest), " and ", Describe(*r)));
      }
      if (latest == nullptr || r->end_s >= latest->end_s) latest = r;
    }
  }
  for (auto& [job, list] : by_job) {
    auto parallel = parallel_batches.find(job);
    if (parallel != parallel_batches.end() && parallel->second > 1) {
      RETURN_IF_ERROR(CheckParallelJob(job, parallel->second, list));
    } else {
      RETURN_IF_ERROR(CheckSerial(StrCat("job ", job), list));
    }
  }
  return absl::OkStatus();
}

Status CheckTimeline(const std::vector<PhaseRecord>& records,
                     const std::vector<Assignment>& started,
                     const std::map<JobId, int>& parallel_batches) {
  RETURN_IF_ERROR(CheckTimeline(records, parallel_batches));
  std::unordered_map<PhaseId, const PhaseRecord*> by_phase;
  for (const PhaseRecord& r : records) by_phase[r.phase] = &r;
  std::unordered_set<PhaseId> seen;
  for (const Assignment& a : started) {
    const std::string what = StrCat("phase ", a.phase, " (job ", a.job, ", ",
                                    PhaseKindName(a.kind), ", ", a.resource, ", started at ",
                                    a.start_s, ")");
    if (!seen.insert(a.phase).second) {
      return absl::FailedPreconditionError(StrCat(what, " was started twice"));
    }
    auto it = by_phase.find(a.phase);
    if (it == by_phase.end()) {
      return absl::FailedPreconditionError(
          StrCat(what, " has no outcome: it never finished, failed, was lost or cancelled"));
    }
    const PhaseRecord& r = *it->second;
    if (r.job != a.job || r.kind != a.kind || r.resource != a.resource ||
        r.start_s != a.start_s) {
      return absl::FailedPreconditionError(
          StrCat(what, " does not match its record ", Describe(r)));
    }
  }
  for (const PhaseRecord& r : records) {
    if (seen.count(r.phase) == 0) {
      return absl::FailedPreconditionError(StrCat(Describe(r), " has a record but never started"));
    }
  }
  return absl::OkStatus();
}

bool HasInterleaving(const std::vector<PhaseRecord>& records) {
  std::vector<const PhaseRecord*> list;
  list.reserve(records.size());
  for (const PhaseRecord& r : records) list.push_back(&r);
  list = SortedByStart(std::move(list));
  // The latest end among earlier records (top1), and the latest end among
  // earlier records of any other job than top1's (top2).
  bool have1 = false, have2 = false;
  double end1 = 0, end2 = 0;
  JobId job1 = 0;
  for (const PhaseRecord* r : list) {
    if (have1 && r->job != job1 && r->start_s < end1 && r->start_s < r->end_s) return true;
    if (have2 && r->job == job1 && r->start_s < end2 && r->start_s < r->end_s) return true;
    if (!have1 || r->end_s > end1) {
      if (have1 && job1 != r->job) {
        if (!have2 || end1 > end2) end2 = end1;
        have2 = true;
      }
      end1 = r->end_s;
      job1 = r->job;
      have1 = true;
    } else if (r->job != job1 && (!have2 || r->end_s > end2)) {
      end2 = r->end_s;
      have2 = true;
    }
  }
  return false;
}

}  // namespace iosfarm::scheduler::farm
