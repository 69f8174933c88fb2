// GemmInt16 (quantize_common.h): the exact int32-accumulating product of zero-point-corrected 8-bit operands held
// as int16, the integer kernels' path on CPUs without AVX-512 VNNI (and for shapes oneDNN refuses).
//
// With AVX2 or AVX-512BW the product takes two k at a time with vpmaddwd: B's rows k and k + 1 are interleaved
// (unpacklo / unpackhi within 128-bit lanes) into (B[k][j], B[k+1][j]) pairs, and A's (A[r][k], A[r][k+1]) pair --
// adjacent in memory -- is broadcast as one 32-bit value, so one instruction computes A[r][k] B[k][j] +
// A[r][k+1] B[k+1][j] for 8 (AVX2) or 16 (AVX-512) columns. Operands are within [-255, 255], so a pair sum
// (<= 130050) never overflows; the running sums wrap modulo 2^32 like the generic loop's. The unpacks leave the
// columns of a tile in a fixed permutation, undone when the tile is stored. Column tails and other CPUs take the
// generic loop.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/quantization/quantize_common.h"

namespace tessera::cpu {
namespace {

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void GemmInt16Generic(const int16_t* a, int64_t lda, const int16_t* b, int32_t* c, int64_t rows, int64_t n, int64_t k,
                      int64_t ldb, int64_t ldc) {
  // Column tiles keep the touched part of B and the C row in cache while k advances.
  constexpr int64_t kTile = 256;
  for (int64_t n0 = 0; n0 < n; n0 += kTile) {
    const int64_t width = std::min(kTile, n - n0);
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* __restrict c_row = c + r * ldc + n0;
      std::fill(c_row, c_row + width, 0);
      const int16_t* a_row = a + r * lda;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int32_t av = a_row[kk];
        const int16_t* __restrict b_row = b + kk * ldb + n0;
        // Unsigned adds: the 32-bit accumulation wraps (as the spec allows) instead of being undefined.
        for (int64_t j = 0; j < width; ++j)
          c_row[j] = static_cast<int32_t>(static_cast<uint32_t>(c_row[j]) + static_cast<uint32_t>(av * b_row[j]));
      }
    }
  }
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(TESSERA_THREAD_SANITIZER)

// The A pair (A[r][kk], A[r][kk + 1]) as one 32-bit value; the second is 0 past the end of the row.
inline int32_t APair(const int16_t* a_row, int64_t kk, int64_t k) {
  const int16_t lo = a_row[kk], hi = kk + 1 < k ? a_row[kk + 1] : int16_t{0};
  return static_cast<int32_t>(static_cast<uint16_t>(lo)) | (static_cast<int32_t>(static_cast<uint16_t>(hi)) << 16);
}

// Rows [0, kRows) of C for the 32 (AVX-512) columns starting at j0. After unpacklo / unpackhi, lane L (of 4
// 128-bit lanes) of `lo` holds columns 8L + 0..3 and of `hi` columns 8L + 4..7.
template <int kRows>
__attribute__((target("avx512f,avx512bw"))) void Tile512(const int16_t* a, int64_t lda, const int16_t* b, int32_t* c,
                                                         int64_t k, int64_t ldb, int64_t ldc, int64_t j0) {
  __m512i lo[kRows], hi[kRows];
  for (int r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm512_setzero_si512();
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t kk = 0; kk < k; kk += 2) {
    const __m512i row0 = _mm512_loadu_si512(b + kk * ldb + j0);
    const __m512i row1 = kk + 1 < k ? _mm512_loadu_si512(b + (kk + 1) * ldb + j0) : zero;
    const __m512i pairs_lo = _mm512_unpacklo_epi16(row0, row1), pairs_hi = _mm512_unpackhi_epi16(row0, row1);
    for (int r = 0; r < kRows; ++r) {
      const __m512i pair = _mm512_set1_epi32(APair(a + r * lda, kk, k));
      lo[r] = _mm512_add_epi32(lo[r], _mm512_madd_epi16(pair, pairs_lo));
      hi[r] = _mm512_add_epi32(hi[r], _mm512_madd_epi16(pair, pairs_hi));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    alignas(64) int32_t l[16], h[16];
    _mm512_store_si512(l, lo[r]);
    _mm512_store_si512(h, hi[r]);
    int32_t* out = c + r * ldc + j0;
    for (int lane = 0; lane < 4; ++lane) {
      std::memcpy(out + 8 * lane, l + 4 * lane, 4 * sizeof(int32_t));
      std::memcpy(out + 8 * lane + 4, h + 4 * lane, 4 * sizeof(int32_t));
    }
  }
}

// The same with AVX2: 16 columns per tile, 2 lanes.
template <int kRows>
__attribute__((target("avx2"))) void Tile256(const int16_t* a, int64_t lda, const int16_t* b, int32_t* c, int64_t k,
                                             int64_t ldb, int64_t ldc, int64_t j0) {
  __m256i lo[kRows], hi[kRows];
  for (int r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  const __m256i zero = _mm256_setzero_si256();
  for (int64_t kk = 0; kk < k; kk += 2) {
    const __m256i row0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + kk * ldb + j0));
    const __m256i row1 =
        kk + 1 < k ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + (kk + 1) * ldb + j0)) : zero;
    const __m256i pairs_lo = _mm256_unpacklo_epi16(row0, row1), pairs_hi = _mm256_unpackhi_epi16(row0, row1);
    for (int r = 0; r < kRows; ++r) {
      const __m256i pair = _mm256_set1_epi32(APair(a + r * lda, kk, k));
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(pair, pairs_lo));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(pair, pairs_hi));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    alignas(32) int32_t l[8], h[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), lo[r]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(h), hi[r]);
    int32_t* out = c + r * ldc + j0;
    for (int lane = 0; lane < 2; ++lane) {
      std::memcpy(out + 8 * lane, l + 4 * lane, 4 * sizeof(int32_t));
      std::memcpy(out + 8 * lane + 4, h + 4 * lane, 4 * sizeof(int32_t));
    }
  }
}

enum class PairIsa { kNone, kAvx2, kAvx512 };

// The widest pair kernel the CPU runs, lowered by TESSERA_CPU_INT16_GEMM=generic|avx2 (tests cover each).
PairIsa DetectPairIsa() {
  const char* cap = std::getenv("TESSERA_CPU_INT16_GEMM");
  const std::string limit = cap ? cap : "";
  if (limit == "generic") return PairIsa::kNone;
  if (limit != "avx2" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return PairIsa::kAvx512;
  if (__builtin_cpu_supports("avx2")) return PairIsa::kAvx2;
  return PairIsa::kNone;
}

template <int kRows>
void TileAt(PairIsa isa, const int16_t* a, int64_t lda, const int16_t* b, int32_t* c, int64_t k, int64_t ldb, int64_t ldc,
            int64_t j0) {
  if (isa == PairIsa::kAvx512)
    Tile512<kRows>(a, lda, b, c, k, ldb, ldc, j0);
  else
    Tile256<kRows>(a, lda, b, c, k, ldb, ldc, j0);
}

bool GemmInt16Pairs(const int16_t* a, const int16_t* b, int32_t* c, int64_t rows, int64_t n, int64_t k, int64_t ldb,
                    int64_t ldc) {
  static const PairIsa isa = DetectPairIsa();
  if (isa == PairIsa::kNone || k < 2) return false;
  const int64_t width = isa == PairIsa::kAvx512 ? 32 : 16;
  const int64_t tiled = n / width * width;
  if (tiled == 0) return false;
  // Column tiles outermost: a tile of B (k x width int16, 64 KB for k = 1024 on AVX-512) stays in cache while
  // every row block passes over it, so B streams from memory once.
  for (int64_t j0 = 0; j0 < tiled; j0 += width) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) TileAt<4>(isa, a + r * k, k, b, c + r * ldc, k, ldb, ldc, j0);
    for (; r + 2 <= rows; r += 2) TileAt<2>(isa, a + r * k, k, b, c + r * ldc, k, ldb, ldc, j0);
    for (; r < rows; ++r) TileAt<1>(isa, a + r * k, k, b, c + r * ldc, k, ldb, ldc, j0);
  }
  if (tiled < n) GemmInt16Generic(a, k, b + tiled, c + tiled, rows, n - tiled, k, ldb, ldc);
  return true;
}

#else

bool GemmInt16Pairs(const int16_t*, const int16_t*, int32_t*, int64_t, int64_t, int64_t, int64_t, int64_t) {
  return false;
}

#endif

}  // namespace

void GemmInt16(const int16_t* a, const int16_t* b, int32_t* c, int64_t rows, int64_t n, int64_t k, int64_t ldb,
               int64_t ldc) {
  if (rows <= 0 || n <= 0) return;
  if (GemmInt16Pairs(a, b, c, rows, n, k, ldb, ldc)) return;
  GemmInt16Generic(a, k, b, c, rows, n, k, ldb, ldc);
}

}  // namespace tessera::cpu
