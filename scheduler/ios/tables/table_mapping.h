// TableMapping: memory for hash tables far larger than the caches (the
// DP's ending table: 0.5-1 GiB for a NASNet-A cell), mapped on transparent
// huge pages inside a reservation of address space, so that a table that
// doubles grows in place.
//
// Why: a table that doubles into a fresh buffer asks for about twice its
// final size in fresh pages and, while it copies, holds the old buffer
// beside the new one. A fresh page costs a fault and the kernel's zeroing
// (a tenth of a NASNet-A search's CPU, docs/search-design.md). Growing in place
// faults in only the new half, and the peak is the final table.
//
// The reservation is address space only (PROT_NONE, no memory, not
// counted against overcommit); pages become readable and writable as the
// table commits them. Under a limit on address space (ulimit -v), or where
// the kernel refuses the reservation, the mapping is exactly the size asked
// for and a table that grows copies itself into a new one.
#ifndef IOSFARM_SCHEDULER_IOS_TABLES_TABLE_MAPPING_H_
#define IOSFARM_SCHEDULER_IOS_TABLES_TABLE_MAPPING_H_

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace iosfarm::scheduler::ios {

// Tables this large and above are mapped (smaller ones live on the heap).
inline constexpr size_t kMappedTableBytes = size_t{2} << 20;

// Address space reserved per mapping: tables grow in place up to this.
inline constexpr size_t kTableReserveBytes = size_t{64} << 30;

struct TableMapping {
  void* data = nullptr;
  size_t committed = 0;  // readable, writable and zero when mapped
  size_t reserved = 0;
};

// A mapping of `bytes` (rounded up to 2 MiB) of zeroed memory, 2 MiB
// aligned. Throws std::bad_alloc when the kernel refuses it.
TableMapping MapTable(size_t bytes);

// Commits `m` up to `bytes` (the new part zero) without moving it; false
// (and `m` unchanged) when that is past its reservation or the kernel
// refuses.
bool GrowTable(TableMapping& m, size_t bytes);

// Unmaps `m` (a default TableMapping: nothing).
void UnmapTable(TableMapping& m);

// Arrays this large and above are mapped (MappedArray): a quarter of a huge
// page, so that an array of a few hundred KiB read at random (a 39-op
// cell's rows of costs for one block: 1.2 MB) is on one or two huge pages.
inline constexpr size_t kMappedArrayBytes = size_t{512} << 10;

// A fixed array of `size` zeroed T (trivially copyable), in a TableMapping
// (on huge pages) from kMappedArrayBytes on, else on the heap: for the
// DP's large arrays read at random (the cost-to-go DP's rows of costs, its
// states' drops), where 4 KiB pages cost a TLB miss per read, prefetched
// or not.
template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  explicit MappedArray(size_t size) : size_(size) {
    const size_t bytes = size * sizeof(T);
    if (bytes >= kMappedArrayBytes) {
      mapping_ = MapTable(bytes);
      data_ = static_cast<T*>(mapping_.data);
    } else if (size > 0) {
      data_ = static_cast<T*>(std::calloc(size, sizeof(T)));
      if (data_ == nullptr) throw std::bad_alloc();
    }
  }
  ~MappedArray() {
    if (mapping_.data != nullptr) {
      UnmapTable(mapping_);
    } else {
      std::free(data_);
    }
  }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;

  size_t size() const { return size_; }
  // Bytes held.
  size_t memory_bytes() const {
    return mapping_.data != nullptr ? mapping_.committed : size_ * sizeof(T);
  }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  size_t size_;
  T* data_ = nullptr;
  TableMapping mapping_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_TABLES_TABLE_MAPPING_H_
