// Placement of the activation buffers of an ExecutionPlan in one arena.
//
// Buffers whose stage intervals [first_stage, last_stage] overlap never share
// a byte; others may (memory reuse across stages). Within a stage nothing is
// reused, so concurrent groups never race on memory.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_MEMORY_PLAN_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_MEMORY_PLAN_H_

#include <cstdint>
#include <vector>

#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

// Sets every buffer's byte_offset (a multiple of kArenaAlignment) by
// first-fit in decreasing size order, and returns the arena size in bytes
// (a multiple of kArenaAlignment; 0 for no buffers). Pure.
int64_t AssignArenaOffsets(std::vector<BufferSpec>& buffers);

// True when the stage intervals of `a` and `b` overlap.
bool LifetimesOverlap(const BufferSpec& a, const BufferSpec& b);

// Bytes a buffer of `elements` fp32 values occupies (rounded up to the
// alignment; at least one alignment unit).
int64_t AlignedBytes(int64_t elements);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_MEMORY_PLAN_H_
