// Checks the scheduler's invariants on a log of phase records.
//
// Used by the farm tests, the simulation and the server's multi-process
// tests (on the real timeline). Records may come in any order.
#ifndef IOSFARM_SCHEDULER_FARM_TIMELINE_CHECK_H_
#define IOSFARM_SCHEDULER_FARM_TIMELINE_CHECK_H_

#include <map>
#include <vector>

#include "common/status.h"
#include "scheduler/farm/phase.h"

namespace iosfarm::scheduler::farm {

// OK if the log satisfies every invariant; otherwise FailedPrecondition (or
// InvalidArgument for a malformed record) naming the job, phase and resource:
//  - each record is well formed: phase id unique, finite times,
//    queued_s <= start_s <= end_s, a known outcome, a resource that matches
//    its kind ("server-cpu/<i>" for enumerate/update, "<worker>/cpu" for
//    build, "<worker>/gpu" or "<worker>/device" for profile/measure, worker
//    named for worker phases);
//  - no resource runs two phases at overlapping times (in particular no GPU
//    runs two profile/measure phases at once); touching ends are fine;
//  - a job's phases never overlap and run one at a time: each phase of a job
//    was queued no earlier than the end of the job's previous phase;
//  - except for the jobs `parallel_batches` names (job -> its P > 1): their
//    server phases (enumerate, update) run one at a time, each queued no
//    earlier than the end of the previous one; the phases of each of their
//    batches (PhaseRecord::batch: build, profile, update) likewise; the
//    measure is queued after every other phase of the job ended; and at no
//    time do more than P of their batches have a worker phase in flight.
Status CheckTimeline(const std::vector<PhaseRecord>& records,
                     const std::map<JobId, int>& parallel_batches = {});

// As above, and every started phase (each assignment) has exactly one record
// with the same job, kind, resource and start time: every phase started
// finished, failed visibly, was lost with its worker, or was cancelled.
Status CheckTimeline(const std::vector<PhaseRecord>& records,
                     const std::vector<Assignment>& started,
                     const std::map<JobId, int>& parallel_batches = {});

// True if two different jobs had phases in flight at the same time (open
// intervals overlap).
bool HasInterleaving(const std::vector<PhaseRecord>& records);

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_TIMELINE_CHECK_H_
