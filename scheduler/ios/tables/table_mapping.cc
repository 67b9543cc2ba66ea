#include "scheduler/ios/tables/table_mapping.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace iosfarm::scheduler::ios {
namespace {

size_t RoundUp(size_t bytes) {
  return (bytes + kMappedTableBytes - 1) / kMappedTableBytes * kMappedTableBytes;
}

// Maps `size` bytes with `prot`, 2 MiB aligned (over-maps by 2 MiB and cuts
// the unaligned ends off); nullptr when the kernel refuses.
void* MapAligned(size_t size, int prot, int flags) {
  const size_t over = size + kMappedTableBytes;
  void* raw = mmap(nullptr, over, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kMappedTableBytes - 1) & ~uintptr_t{kMappedTableBytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + over;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  return reinterpret_cast<void*>(aligned);
}

// Whether address space may be reserved beyond what is used: not under a
// limit on it (ulimit -v), where reservations would eat into what the rest
// of the process may map.
bool MayReserve() {
  static const bool may = [] {
    rlimit limit{};
    return getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
  }();
  return may;
}

}  // namespace

TableMapping MapTable(size_t bytes) {
  const size_t size = RoundUp(bytes);
  TableMapping m;
  const size_t reserve = std::max(size, kTableReserveBytes);
  if (void* p = MayReserve() ? MapAligned(reserve, PROT_NONE, MAP_NORESERVE) : nullptr) {
    if (mprotect(p, size, PROT_READ | PROT_WRITE) == 0) {
      m = {p, size, reserve};
    } else {
      munmap(p, reserve);
    }
  }
  if (m.data == nullptr) {  // no reservation: exactly what was asked for
    void* p = MapAligned(size, PROT_READ | PROT_WRITE, 0);
    if (p == nullptr) throw std::bad_alloc();
    m = {p, size, size};
  }
#ifdef MADV_HUGEPAGE
  madvise(m.data, m.reserved, MADV_HUGEPAGE);
#endif
  return m;
}

bool GrowTable(TableMapping& m, size_t bytes) {
  const size_t size = RoundUp(bytes);
  if (size <= m.committed) return true;
  if (m.data == nullptr || size > m.reserved) return false;
  char* base = static_cast<char*>(m.data);
  if (mprotect(base + m.committed, size - m.committed, PROT_READ | PROT_WRITE) != 0) return false;
  m.committed = size;
  return true;
}

void UnmapTable(TableMapping& m) {
  if (m.data != nullptr) munmap(m.data, m.reserved);
  m = TableMapping();
}

}  // namespace iosfarm::scheduler::ios
