#include "providers/cpu/nn/tiling_conv_transpose.h"

#include <cstring>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/common/target_clones.h"

namespace tessera::cpu {
namespace {

using Vec16 = float __attribute__((vector_size(64)));

// Load and Store pass 64-byte vectors by value; they are inlined into each target clone of PatternedRow, so no
// call crosses the ABI GCC warns about for the baseline target.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

[[gnu::always_inline]] inline Vec16 Load(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void Store(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }

// Outputs [a[0], b[0], a[1], b[1], ...]: the first 16 in `lo`, the next 16 in `hi`.
[[gnu::always_inline]] inline void Interleave(Vec16 a, Vec16 b, Vec16& lo, Vec16& hi) {
  lo = __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  hi = __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

// Output positions [i, i + 16 * V) of one row (see TiledRow), V vectors of 16 input positions at a time.
template <int KW, int V>
[[gnu::always_inline]] inline void TiledBlock(const float* x, int64_t x_stride, const float* taps, int64_t tap_stride,
                                              int64_t channels, float bias, float* y) {
  Vec16 acc[KW][V];
  for (int k = 0; k < KW; ++k)
    for (int v = 0; v < V; ++v) acc[k][v] = Vec16{} + bias;
  for (int64_t c = 0; c < channels; ++c, x += x_stride, taps += tap_stride) {
    Vec16 xv[V];
    for (int v = 0; v < V; ++v) xv[v] = Load(x + 16 * v);
    for (int k = 0; k < KW; ++k)
      for (int v = 0; v < V; ++v) acc[k][v] += xv[v] * taps[k];
  }
  for (int v = 0; v < V; ++v, y += 16 * KW) {
    if constexpr (KW == 1) {
      Store(y, acc[0][v]);
    } else if constexpr (KW == 2) {
      Vec16 lo, hi;
      Interleave(acc[0][v], acc[1][v], lo, hi);
      Store(y, lo);
      Store(y + 16, hi);
    } else {  // KW == 4: interleaving (0, 2) with (1, 3) puts the four taps of each position together
      Vec16 e_lo, e_hi, o_lo, o_hi, r0, r1, r2, r3;
      Interleave(acc[0][v], acc[2][v], e_lo, e_hi);
      Interleave(acc[1][v], acc[3][v], o_lo, o_hi);
      Interleave(e_lo, o_lo, r0, r1);
      Interleave(e_hi, o_hi, r2, r3);
      Store(y, r0);
      Store(y + 16, r1);
      Store(y + 32, r2);
      Store(y + 48, r3);
    }
  }
}

// One output row of one output channel and one tap row, for kernel width KW (1, 2 or 4) on the last axis:
//   y[iw * KW + k] = bias + sum over c < channels of x[c * x_stride + iw] * taps[c * tap_stride + k].
// Per input channel, vector loads of the inputs and KW broadcast taps feed KW FMAs per vector into registers; the
// KW results are interleaved into the output on the way out.
template <int KW>
[[gnu::always_inline]] inline void TiledRow(const float* x, int64_t x_stride, const float* taps, int64_t tap_stride,
                                            int64_t channels, float bias, float* y, int64_t in_width) {
  int64_t i = 0;
  for (; i + 32 <= in_width; i += 32) TiledBlock<KW, 2>(x + i, x_stride, taps, tap_stride, channels, bias, y + i * KW);
  for (; i + 16 <= in_width; i += 16) TiledBlock<KW, 1>(x + i, x_stride, taps, tap_stride, channels, bias, y + i * KW);
  for (; i < in_width; ++i)
    for (int k = 0; k < KW; ++k) {
      float a = bias;
      for (int64_t c = 0; c < channels; ++c) a += x[c * x_stride + i] * taps[c * tap_stride + k];
      y[i * KW + k] = a;
    }
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void TiledRow1(const float* x, int64_t xs, const float* t, int64_t ts, int64_t c, float b, float* y, int64_t w) {
  TiledRow<1>(x, xs, t, ts, c, b, y, w);
}
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void TiledRow2(const float* x, int64_t xs, const float* t, int64_t ts, int64_t c, float b, float* y, int64_t w) {
  TiledRow<2>(x, xs, t, ts, c, b, y, w);
}
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void TiledRow4(const float* x, int64_t xs, const float* t, int64_t ts, int64_t c, float b, float* y, int64_t w) {
  TiledRow<4>(x, xs, t, ts, c, b, y, w);
}
#pragma GCC diagnostic pop

// Any other kernel width, unvectorized.
void GenericRow(const float* x, int64_t x_stride, const float* taps, int64_t tap_stride, int64_t channels, int64_t kw,
                float bias, float* y, int64_t in_width) {
  for (int64_t j = 0; j < in_width * kw; ++j) y[j] = bias;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < in_width; ++i) {
      const float v = x[c * x_stride + i];
      for (int64_t k = 0; k < kw; ++k) y[i * kw + k] += v * taps[c * tap_stride + k];
    }
}

}  // namespace

// Measured against oneDNN 2.6's deconvolution (AVX-512 host, 2 threads, kernel 2x2 stride 2, ms per run, steady):
//   C_in -> C_out, input       tiling   oneDNN          C_in -> C_out, input       tiling   oneDNN
//   24 -> 1,   320x320          0.18     0.80           64 -> 64,  64x64            1.39     1.71
//   24 -> 24,  160x160          0.84     5.57           128 -> 64, 64x64            2.90     2.22
//   32 -> 32,  128x128          1.13     2.97           256 -> 128, 32x32           2.81     1.50
//   64 -> 32,  80x80            0.56     1.41           512 -> 256, 16x16           4.78     1.20
// Past 64 input channels per group oneDNN's register blocking over output channels wins; below, the direct loop
// wins and skips oneDNN's first-use kernel generation (first run of the 24 -> 1 case: 1.2 -> 0.5 ms, of a session
// that prepares it at creation: 32 -> 7 ms).
constexpr int64_t kMaxTilingInputChannels = 64;

bool UseTilingConvTranspose(const ConvTransposeShapes& s) {
  if (s.rank() == 0 || s.in_channels / s.group > kMaxTilingInputChannels) return false;
  for (size_t d = 0; d < s.rank(); ++d)
    if (s.strides[d] != s.kernel[d] || s.dilations[d] != 1 || s.pad_begin[d] != 0 || s.pad_end[d] != 0) return false;
  return true;
}

void TilingConvTranspose(const ConvTransposeShapes& s, const float* x, const float* w, const float* bias,
                         const FusedActivation& activation, float* y, const ThreadPool& pool) {
  const size_t last = s.rank() - 1;
  const int64_t in_width = s.input[last], kw = s.kernel[last], out_width = in_width * kw;
  int64_t in_rows = 1, taps = 1;  // over the spatial axes before the last
  for (size_t d = 0; d < last; ++d) {
    in_rows *= s.input[d];
    taps *= s.kernel[d];
  }
  const int64_t in_plane = in_rows * in_width, out_plane = in_plane * taps * kw, k_size = taps * kw;
  const int64_t icg = s.in_channels / s.group, ocg = s.out_channels / s.group;
  // One task per (image, group, input row): the taps x output-channel rows of the output it reaches.
  pool.ParallelFor(s.batch * s.group * in_rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t row = task % in_rows, g = task / in_rows % s.group, n = task / (in_rows * s.group);
      const float* x_row = x + (n * s.in_channels + g * icg) * in_plane + row * in_width;
      for (int64_t t = 0; t < taps; ++t) {
        // Axis d before the last: input position i_d with tap t_d lands on output position i_d * k_d + t_d.
        int64_t out_row = 0, scale = 1;
        for (int64_t d = static_cast<int64_t>(last) - 1, r = row, tr = t; d >= 0; --d) {
          out_row += (r % s.input[d] * s.kernel[d] + tr % s.kernel[d]) * scale;
          scale *= s.output[d];
          r /= s.input[d];
          tr /= s.kernel[d];
        }
        for (int64_t oc = 0; oc < ocg; ++oc) {
          const int64_t channel = g * ocg + oc;
          float* y_row = y + (n * s.out_channels + channel) * out_plane + out_row * out_width;
          const float b = bias ? bias[channel] : 0.f;
          // W[g * icg + c, oc, t, k] is w_taps[c * tap_stride + k].
          const float* w_taps = w + (g * icg * ocg + oc) * k_size + t * kw;
          const int64_t tap_stride = ocg * k_size;
          switch (kw) {
            case 1: TiledRow1(x_row, in_plane, w_taps, tap_stride, icg, b, y_row, in_width); break;
            case 2: TiledRow2(x_row, in_plane, w_taps, tap_stride, icg, b, y_row, in_width); break;
            case 4: TiledRow4(x_row, in_plane, w_taps, tap_stride, icg, b, y_row, in_width); break;
            default: GenericRow(x_row, in_plane, w_taps, tap_stride, icg, kw, b, y_row, in_width);
          }
          if (activation.kind != FusedActivation::Kind::kNone) ApplyActivation(activation, y_row, out_width);
        }
      }
    }
  });
}

}  // namespace tessera::cpu
