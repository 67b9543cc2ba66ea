// Stable 64-bit hashing for signatures and digests.
//
// Unlike std::hash and absl::Hash (which may change between builds and are
// seeded per process), these functions give the same value on every platform,
// run and build: signatures computed with them are stored in latency
// databases. Changing any of them changes every signature: bump
// kSignatureVersion (signature.h) when you do.
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_STABLE_HASH_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_STABLE_HASH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"

namespace iosfarm::scheduler::ios {

// The splitmix64 finalizer: a bijective mix of 64 bits.
inline constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Order-dependent combination of a running hash with one more value.
inline constexpr uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return Mix64(seed ^ (Mix64(value) + 0x632be59bd9b4e019ULL + (seed << 6) + (seed >> 2)));
}

// 64-bit hash of bytes: FNV-1a over the bytes, then Mix64 of the result and
// the length.
uint64_t HashBytes(std::string_view bytes);

// Lower-case SHA-256 of bytes as 64 hex digits (OpenSSL).
std::string Sha256Hex(std::string_view bytes);

// Sha256Hex of the concatenation of what `write` hands its sink, without
// holding it all.
std::string Sha256HexOf(absl::FunctionRef<void(absl::FunctionRef<void(std::string_view)>)> write);

// "0123456789abcdef": 16 lower-case hex digits.
std::string Hex64(uint64_t value);

// Inverse of Hex64 (exactly 16 hex digits, either case); false on bad input.
bool ParseHex64(std::string_view text, uint64_t* value);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_STABLE_HASH_H_
