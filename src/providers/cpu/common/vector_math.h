// Branch-free float versions of exp, tanh and erf, so that elementwise loops calling them vectorize
// (std::exp / std::tanh / std::erf are opaque calls that keep a loop scalar). Accuracy: within a few ulp of the
// correctly rounded result over the whole float range; NaN in gives NaN out, overflow gives inf.
// The double overloads forward to <cmath>: doubles are rare enough not to need their own.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessera::cpu {

// cond ? a : b computed on the bits for floating-point types. Both operands are already computed, so
// the compiler vectorizes it even under -ftrapping-math, where a float ?: whose arms do arithmetic (or
// is followed by arithmetic) stays a branch and keeps the loop scalar.
template <typename C>
inline C Select(bool cond, C a, C b) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
    const Bits mask = Bits(0) - static_cast<Bits>(cond);
    return std::bit_cast<C>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
  } else {
    return cond ? a : b;
  }
}

inline float Exp(float x) {
  const bool nan = x != x;
  // Outside [-104, 89] exp(x) is 0 or inf in float; clamping keeps the integer math in range.
  float c = Select(nan, 0.0f, x);
  c = Select(std::isless(c, -104.0f), -104.0f, c);
  c = Select(std::isgreater(c, 89.0f), 89.0f, c);
  // x = n * ln2 + r with |r| <= ln2 / 2; n rounded to nearest by the 1.5 * 2^23 shifter.
  constexpr float kShifter = 12582912.0f;
  const float shifted = c * 1.44269504088896341f + kShifter;
  const float n = shifted - kShifter;
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;  // ln2 split in two for precision
  // exp(r) - 1 - r by a minimax polynomial.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 2^n for n in [-150, 128] (denormal results, overflow to inf) as 2^(n + 64) * 2^-64 where n < 0 and
  // 2^(n - 64) * 2^64 otherwise: the first factor is a normal float and exact, so the one rounding is the last
  // product's. n is read from the shifter's low bits (exact while |n| < 2^22).
  const int32_t n_int = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kShifter);
  const bool negative = n_int < 0;
  const float first = std::bit_cast<float>((n_int + (negative ? 64 : -64) + 127) << 23);
  const float result = er * first * Select(negative, 0x1p-64f, 0x1p64f);
  return Select(nan, x, result);
}
inline double Exp(double x) { return std::exp(x); }

inline float Tanh(float x) {
  const float a = std::fabs(x);
  // Small |x|: odd polynomial (no cancellation); otherwise 1 - 2 / (exp(2|x|) + 1), which tends to 1.
  const float s = x * x;
  float p = -5.70498872745e-3f;
  p = p * s + 2.06390887954e-2f;
  p = p * s - 5.37397155531e-2f;
  p = p * s + 1.33314422036e-1f;
  p = p * s - 3.33332819422e-1f;
  const float small = p * s * x + x;
  const float large = std::copysign(1.0f - 2.0f / (Exp(2.0f * a) + 1.0f), x);
  return Select(std::isless(a, 0.625f), small, large);
}
inline double Tanh(double x) { return std::tanh(x); }

// erf with an absolute error below 2.5e-7 (about 4 ulp) over the whole float range.
inline float Erf(float x) {
  const float a = std::fabs(x);
  const float s = x * x;
  // |x| < 0.75: the odd Taylor series 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), n <= 8.
  float p = 1.0f / 685440.0f;
  p = p * s - 1.0f / 75600.0f;
  p = p * s + 1.0f / 9360.0f;
  p = p * s - 1.0f / 1320.0f;
  p = p * s + 1.0f / 216.0f;
  p = p * s - 1.0f / 42.0f;
  p = p * s + 1.0f / 10.0f;
  p = p * s - 1.0f / 3.0f;
  p = p * s + 1.0f;
  const float small = 1.12837916709551257f * p * x;
  // Otherwise 1 - exp(-x^2) * polynomial(1 / (1 + 0.3275911 |x|)) (Abramowitz & Stegun 7.1.26).
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float large = std::copysign(1.0f - q * t * Exp(-s), x);
  return Select(std::isless(a, 0.75f), small, large);
}
inline double Erf(double x) { return std::erf(x); }

}  // namespace tessera::cpu
