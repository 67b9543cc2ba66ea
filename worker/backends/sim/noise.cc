#include "worker/backends/sim/noise.h"

#include <cmath>
#include <numbers>

#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::worker::sim {

using scheduler::ios::HashCombine;

double UniformDraw(uint64_t seed, uint64_t key, uint64_t index) {
  const uint64_t bits = HashCombine(HashCombine(HashCombine(0x5eed, seed), key), index);
  // The top 53 bits, shifted to (0, 1].
  return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53;
}

double LognormalNoise(uint64_t seed, uint64_t key, uint64_t repeat, double sigma) {
  if (sigma == 0) return 1.0;
  const double u1 = UniformDraw(seed, key, 2 * repeat);
  const double u2 = UniformDraw(seed, key, 2 * repeat + 1);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return std::exp(sigma * z);
}

bool InjectFailure(uint64_t seed, uint64_t call, double probability) {
  if (probability <= 0) return false;
  return UniformDraw(seed, 0xfa11u, call) <= probability;
}

}  // namespace iosfarm::worker::sim
