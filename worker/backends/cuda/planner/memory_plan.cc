#include "worker/backends/cuda/planner/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace iosfarm::worker::cuda {

int64_t AlignedBytes(int64_t elements) {
  const int64_t bytes = std::max<int64_t>(elements, 1) * static_cast<int64_t>(sizeof(float));
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool LifetimesOverlap(const BufferSpec& a, const BufferSpec& b) {
  return a.first_stage <= b.last_stage && b.first_stage <= a.last_stage;
}

int64_t AssignArenaOffsets(std::vector<BufferSpec>& buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].elements > buffers[b].elements;
  });
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t index : order) {
    BufferSpec& buffer = buffers[index];
    const int64_t size = AlignedBytes(buffer.elements);
    // The byte ranges of placed buffers alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t other : placed) {
      if (LifetimesOverlap(buffer, buffers[other])) {
        busy.emplace_back(buffers[other].byte_offset,
                          buffers[other].byte_offset + AlignedBytes(buffers[other].elements));
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin - offset >= size) break;  // fits in the gap before this range
      offset = std::max(offset, end);
    }
    buffer.byte_offset = offset;
    arena = std::max(arena, offset + size);
    placed.push_back(index);
  }
  return arena;
}

}  // namespace iosfarm::worker::cuda
