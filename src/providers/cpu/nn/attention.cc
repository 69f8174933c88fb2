// ai.tessera::Attention (opset 1), made by graph/passes/attention_fusion: scaled dot-product attention over
// rank-4 Q, K, V read through axis maps, with an optional additive (or Boolean) mask, and in its cache-update form
// (graph/passes/cache_update_fusion) the rows a decoding step writes into K and V first. Semantics in
// graph/passes/attention_fusion.h and cache_update_fusion.h. Float32 and float16; scores, softmax and the weighted
// sum of V are computed in float32 (float16 results are rounded once, at the end).
//
// Float32 on x86-64 with AVX2 or AVX-512 (RunBlockedAttention), where V's rows are contiguous with a head size a
// multiple of the vector width: blocks of query rows get their scores, a softmax over rows kept in cache and
// register-tiled products of the probabilities and V -- no scores tensor in memory. Scores: where at least
// kBlockedMinQueries queries share a (batch, head), against K transposed once per head into a panel (vector-width
// square blocks transposed in registers where K's features are contiguous; an encoder's attention at matrix-product
// speed); with fewer (decoding steps, short prompts) from K's rows directly, which needs Q's and K's features
// contiguous too. Everything else (float16, other layouts, other CPUs) takes the row kernel (RunAttention): one query
// row at a time, vectorized dot products and weighted sums.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "providers/cpu/common/float_width.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/vector_math.h"
#include "providers/cpu/cpu_kernels.h"
#include "tessera/ep/attention_geometry.h"

// The vector types of the blocked kernel stay inside this file's target-specific functions, so GCC's note that
// 64-byte vectors pass differently with and without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tessera::cpu {
namespace {

// The float32 inner loops over contiguous rows (keys and values whose head dim has stride 1, the layout exporters
// give), built per instruction set: a dot product with 16 independent partial sums (a strict-IEEE reduction does not
// vectorize otherwise) and y += alpha * x.
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
float DotContiguous(const float* a, const float* b, int64_t n) {
  float partial[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) partial[j] += a[i + j] * b[i + j];
  float sum = 0.0f;
  for (int j = 0; j < 16; ++j) sum += partial[j];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void AxpyContiguous(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// What one row's scores came to: its softmax denominator's reciprocal, or (every score -inf, or NaN) the value
// the whole output row takes -- 0 for a fully masked row with masked_rows_zero or no keys, NaN otherwise, as the
// unfused Softmax and MatMul give.
struct RowSum {
  bool special = false;
  float value = 0.0f;
};

#if defined(__x86_64__)
#define TESSERA_BLOCKED_ATTENTION 1

// Queries per (batch, head) from which the scores go against K transposed into a panel; fewer (a decoding step, a
// short prompt) score against K's rows, where the transpose would cost more than it saves.
constexpr int64_t kBlockedMinQueries = 8;

// Vectors of 16 floats (one AVX-512 register) and of 8 (one AVX2 register).
typedef float Lanes16 __attribute__((vector_size(16 * sizeof(float))));
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));

// The blocked kernel for vectors Vec with R query rows per register tile (AVX-512: 16 lanes, 8 rows = 16
// accumulators of the 32 registers; AVX2: 8 lanes, 4 rows = 8 of 16). Instantiated only inside the target-specific
// entry points below, which it is inlined into.
template <typename Vec, int R>
struct BlockedAttention {
  static constexpr int W = sizeof(Vec) / sizeof(float);

  [[gnu::always_inline]] static inline Vec Load(const float* p) {
    Vec v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  [[gnu::always_inline]] static inline void Store(float* p, Vec v) { std::memcpy(p, &v, sizeof(v)); }
  // *p in every lane: one broadcasting load (GCC 12 assembled the vector lane by lane from any C++ spelling of it
  // inside these loops, so GCC gets the instruction itself).
  [[gnu::always_inline]] static inline Vec SplatLoad(const float* p) {
#if defined(__clang__)
    return *p - Vec{};  // x - 0 is x for every x: clang makes this one broadcast
#else
    Vec v;
    asm("vbroadcastss %1, %0" : "=v"(v) : "m"(*p));
    return v;
#endif
  }
  // x in every lane (outside the inner loops: through memory, as SplatLoad).
  [[gnu::always_inline]] static inline Vec Splat(float x) {
    const float in_memory = x;
    return SplatLoad(&in_memory);
  }
  [[gnu::always_inline]] static inline float Max(Vec v) {
    float m = v[0];
    for (int l = 1; l < W; ++l) m = Select(m < v[l], v[l], m);
    return m;
  }
  [[gnu::always_inline]] static inline float Sum(Vec v) {
    float s = 0.0f;
#pragma GCC unroll 16
    for (int l = 0; l < W; ++l) s += v[l];
    return s;
  }

  // exp(x) in every lane, for x <= 0 or NaN (a score minus its row's maximum): Exp's reduction and polynomial
  // (vector_math.h) without the handling of large and NaN arguments that such x do not need; 0 below -87.3, where
  // exp(x) leaves the normal floats (Exp gives the denormals there).
  [[gnu::always_inline]] static inline Vec ExpOfNonPositive(Vec x) {
    typedef int32_t Bits __attribute__((vector_size(sizeof(Vec))));
    const Vec floor = Vec{} - 87.3f;
    const Vec clamped = x < floor ? floor : x;  // NaN stays NaN
    constexpr float kShifter = 12582912.0f;     // 1.5 * 2^23: adding it rounds to an integer
    const Vec shifted = clamped * 1.44269504088896341f + kShifter;
    const Vec n = shifted - kShifter;
    const Vec r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
    Vec poly = Vec{} + 1.9875691500e-4f;
    poly = poly * r + 1.3981999507e-3f;
    poly = poly * r + 8.3334519073e-3f;
    poly = poly * r + 4.1665795894e-2f;
    poly = poly * r + 1.6666665459e-1f;
    poly = poly * r + 5.0000001201e-1f;
    const Vec er = poly * (r * r) + r + 1.0f;
    // 2^n for n in [-126, 0] from the shifter's low bits: a normal float.
    const Bits exponent = ((Bits)shifted - std::bit_cast<int32_t>(kShifter) + 127) << 23;
    const Vec result = er * (Vec)exponent;
    return x < floor ? Vec{} : result;
  }

  // Transposes the W x W block at rows[i][0..W) (i < W) into columns: out + i * out_stride gets column i.
  [[gnu::always_inline]] static inline void TransposeBlock(const float* in, int64_t in_stride, float* out,
                                                           int64_t out_stride) {
    Vec m[W];
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) m[i] = Load(in + i * in_stride);
    SwapStage<1>(m);
    SwapStage<2>(m);
    SwapStage<4>(m);
    if constexpr (W == 16) SwapStage<8>(m);
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) Store(out + i * out_stride, m[i]);
  }
  // One stage of the transpose: rows i and i + B (bit B of i clear) exchange their off-diagonal B x B blocks --
  // lanes with bit B set of row i with lanes with it clear of row i + B. After the stages for B = 1, 2, .. W / 2
  // every element has moved from (i, c) to (c, i).
  static constexpr int LowLane(int c, int b) { return (c & b) ? W + c - b : c; }
  static constexpr int HighLane(int c, int b) { return (c & b) ? W + c : c + b; }
  template <int B, int... C>
  [[gnu::always_inline]] static inline void SwapPair(Vec& low, Vec& high, std::integer_sequence<int, C...>) {
    const Vec a = low, b = high;
    low = __builtin_shufflevector(a, b, LowLane(C, B)...);
    high = __builtin_shufflevector(a, b, HighLane(C, B)...);
  }
  template <int B>
  [[gnu::always_inline]] static inline void SwapStage(Vec* m) {
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i)
      if ((i & B) == 0) SwapPair<B>(m[i], m[i + B], std::make_integer_sequence<int, W>{});
  }

  // scores[r][j] for j < panel_width (a multiple of 2 W; zero columns past k_len) = Q row r . panel column j, for
  // Rows (<= R) rows starting at q_rows[0].
  template <int Rows>
  [[gnu::always_inline]] static inline void Scores(const float* const* q_rows, int64_t q_feature_stride,
                                                   const float* panel, int64_t panel_width, int64_t head_size,
                                                   float* scores) {
    for (int64_t j = 0; j < panel_width; j += 2 * W) {
      Vec acc[Rows][2];
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = Vec{};
      const float* column = panel + j;
      for (int64_t d = 0; d < head_size; ++d, column += panel_width) {
        const Vec k0 = Load(column), k1 = Load(column + W);
#pragma GCC unroll 8
        for (int r = 0; r < Rows; ++r) {
          const Vec q = SplatLoad(q_rows[r] + d * q_feature_stride);
          acc[r][0] += q * k0;
          acc[r][1] += q * k1;
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        Store(scores + r * panel_width + j, acc[r][0]);
        Store(scores + r * panel_width + j + W, acc[r][1]);
      }
    }
  }

  // The same scores for Rows (<= R) rows without a panel: each key's row of K (contiguous features) times each query
  // row, vectors across the features, then the lanes summed -- for a few queries over many keys, where transposing K
  // would cost more than the products.
  template <int Rows>
  [[gnu::always_inline]] static inline void ScoresByKeyRows(const float* const* q_rows, const float* k_head,
                                                            int64_t k_key_stride, int64_t k_len, int64_t head_size,
                                                            int64_t panel_width, float* scores) {
    for (int64_t j = 0; j < k_len; ++j) {
      const float* k_row = k_head + j * k_key_stride;
      Vec acc[Rows];
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) acc[r] = Vec{};
      for (int64_t c = 0; c < head_size; c += W) {
        const Vec kv = Load(k_row + c);
#pragma GCC unroll 8
        for (int r = 0; r < Rows; ++r) acc[r] += Load(q_rows[r] + c) * kv;
      }
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        float lanes[W];
        Store(lanes, acc[r]);
        float sum = 0.0f;
#pragma GCC unroll 16
        for (int l = 0; l < W; ++l) sum += lanes[l];
        scores[r * panel_width + j] = sum;
      }
    }
    for (int r = 0; r < Rows; ++r) std::fill(scores + r * panel_width + k_len, scores + (r + 1) * panel_width, 0.0f);
  }

  // out row r (contiguous features) = sum over keys j of probs[r][j] * V row j, times sums[r].value, for Rows rows.
  template <int Rows>
  [[gnu::always_inline]] static inline void Weighted(const float* probs, int64_t panel_width, const float* v,
                                                     int64_t v_key_stride, int64_t k_len, int64_t v_head_size,
                                                     const RowSum* sums, float* const* out_rows) {
    int64_t c = 0;
    for (; c + 2 * W <= v_head_size; c += 2 * W) {
      Vec acc[Rows][2];
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = Vec{};
      const float* v_row = v + c;
      for (int64_t j = 0; j < k_len; ++j, v_row += v_key_stride) {
        const Vec v0 = Load(v_row), v1 = Load(v_row + W);
#pragma GCC unroll 8
        for (int r = 0; r < Rows; ++r) {
          const Vec p = SplatLoad(probs + r * panel_width + j);
          acc[r][0] += p * v0;
          acc[r][1] += p * v1;
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        if (sums[r].special) continue;
        const Vec scale = Splat(sums[r].value);
        Store(out_rows[r] + c, acc[r][0] * scale);
        Store(out_rows[r] + c + W, acc[r][1] * scale);
      }
    }
    for (; c < v_head_size; c += W) {  // one vector of columns left (head sizes are multiples of W)
      Vec acc[Rows];
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) acc[r] = Vec{};
      const float* v_row = v + c;
      for (int64_t j = 0; j < k_len; ++j, v_row += v_key_stride) {
        const Vec v0 = Load(v_row);
#pragma GCC unroll 8
        for (int r = 0; r < Rows; ++r) acc[r] += SplatLoad(probs + r * panel_width + j) * v0;
      }
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r)
        if (!sums[r].special) Store(out_rows[r] + c, acc[r] * Splat(sums[r].value));
    }
  }

  // Scales one row of scores, adds its mask row, and turns it into unnormalized probabilities in place (zeros
  // past k_len up to panel_width); returns what normalizes them.
  [[gnu::always_inline]] static inline RowSum Softmax(float* row, int64_t k_len, int64_t panel_width, float scale,
                                                      const void* mask, bool bool_mask, int64_t mask_at,
                                                      int64_t mask_stride, bool masked_rows_zero) {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const int64_t whole = k_len / W * W;  // vectors of W scores; the rest one at a time
    const Vec scale_v = Splat(scale);
    // Lanewise partial maxima (a single float accumulator would serialize the loop), taken in the pass that scales
    // and masks; NaN scores leave a maximum alone, as std::max(max, x) does.
    Vec max_v = Splat(minus_inf);
    const auto take = [&](int64_t j, Vec x) {
      Store(row + j, x);
      max_v = max_v < x ? x : max_v;
    };
    const float* additive = !bool_mask && mask != nullptr && mask_stride == 1
                                ? static_cast<const float*>(mask) + mask_at : nullptr;
    if (mask == nullptr) {
      for (int64_t j = 0; j < whole; j += W) take(j, Load(row + j) * scale_v);
      for (int64_t j = whole; j < k_len; ++j) row[j] *= scale;
    } else if (additive != nullptr) {
      for (int64_t j = 0; j < whole; j += W) take(j, Load(row + j) * scale_v + Load(additive + j));
      for (int64_t j = whole; j < k_len; ++j) row[j] = row[j] * scale + additive[j];
    } else if (bool_mask) {
      const bool* m = static_cast<const bool*>(mask) + mask_at;
      for (int64_t j = 0; j < k_len; ++j) row[j] = Select(m[j * mask_stride], row[j] * scale, minus_inf);
      for (int64_t j = 0; j < whole; j += W) take(j, Load(row + j));
    } else {
      const float* m = static_cast<const float*>(mask) + mask_at;
      for (int64_t j = 0; j < k_len; ++j) row[j] = row[j] * scale + m[j * mask_stride];
      for (int64_t j = 0; j < whole; j += W) take(j, Load(row + j));
    }
    float max = Max(max_v);
    for (int64_t j = whole; j < k_len; ++j) max = Select(max < row[j], row[j], max);
    RowSum sum;
    if (max == minus_inf || std::isnan(max)) {
      sum.special = true;
      sum.value = masked_rows_zero && max == minus_inf ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      std::fill(row, row + panel_width, 0.0f);
      return sum;
    }
    Vec total_v = Vec{};
    const Vec max_all = Splat(max);
    for (int64_t j = 0; j < whole; j += W) {
      const Vec ev = ExpOfNonPositive(Load(row + j) - max_all);
      Store(row + j, ev);
      total_v += ev;
    }
    float total = Sum(total_v);
    for (int64_t j = whole; j < k_len; ++j) total += row[j] = Exp(row[j] - max);
    std::fill(row + k_len, row + panel_width, 0.0f);
    sum.value = 1.0f / total;
    return sum;
  }

  // Calls f(std::integral_constant<int, n>, first row) over `rows` (<= R) rows in register tiles of R, R / 2, ..., 1
  // rows: a query block's last rows still run several independent accumulator chains.
  template <typename F>
  [[gnu::always_inline]] static inline void ForTiles(int rows, F&& f) {
    int r = 0;
    if constexpr (R >= 8) for (; r + 8 <= rows; r += 8) f(std::integral_constant<int, 8>{}, r);
    if constexpr (R >= 4) for (; r + 4 <= rows; r += 4) f(std::integral_constant<int, 4>{}, r);
    for (; r + 2 <= rows; r += 2) f(std::integral_constant<int, 2>{}, r);
    for (; r < rows; ++r) f(std::integral_constant<int, 1>{}, r);
  }

  // Units [begin, end) of g.batch x g.heads x query blocks of `block` rows; `by_key_rows`: scores without a panel
  // (ScoresByKeyRows).
  [[gnu::always_inline]] static inline void Run(const AttentionGeometry& g, const AttentionAttributes& a,
                                                const float* q, const float* k, const float* v, const void* mask,
                                                float* out, int64_t block, bool by_key_rows, int64_t begin,
                                                int64_t end) {
    const int64_t blocks = (g.q_len + block - 1) / block;
    const int64_t panel_width = (g.k_len + 2 * W - 1) / (2 * W) * (2 * W);
    std::vector<float> panel(by_key_rows ? 0 : static_cast<size_t>(g.head_size * panel_width), 0.0f);
    std::vector<float> scores(static_cast<size_t>(R * panel_width));
    int64_t panel_of = -1;  // the (batch, head) whose K the panel holds
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t bh = unit / blocks, b = bh / g.heads, h = bh % g.heads;
      const int64_t first = unit % blocks * block, last = std::min(g.q_len, first + block);
      if (!by_key_rows && bh != panel_of) {  // K^T of this head, panel[d][j] = K[j][d]
        const float* k_head = k + b * g.k[0] + h * g.k[1];
        int64_t keys_done = 0;  // keys transposed W x W blocks at a time (features contiguous, whole vectors)
        if (g.k[3] == 1 && g.head_size % W == 0)
          for (; keys_done + W <= g.k_len; keys_done += W)
            for (int64_t d0 = 0; d0 < g.head_size; d0 += W)
              TransposeBlock(k_head + keys_done * g.k[2] + d0, g.k[2], panel.data() + d0 * panel_width + keys_done,
                             panel_width);
        for (int64_t j0 = keys_done; j0 < g.k_len; j0 += 16)  // the rest element by element, 16 x 16 tiles
          for (int64_t d0 = 0; d0 < g.head_size; d0 += 16) {
            const int64_t j1 = std::min(g.k_len, j0 + 16), d1 = std::min(g.head_size, d0 + 16);
            for (int64_t j = j0; j < j1; ++j)
              for (int64_t d = d0; d < d1; ++d) panel[d * panel_width + j] = k_head[j * g.k[2] + d * g.k[3]];
          }
        panel_of = bh;
      }
      const float* v_head = v + b * g.v[0] + h * g.v[1];
      for (int64_t i = first; i < last;) {
        const int rows = static_cast<int>(std::min<int64_t>(R, last - i));
        const float* q_rows[R];
        float* out_rows[R];
        for (int r = 0; r < rows; ++r) {
          q_rows[r] = q + b * g.q[0] + h * g.q[1] + (i + r) * g.q[2];
          out_rows[r] = out + b * g.out[0] + h * g.out[1] + (i + r) * g.out[2];
        }
        const float* k_head = k + b * g.k[0] + h * g.k[1];
        ForTiles(rows, [&](auto tile, int r) {
          constexpr int kRows = decltype(tile)::value;
          float* tile_scores = scores.data() + r * panel_width;
          if (by_key_rows)
            ScoresByKeyRows<kRows>(q_rows + r, k_head, g.k[2], g.k_len, g.head_size, panel_width, tile_scores);
          else
            Scores<kRows>(q_rows + r, g.q[3], panel.data(), panel_width, g.head_size, tile_scores);
        });
        RowSum sums[R];
        for (int r = 0; r < rows; ++r) {
          const int64_t mask_at = b * g.mask[0] + h * g.mask[1] + (i + r) * g.mask[2];
          sums[r] = Softmax(scores.data() + r * panel_width, g.k_len, panel_width, a.scale, g.has_mask ? mask : nullptr,
                            g.bool_mask, mask_at, g.mask[3], a.masked_rows_zero);
          if (sums[r].special)
            std::fill(out_rows[r], out_rows[r] + g.v_head_size, sums[r].value);
        }
        ForTiles(rows, [&](auto tile, int r) {
          Weighted<decltype(tile)::value>(scores.data() + r * panel_width, panel_width, v_head, g.v[2], g.k_len,
                                          g.v_head_size, sums + r, out_rows + r);
        });
        i += rows;
      }
    }
  }
};

using BlockedUnits = void (*)(const AttentionGeometry&, const AttentionAttributes&, const float*, const float*,
                              const float*, const void*, float*, int64_t, bool, int64_t, int64_t);

__attribute__((target("arch=x86-64-v4"))) void BlockedUnitsAvx512(
    const AttentionGeometry& g, const AttentionAttributes& a, const float* q, const float* k, const float* v,
    const void* mask, float* out, int64_t block, bool by_key_rows, int64_t begin, int64_t end) {
  BlockedAttention<Lanes16, 8>::Run(g, a, q, k, v, mask, out, block, by_key_rows, begin, end);
}

__attribute__((target("arch=x86-64-v3"))) void BlockedUnitsAvx2(
    const AttentionGeometry& g, const AttentionAttributes& a, const float* q, const float* k, const float* v,
    const void* mask, float* out, int64_t block, bool by_key_rows, int64_t begin, int64_t end) {
  BlockedAttention<Lanes8, 4>::Run(g, a, q, k, v, mask, out, block, by_key_rows, begin, end);
}

// The blocked kernel for this CPU and geometry with its vector width, or nullptr (the row kernel runs it); vectors
// of at most `max_lanes` floats.
BlockedUnits ChooseBlocked(const AttentionGeometry& g, int64_t max_lanes, int64_t& lanes) {
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (g.k_len == 0 || g.head_size == 0 || g.v[3] != 1 || g.out[3] != 1) return nullptr;
  // Fewer queries per head than kBlockedMinQueries: scores by key rows, which needs Q's and K's features contiguous
  // and a head size a multiple of the vector width too.
  const bool few = g.q_len < kBlockedMinQueries;
  if (few && (g.q[3] != 1 || g.k[3] != 1)) return nullptr;
  if (avx512 && max_lanes >= 16 && g.v_head_size % 16 == 0 && (!few || g.head_size % 16 == 0)) {
    lanes = 16;
    return BlockedUnitsAvx512;
  }
  if (avx2 && max_lanes >= 8 && g.v_head_size % 8 == 0 && (!few || g.head_size % 8 == 0)) {
    lanes = 8;
    return BlockedUnitsAvx2;
  }
  return nullptr;
}

// Runs the blocked kernel where it applies (see the file comment); false: the caller runs the row kernel.
bool RunBlockedAttention(const ThreadPool& pool, const AttentionGeometry& g, const AttentionAttributes& a,
                         const float* q, const float* k, const float* v, const void* mask, float* out,
                         int64_t max_lanes) {
  int64_t lanes = 0;
  const BlockedUnits units = ChooseBlocked(g, max_lanes, lanes);
  if (units == nullptr) return false;
  // Query blocks of whole register tiles, small enough that every thread gets several units, large enough that a
  // head's panel serves many rows (a thread's units are consecutive, so it transposes each head it meets once).
  const int64_t rows = lanes == 16 ? 8 : 4;
  const int64_t heads = g.batch * g.heads;
  const int64_t want_units = std::max<int64_t>(1, 4 * pool.num_threads());
  int64_t block = std::max<int64_t>(rows, (g.q_len * heads + want_units - 1) / want_units);
  block = std::min<int64_t>((block + rows - 1) / rows * rows, (g.q_len + rows - 1) / rows * rows);
  const int64_t count = heads * ((g.q_len + block - 1) / block);
  const bool by_key_rows = g.q_len < kBlockedMinQueries;
  pool.ParallelFor(count, 1, [&](int64_t begin, int64_t end) {
    units(g, a, q, k, v, mask, out, block, by_key_rows, begin, end);
  });
  return true;
}
#endif  // __x86_64__

template <typename T>
void RunAttention(const ThreadPool& pool, const AttentionGeometry& g, const AttentionAttributes& a, const T* q,
                  const T* k, const T* v, const void* mask, T* out) {
  const int64_t rows = g.batch * g.heads * g.q_len;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  pool.ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.k_len * g.head_size)),
                   [&](int64_t begin, int64_t end) {
    std::vector<float> scores(g.k_len), acc(g.v_head_size), query(g.head_size);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row % g.q_len, h = (row / g.q_len) % g.heads, b = row / (g.q_len * g.heads);
      const T* q_row = q + b * g.q[0] + h * g.q[1] + i * g.q[2];
      for (int64_t d = 0; d < g.head_size; ++d) query[d] = Widen(q_row[d * g.q[3]]);
      float max = minus_inf;
      for (int64_t j = 0; j < g.k_len; ++j) {
        const T* k_row = k + b * g.k[0] + h * g.k[1] + j * g.k[2];
        float dot = 0;
        if constexpr (std::is_same_v<T, float>) {
          if (g.k[3] == 1) dot = DotContiguous(query.data(), k_row, g.head_size);
          else for (int64_t d = 0; d < g.head_size; ++d) dot += query[d] * k_row[d * g.k[3]];
        } else {
          for (int64_t d = 0; d < g.head_size; ++d) dot += query[d] * Widen(k_row[d * g.k[3]]);
        }
        float s = a.scale * dot;
        if (g.has_mask) {
          const int64_t at = b * g.mask[0] + h * g.mask[1] + i * g.mask[2] + j * g.mask[3];
          if (g.bool_mask) s = static_cast<const bool*>(mask)[at] ? s : minus_inf;
          else s += Widen(static_cast<const T*>(mask)[at]);
        }
        scores[j] = s;
        max = std::max(max, s);
      }
      T* out_row = out + b * g.out[0] + h * g.out[1] + i * g.out[2];
      if (max == minus_inf || std::isnan(max)) {  // every score -inf (or NaN): softmax is NaN, or 0 when asked
        // No keys at all: the empty weighted sum is 0, as the unfused MatMul gives.
        const float fill = (a.masked_rows_zero && max == minus_inf) || g.k_len == 0
                               ? 0.0f : std::numeric_limits<float>::quiet_NaN();
        for (int64_t d = 0; d < g.v_head_size; ++d) out_row[d * g.out[3]] = Narrow<T>(fill);
        continue;
      }
      float sum = 0;
      for (int64_t j = 0; j < g.k_len; ++j) sum += scores[j] = std::exp(scores[j] - max);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < g.k_len; ++j) {
        const float p = scores[j] / sum;
        const T* v_row = v + b * g.v[0] + h * g.v[1] + j * g.v[2];
        if constexpr (std::is_same_v<T, float>) {
          if (g.v[3] == 1) {
            AxpyContiguous(p, v_row, acc.data(), g.v_head_size);
            continue;
          }
        }
        for (int64_t d = 0; d < g.v_head_size; ++d) acc[d] += p * Widen(v_row[d * g.v[3]]);
      }
      for (int64_t d = 0; d < g.v_head_size; ++d) out_row[d * g.out[3]] = Narrow<T>(acc[d]);
    }
  });
}

// The tensor the attention reads at `operand` (1: K, 2: V): the input itself, or in the cache-update form a copy of
// it with the updates scattered in along `axis` (ScatterElements' semantics), written to output `operand` -- the
// input's own buffer when the executor hands it over for an in-place update, so only the updates are written.
const Tensor& ReadCache(KernelContext& ctx, size_t operand, int64_t axis, Tensor& scratch) {
  const Tensor& cache = ctx.Input(operand);
  if (!UpdatesCache(ctx, operand)) return cache;
  const size_t first = operand == 1 ? kKeyIndicesInput : kValueIndicesInput;
  const Tensor& indices = ctx.Input(first);
  const Tensor& updates = ctx.Input(first + 1);
  CheckCacheUpdate(ctx.node(), operand == 1 ? "K" : "V", cache, indices, updates, axis);
  Tensor& out = ctx.NumOutputs() > operand ? ctx.Output(operand, cache.type(), cache.shape())
                                           : (scratch = Tensor::Allocate(cache.type(), cache.shape(), ctx.allocator()));
  if (out.raw_data() != cache.raw_data() && out.SizeInBytes() > 0)
    std::memcpy(out.raw_data(), cache.raw_data(), out.SizeInBytes());
  const Shape& at = indices.shape();
  const Shape& dims = cache.shape();
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const size_t element = SizeOf(cache.type());
  char* target = static_cast<char*>(out.raw_data());
  const char* source = static_cast<const char*>(updates.raw_data());
  int64_t coord[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    int64_t rest = i;
    for (int d = 3; d >= 0; --d) {
      coord[d] = rest % at[d];
      rest /= at[d];
    }
    coord[axis] = CacheIndex(ctx.node(), indices, i, dims[axis]);
    const int64_t offset = coord[0] * strides[0] + coord[1] * strides[1] + coord[2] * strides[2] + coord[3];
    std::memcpy(target + offset * element, source + i * element, element);
  }
  return out;
}

class Attention : public Kernel {
 public:
  explicit Attention(const KernelInfo& info) : attributes_(ReadAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& q = ctx.Input(0);
    const Tensor* mask = ctx.OptionalInput(3);
    Tensor k_scratch, v_scratch;
    const Tensor& k = ReadCache(ctx, 1, attributes_.k_axes[2], k_scratch);
    const Tensor& v = ReadCache(ctx, 2, attributes_.v_axes[2], v_scratch);
    const AttentionGeometry g = MakeAttentionGeometry(ctx.node(), attributes_, q, k, v, mask);
    Tensor& y = ctx.Output(0, q.type(), g.output_shape);
    if (y.NumElements() == 0) return;
    const void* mask_data = mask != nullptr ? mask->raw_data() : nullptr;
    if (q.type() == DataType::kFloat) {
#if defined(TESSERA_BLOCKED_ATTENTION)
      if (RunBlockedAttention(ctx.thread_pool(), g, attributes_, q.Data<float>() + g.q_offset,
                              k.Data<float>() + g.k_offset, v.Data<float>() + g.v_offset, mask_data, y.Data<float>(),
                              max_lanes_))
        return;
#endif
      RunAttention<float>(ctx.thread_pool(), g, attributes_, q.Data<float>() + g.q_offset,
                          k.Data<float>() + g.k_offset, v.Data<float>() + g.v_offset, mask_data, y.Data<float>());
    } else {
      RunAttention<Float16>(ctx.thread_pool(), g, attributes_, q.Data<Float16>() + g.q_offset,
                            k.Data<Float16>() + g.k_offset, v.Data<Float16>() + g.v_offset, mask_data,
                            y.Data<Float16>());
    }
  }

 private:
  AttentionAttributes attributes_;
  // The widest vectors the float32 path may use: TESSERA_CPU_ATTENTION_PATH = avx2 (8 floats) or rows (the row
  // kernel) in the environment when the kernel is created narrows it, so that tests and benches on an AVX-512 host
  // run the other paths too; otherwise the widest the CPU has.
  int64_t max_lanes_ = MaxLanesFromEnvironment();

  static int64_t MaxLanesFromEnvironment() {
    const char* path = std::getenv("TESSERA_CPU_ATTENTION_PATH");
    if (path == nullptr) return 16;
    if (std::strcmp(path, "rows") == 0) return 0;
    if (std::strcmp(path, "avx2") == 0) return 8;
    return 16;
  }
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry) {
  registry.Register<Attention>(AttentionKernelDef());
}

}  // namespace tessera::cpu
