#include "providers/cpu/tensor/transpose_tile.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_TRANSPOSE_TILE_AVX2 1
#endif

namespace tessera::cpu {

#ifdef TESSERA_TRANSPOSE_TILE_AVX2

bool HasTransposeTile4() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

namespace {

// One 8 x 8 block: input row i (8 consecutive r at column c0 + i) becomes output column i.
__attribute__((target("avx2"))) inline void Block8(const float* s, int64_t src_col_stride, float* d,
                                                     int64_t dst_row_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * src_col_stride);
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(d + 0 * dst_row_stride, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + 1 * dst_row_stride, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * dst_row_stride, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * dst_row_stride, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * dst_row_stride, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * dst_row_stride, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * dst_row_stride, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * dst_row_stride, _mm256_permute2f128_ps(u3, u7, 0x31));
}

}  // namespace

__attribute__((target("avx2"))) void TransposeTile4(const void* src, int64_t src_col_stride, void* dst,
                                                      int64_t dst_row_stride, int64_t rows, int64_t cols) {
  // The bytes move as float lanes (no arithmetic): any 4-byte element type.
  const float* s = static_cast<const float*>(src);
  float* d = static_cast<float*>(dst);
  const int64_t full_rows = rows / 8 * 8, full_cols = cols / 8 * 8;
  for (int64_t r = 0; r < full_rows; r += 8)
    for (int64_t c = 0; c < full_cols; c += 8) Block8(s + r + c * src_col_stride, src_col_stride, d + r * dst_row_stride + c, dst_row_stride);
  // Edges: the columns past the last full block for every row, the rows past it for the full columns.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = full_cols; c < cols; ++c) std::memcpy(d + r * dst_row_stride + c, s + r + c * src_col_stride, 4);
  for (int64_t r = full_rows; r < rows; ++r)
    for (int64_t c = 0; c < full_cols; ++c) std::memcpy(d + r * dst_row_stride + c, s + r + c * src_col_stride, 4);
}

#else

bool HasTransposeTile4() { return false; }
void TransposeTile4(const void*, int64_t, void*, int64_t, int64_t, int64_t) {}

#endif

}  // namespace tessera::cpu
