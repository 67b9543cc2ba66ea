// Seeded, reproducible randomness of the sim backend: timing noise and
// injected failures. Pure functions of their arguments (no hidden state), so
// the same seed gives the same numbers on every run and platform (up to the
// last bits of std::exp/std::log). Thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_NOISE_H_
#define IOSFARM_WORKER_BACKENDS_SIM_NOISE_H_

#include <cstdint>

namespace iosfarm::worker::sim {

// A uniform value in (0, 1], a function of (seed, key, index).
double UniformDraw(uint64_t seed, uint64_t key, uint64_t index);

// Multiplicative lognormal noise exp(sigma * z), z standard normal drawn from
// (seed, key, repeat) (Box-Muller). Median 1; exactly 1 when sigma == 0.
double LognormalNoise(uint64_t seed, uint64_t key, uint64_t repeat, double sigma);

// True for a fraction `probability` of call indices, decided by (seed, call).
bool InjectFailure(uint64_t seed, uint64_t call, double probability);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_NOISE_H_
