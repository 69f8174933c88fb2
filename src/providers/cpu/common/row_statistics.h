// Mean and population variance of a contiguous run of values, accumulated in double: the statistics of the CPU
// EP's normalizations (LayerNormalization, SkipLayerNormalization, InstanceNormalization), shared so that fused and
// unfused forms compute the same numbers. Two passes (the mean, then squared deviations from it); each pass keeps
// per-lane partial sums (vectorized for the CPU's widest instruction set), so the summation order differs from a
// sequential loop by rounding of the double sums only.
#pragma once

#include <cstdint>

namespace tessera::cpu {

struct RowStatistics {
  double mean = 0, variance = 0;  // 0 and 0 for n == 0
};

RowStatistics MeanVariance(const float* x, int64_t n);
RowStatistics MeanVariance(const double* x, int64_t n);

// y[i] = (x[i] - mean) * inv_std * gamma[i] + beta[i] (beta may be null: no shift), evaluated in that order in float
// (LayerNormalization's and SkipLayerNormalization's float expression), vectorized for the CPU's widest
// instruction set. y may be x.
void NormalizeRow(const float* x, float mean, float inv_std, const float* gamma, const float* beta, float* y,
                  int64_t n);

}  // namespace tessera::cpu
