// Helpers of the runtime's tests, over the public API only: deterministic
// inputs, error checks and output comparison. Header-only; for runtime/*_test.cc.
#ifndef IOSFARM_RUNTIME_SESSION_TESTING_H_
#define IOSFARM_RUNTIME_SESSION_TESTING_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "iosfarm/runtime.h"

namespace iosfarm {

inline int64_t Count(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// A deterministic image-like input of `n` values.
inline std::vector<float> Ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.001f * static_cast<float>(i));
  return v;
}

// `f` throws iosfarm::Error with `code`; returns its message.
template <typename F>
std::string ErrorOf(ErrorCode code, F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no iosfarm::Error thrown";
  return "";
}

// Element by element within `rtol` of `b` (absolute below magnitude 1).
inline void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, double rtol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], rtol * std::max(1.0, std::abs(static_cast<double>(b[i]))))
        << "element " << i;
  }
}

}  // namespace iosfarm

#endif  // IOSFARM_RUNTIME_SESSION_TESTING_H_
