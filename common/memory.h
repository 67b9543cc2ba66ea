// The process's memory as the system sees it.
#ifndef IOSFARM_COMMON_MEMORY_H_
#define IOSFARM_COMMON_MEMORY_H_

#include <cstdint>

namespace iosfarm {

// Resident set size of this process in bytes (from /proc/self/statm); 0
// where that cannot be read.
int64_t ResidentBytes();

// Hands the allocator's free pages back to the system. glibc keeps what a
// thread freed in that thread's arena for reuse, so after a search pass has
// freed hundreds of MiB of small blocks the resident size would otherwise
// stay at its peak. Costs a walk of the free lists (milliseconds); call it
// after large frees, not in a loop. A no-op without glibc.
void ReturnFreeMemory();

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_MEMORY_H_
