// The butterflies of smoothing's Walsh-Hadamard rotation (group_math.h's walshHadamard) between
// whole vectors, written once for the SIMD kernel sets: each includes it in its own file,
// compiled for its instruction set, with its vector's operations.
#pragma once

#include <cstdint>

namespace zccl {

// The stages from `half` (a multiple of Ops::kLanes) to n / 2 on n values. Two stages a pass
// where two remain: each quad of vectors (i, i + half, i + 2 half, i + 3 half) through the
// first stage's additions, then the second's, in their order: the same bits as two passes with
// half the loads and stores; then the last stage alone where their count is odd.
// Ops: Vector, kLanes, load(const float*), store(float*, Vector), add, sub.
template <typename Ops>
void butterfliesBetweenVectors(float* v, uint32_t n, uint32_t half) {
  using Vector = typename Ops::Vector;
  for (; 4 * half <= n; half *= 4) {
    for (uint32_t start = 0; start < n; start += 4 * half) {
      for (uint32_t i = start; i < start + half; i += Ops::kLanes) {
        const Vector a = Ops::load(v + i), b = Ops::load(v + i + half);
        const Vector c = Ops::load(v + i + 2 * half), d = Ops::load(v + i + 3 * half);
        const Vector ab = Ops::add(a, b), aMinusB = Ops::sub(a, b);
        const Vector cd = Ops::add(c, d), cMinusD = Ops::sub(c, d);
        Ops::store(v + i, Ops::add(ab, cd));
        Ops::store(v + i + half, Ops::add(aMinusB, cMinusD));
        Ops::store(v + i + 2 * half, Ops::sub(ab, cd));
        Ops::store(v + i + 3 * half, Ops::sub(aMinusB, cMinusD));
      }
    }
  }
  if (half == n) return;
  for (uint32_t start = 0; start < n; start += 2 * half) {
    for (uint32_t i = start; i < start + half; i += Ops::kLanes) {
      const Vector a = Ops::load(v + i), b = Ops::load(v + i + half);
      Ops::store(v + i, Ops::add(a, b));
      Ops::store(v + i + half, Ops::sub(a, b));
    }
  }
}

}  // namespace zccl
