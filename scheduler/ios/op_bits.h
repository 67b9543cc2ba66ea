// OpBits<W>: a fixed-size set of block-local op indices (0 .. 64*W-1).
//
// The DP's state and candidate sets. A plain value type (W words, no heap),
// cheap to copy, hash and compare; the search picks the smallest W that holds
// a block (1, 2, 4, 8 or 16 words: blocks of up to 1024 ops).
#ifndef IOSFARM_SCHEDULER_IOS_OP_BITS_H_
#define IOSFARM_SCHEDULER_IOS_OP_BITS_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios {

// Largest block the DP accepts.
inline constexpr int kMaxBlockOps = 1024;

template <int W>
struct OpBits {
  static constexpr int kCapacity = 64 * W;
  std::array<uint64_t, W> words{};

  // The set {0, ..., n-1}.
  static OpBits FirstN(int n) {
    OpBits b;
    for (int i = 0; i < W; ++i) {
      const int lo = 64 * i;
      if (n >= lo + 64) {
        b.words[i] = ~uint64_t{0};
      } else if (n > lo) {
        b.words[i] = (uint64_t{1} << (n - lo)) - 1;
      }
    }
    return b;
  }
  // View of W words starting at `data`.
  static OpBits FromWords(const uint64_t* data) {
    OpBits b;
    for (int i = 0; i < W; ++i) b.words[i] = data[i];
    return b;
  }

  bool Test(int i) const { return (words[i >> 6] >> (i & 63)) & 1; }
  void Set(int i) { words[i >> 6] |= uint64_t{1} << (i & 63); }
  void Reset(int i) { words[i >> 6] &= ~(uint64_t{1} << (i & 63)); }

  bool Empty() const {
    uint64_t any = 0;
    for (uint64_t w : words) any |= w;
    return any == 0;
  }
  int Count() const {
    int c = 0;
    for (uint64_t w : words) c += std::popcount(w);
    return c;
  }
  // True when every element of *this is in `other`.
  bool SubsetOf(const OpBits& other) const {
    uint64_t extra = 0;
    for (int i = 0; i < W; ++i) extra |= words[i] & ~other.words[i];
    return extra == 0;
  }
  bool Intersects(const OpBits& other) const {
    uint64_t common = 0;
    for (int i = 0; i < W; ++i) common |= words[i] & other.words[i];
    return common != 0;
  }
  // True when (*this & mask) is a subset of `other`.
  bool MaskedSubsetOf(const OpBits& mask, const OpBits& other) const {
    uint64_t extra = 0;
    for (int i = 0; i < W; ++i) extra |= words[i] & mask.words[i] & ~other.words[i];
    return extra == 0;
  }
  // Elements below i.
  int CountBelow(int i) const {
    int c = 0;
    for (int w = 0; w < W; ++w) {
      const int lo = 64 * w;
      if (i >= lo + 64) {
        c += std::popcount(words[w]);
      } else if (i > lo) {
        c += std::popcount(words[w] & ((uint64_t{1} << (i - lo)) - 1));
      }
    }
    return c;
  }
  // Smallest element, or -1 when empty.
  int First() const {
    for (int i = 0; i < W; ++i) {
      if (words[i] != 0) return 64 * i + std::countr_zero(words[i]);
    }
    return -1;
  }

  OpBits operator&(const OpBits& o) const {
    OpBits r;
    for (int i = 0; i < W; ++i) r.words[i] = words[i] & o.words[i];
    return r;
  }
  OpBits operator|(const OpBits& o) const {
    OpBits r;
    for (int i = 0; i < W; ++i) r.words[i] = words[i] | o.words[i];
    return r;
  }
  // Elements of *this not in `o`.
  OpBits Minus(const OpBits& o) const {
    OpBits r;
    for (int i = 0; i < W; ++i) r.words[i] = words[i] & ~o.words[i];
    return r;
  }
  OpBits& operator|=(const OpBits& o) {
    for (int i = 0; i < W; ++i) words[i] |= o.words[i];
    return *this;
  }
  bool operator==(const OpBits& o) const {
    uint64_t diff = 0;
    for (int i = 0; i < W; ++i) diff |= words[i] ^ o.words[i];
    return diff == 0;
  }

  // Calls f(index) for each element in increasing order.
  template <typename F>
  void ForEach(F&& f) const {
    for (int i = 0; i < W; ++i) {
      uint64_t w = words[i];
      while (w != 0) {
        f(64 * i + std::countr_zero(w));
        w &= w - 1;
      }
    }
  }

  uint64_t Hash() const {
    uint64_t h = words[0];
    for (int i = 1; i < W; ++i) h = h * 0x9e3779b97f4a7c15ULL + words[i];
    return Mix64(h);
  }
};

template <int W>
struct OpBitsHash {
  size_t operator()(const OpBits<W>& b) const { return static_cast<size_t>(b.Hash()); }
};

// Words needed for n ops, rounded up to a supported OpBits width (1, 2, 4, 8,
// 16); 0 when n > kMaxBlockOps.
inline int OpBitsWidthFor(int n) {
  for (int w : {1, 2, 4, 8, 16}) {
    if (n <= 64 * w) return w;
  }
  return 0;
}

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_OP_BITS_H_
