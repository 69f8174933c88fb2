// Pieces shared by the quantized CPU kernels (QuantizeLinear, QLinearMatMul, QLinearConv, ...):
// saturating round-half-to-even quantization, scale and zero-point parameters read as per-tensor or
// per-channel vectors, and an int32-accumulating GEMM over zero-point-corrected int16 operands.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "tessera/ep/kernel.h"
#include "tessera/ep/thread_pool.h"

namespace tessera::cpu {

// round(scaled) + zero_point saturated to Q's range (an 8- or 16-bit integer). nearbyint rounds half to
// even in the default floating-point environment, which Tessera never changes. NaN maps to Q's minimum.
template <typename Q>
inline Q QuantizeValue(float scaled, float zero_point) {
  constexpr float kMin = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float kMax = static_cast<float>(std::numeric_limits<Q>::max());
  const float shifted = std::nearbyint(scaled) + zero_point;
  return static_cast<Q>(static_cast<int32_t>(std::max(kMin, std::min(shifted, kMax))));
}

// Vectorized loops over QuantizeValue (built for AVX-512 and AVX2 as well, where nearbyint is one
// instruction; the library's baseline is SSE2).
// y[i] = QuantizeValue(x[i] / scale, zero_point):
void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, int8_t* y);
void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, uint8_t* y);
void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, int16_t* y);
void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, uint16_t* y);
// y[i] = QuantizeValue((sums[i] + offset) * multiplier, zero_point):
void RequantizeSpan(const int32_t* sums, int64_t n, int32_t offset, float multiplier, float zero_point, int8_t* y);
void RequantizeSpan(const int32_t* sums, int64_t n, int32_t offset, float multiplier, float zero_point, uint8_t* y);

// DynamicQuantizeLinear's rule over x[0, n): scale = (max(0, max x) - min(0, min x)) / 255, zero point =
// saturate(round(-min / scale)), q[i] = saturate(round(x[i] / scale) + zero point); an all-zero x gets scale 0,
// zero point 0 and q = 0. Used by the DynamicQuantizeLinear kernel and by kernels that quantize their float
// activations the same way (com.microsoft DynamicQuantizeLSTM).
struct DynamicQuantization {
  float scale = 0.0f;
  uint8_t zero_point = 0;
};
DynamicQuantization DynamicQuantizeUint8(const ThreadPool& pool, const float* x, int64_t n, uint8_t* q);

// Scales (float, float16 or bfloat16 tensors) converted to float; throws naming `what` for other types.
std::vector<float> ReadScales(const Node& node, const Tensor& t, const char* what);
// Zero points of an integer tensor widened to int32; an omitted input reads as one zero.
std::vector<int32_t> ReadZeroPoints(const Node& node, const Tensor* t, const char* what);

// Checks that a per-tensor or per-channel parameter has 1 or `channels` elements (and rank <= 1);
// returns whether it is per-channel.
bool CheckChannelParameter(const Node& node, const Shape& shape, int64_t channels, const char* what,
                           const char* channel_name);

// C[rows x n] = A[rows x k] * B[k x n] with int32 accumulation; A is dense row-major, B and C rows
// are ldb and ldc elements apart. The int16 operands hold zero-point-corrected 8-bit values (|v| <= 255),
// so products fit in int32; sums wrap modulo 2^32 only past ~33000 terms, as the ONNX specs allow.
// AVX2 / AVX-512BW take k in pairs with vpmaddwd (gemm_int16.cc); TESSERA_CPU_INT16_GEMM=generic|avx2 caps
// the kernel (tests run each).
void GemmInt16(const int16_t* a, const int16_t* b, int32_t* c, int64_t rows, int64_t n, int64_t k, int64_t ldb,
               int64_t ldc);

// Whether oneDNN's 8-bit products are exact on this CPU. With AVX-512 VNNI (vpdpbusd) every 4-term u8 x s8 dot
// product accumulates in 32 bits; without it oneDNN adds pairs of products in saturating 16-bit lanes
// (vpmaddubsw), which can clip when both operands are near their extremes (oneDNN's "Nuances of int8
// computations"). The integer kernels use oneDNN's int8 primitives only where this holds and the exact int16
// GEMM elsewhere; environment variable TESSERA_CPU_EXACT_INT8_GEMM=1 makes it false (ctest's
// quantization_int16_gemm_* run the quantized kernels' tests so on hosts with VNNI).
bool DnnlInt8IsExact();

// Runs fn(begin, end) over [0, n) on `pool`, or inline when `pool` is null (already inside a task).
void ForRange(const ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessera::cpu
