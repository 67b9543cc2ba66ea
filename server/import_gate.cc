#include "server/import_gate.h"

#include <algorithm>

namespace iosfarm::server {

ImportGate::ImportGate(int64_t capacity_bytes) : capacity_(std::max<int64_t>(1, capacity_bytes)) {}

ImportGate::Lease::~Lease() {
  if (gate_ != nullptr) gate_->Release(bytes_);
}

ImportGate::Lease ImportGate::Acquire(int64_t bytes) {
  bytes = std::max<int64_t>(0, bytes);
  absl::MutexLock lock(&mu_);
  auto fits = [this, bytes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return held_ == 0 || held_ + bytes <= capacity_;
  };
  mu_.Await(absl::Condition(&fits));
  held_ += bytes;
  return Lease(this, bytes);
}

int64_t ImportGate::held_bytes() {
  absl::MutexLock lock(&mu_);
  return held_;
}

void ImportGate::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  held_ -= bytes;
}

}  // namespace iosfarm::server
