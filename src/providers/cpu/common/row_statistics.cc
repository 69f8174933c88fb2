#include "providers/cpu/common/row_statistics.h"

#include "providers/cpu/common/target_clones.h"

namespace tessera::cpu {

namespace {

template <typename T>
inline RowStatistics Statistics(const T* x, int64_t n) {
  if (n <= 0) return {};
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    squares += d * d;
  }
  return {mean, squares / static_cast<double>(n)};
}

}  // namespace

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
RowStatistics MeanVariance(const float* x, int64_t n) { return Statistics(x, n); }

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
RowStatistics MeanVariance(const double* x, int64_t n) { return Statistics(x, n); }

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void NormalizeRow(const float* x, float mean, float inv_std, const float* gamma, const float* beta, float* y,
                  int64_t n) {
  if (beta != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv_std * gamma[i] + beta[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv_std * gamma[i];
  }
}

}  // namespace tessera::cpu
