#include "providers/cpu/common/half_conversion.h"

#include <bit>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "tessera/status.h"

namespace tessera::cpu {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1: AVX (ECX bit 28) and F16C (bit 29), with the OS saving YMM state (OSXSAVE, bit 27, and XCR0 bits
// 1-2). Read directly: clang's __builtin_cpu_supports does not know "f16c".
bool HasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1, f16c = (ecx >> 29) & 1;
    if (!osxsave || !avx || !f16c) return false;
    unsigned xcr0_low = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    return (xcr0_low & 0x6) == 0x6;
  }();
  return has;
}

__attribute__((target("avx,f16c"))) int64_t HalfToFloatF16c(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  return i;
}

__attribute__((target("avx,f16c"))) int64_t FloatToHalfF16c(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  return i;
}
#endif

// The conversion's cost is a few cycles per element: split only arrays large enough to pay for the pool.
constexpr int64_t kParallelGrain = 1 << 16;

template <typename Fn>
void Split(const ThreadPool* pool, int64_t n, Fn&& fn) {
  if (pool == nullptr || n <= kParallelGrain) {
    fn(0, n);
    return;
  }
  pool->ParallelFor(n, kParallelGrain, fn);
}

}  // namespace

void HalfToFloat(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (HasF16c()) i = HalfToFloatF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = ToFloat(in[i]);
}

void HalfToFloat(const BFloat16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<uint32_t>(in[i].bits) << 16);
}

void FloatToHalf(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (HasF16c()) i = FloatToHalfF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = ToFloat16(in[i]);
}

void FloatToHalf(const float* in, BFloat16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = ToBFloat16(in[i]);
}

void ConvertHalfTensor(const Tensor& from, Tensor& to, const ThreadPool* pool) {
  const int64_t n = from.NumElements();
  if (to.NumElements() != n)
    Fail(ErrorCode::kRuntime, "ConvertHalfTensor: ", from, " and ", to, " differ in size");
  if (from.type() == DataType::kFloat16 && to.type() == DataType::kFloat) {
    const Float16* in = from.Data<Float16>();
    float* out = to.Data<float>();
    Split(pool, n, [&](int64_t b, int64_t e) { HalfToFloat(in + b, out + b, e - b); });
  } else if (from.type() == DataType::kBFloat16 && to.type() == DataType::kFloat) {
    const BFloat16* in = from.Data<BFloat16>();
    float* out = to.Data<float>();
    Split(pool, n, [&](int64_t b, int64_t e) { HalfToFloat(in + b, out + b, e - b); });
  } else if (from.type() == DataType::kFloat && to.type() == DataType::kFloat16) {
    const float* in = from.Data<float>();
    Float16* out = to.Data<Float16>();
    Split(pool, n, [&](int64_t b, int64_t e) { FloatToHalf(in + b, out + b, e - b); });
  } else if (from.type() == DataType::kFloat && to.type() == DataType::kBFloat16) {
    const float* in = from.Data<float>();
    BFloat16* out = to.Data<BFloat16>();
    Split(pool, n, [&](int64_t b, int64_t e) { FloatToHalf(in + b, out + b, e - b); });
  } else {
    Fail(ErrorCode::kRuntime, "ConvertHalfTensor: no conversion from ", DataTypeName(from.type()), " to ",
         DataTypeName(to.type()));
  }
}

}  // namespace tessera::cpu
