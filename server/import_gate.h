// ImportGate: bounds the memory of ONNX imports in flight. Importing a model
// costs several times its file size for a moment (the request, the parsed
// ModelProto, the graph with its weights, the serialized graph hashed for
// the digest: about 5.5x, docs/farm.md "Server memory"), so the server lets
// imports run at once only while their model bytes add up to at most the
// gate's capacity (the largest accepted model: one maximal import, or
// several small ones). Others wait their turn.
//
// Thread-safe.
#ifndef IOSFARM_SERVER_IMPORT_GATE_H_
#define IOSFARM_SERVER_IMPORT_GATE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace iosfarm::server {

class ImportGate {
 public:
  // capacity_bytes >= 1.
  explicit ImportGate(int64_t capacity_bytes);

  // Holds `bytes` of the gate until destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : gate_(other.gate_), bytes_(other.bytes_) {
      other.gate_ = nullptr;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();

   private:
    friend class ImportGate;
    Lease(ImportGate* gate, int64_t bytes) : gate_(gate), bytes_(bytes) {}
    ImportGate* gate_;
    int64_t bytes_;
  };

  // Waits until `bytes` fit beside the imports in flight; a request larger
  // than the capacity waits until no other import is in flight.
  Lease Acquire(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  int64_t held_bytes() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Release(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  const int64_t capacity_;
  absl::Mutex mu_;
  int64_t held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_IMPORT_GATE_H_
