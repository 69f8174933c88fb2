#version 450
// ai.tessera::DepthwisePointwiseConv (graph/passes/depthwise_pointwise_fusion.h): Y = a(W_pw . a_dw(depthwise(X) +
// B_dw) + B_pw + Z), NCHW, as conv2d.comp's implicit product of a pointwise convolution whose B operand is the
// depthwise convolution's output, evaluated while it is staged: rows are the output channels, columns the output
// pixels of every image (n, oh, ow), depth the C channels. 64 x 64 tiles, 16 deep (coop_tile.glsl). For each slice an
// invocation loads the window taps of its column for its kPerInvocation channels (up to kTaps of them, with their
// depthwise weights and biases) into registers one slice ahead, and when the slice is staged it sums them into the
// depthwise value, adds the bias and applies a_dw; so the depthwise output never reaches memory. Windows of more than
// kTaps taps add the rest with loads at that point. Epilogue as conv2d.comp's (bias, a same-shape residual, the
// activation); with splits > 1 (split-K) raw float sums of depth chunk z go to `y` as [splits][K][N * OH * OW] and
// conv_reduce.comp applies the epilogue.
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf w_dw; TBuf b_dw; TBuf w_pw; TBuf bias; TBuf y; TBuf residual;
  uint N; uint C; uint H; uint W; uint K; uint OH; uint OW;
  uint window;     // R | S << 16
  uint strides;    // SH | SW << 16
  uint pads;       // top | left << 16
  uint dilations;  // DH | DW << 16
  uint acts;       // a | a_dw << 16 (common.glsl's activation codes)
  float act_a; float act_b; float dw_a; float dw_b;
  uint flags;      // 1: B_pw, 2: residual (Y's shape), 8: B_dw
  uint splits;
} p;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Partials { float v[]; };

#include "coop_tile.glsl"

// Window taps held in registers per staged element (a 3 x 3 window).
const uint kTaps = 9u;

// What an invocation loads for one slice: per staged element (channel) the taps of its column and their weights.
struct Taps {
  float x[kPerInvocation][kTaps], w[kPerInvocation][kTaps];
  float bias[kPerInvocation];
};

// This invocation's column: its image's first input element and, per tap t < kTaps, the tap's offset in a channel's
// plane, or -1 where the tap falls in the padding.
struct Column {
  bool ok;
  uint x_base;
  int ih0, iw0;
  int offset[kTaps];
};

uint Low(uint v) { return v & 0xffffu; }
uint High(uint v) { return v >> 16u; }

// Element e = tid + 256 i of the slice at depth k0: the pointwise weight of output channel row0 + e / TILE_K at
// depth e % TILE_K, and for channel k0 + e / 64 the taps of this invocation's column. Zeros past the edges.
void LoadSlice(uint k0, uint k_end, uint row0, uint tid, Column col, out float ra[kPerInvocation], out Taps taps) {
  uint taps_n = min(Low(p.window) * High(p.window), kTaps);
  uint plane = p.H * p.W, window = Low(p.window) * High(p.window);
  for (uint i = 0u; i < kPerInvocation; ++i) {
    uint e = tid + 256u * i;
    uint gr = row0 + e / TILE_K, gk = k0 + e % TILE_K;
    ra[i] = (gr < p.K && gk < k_end) ? LOAD(p.w_pw, gr * p.C + gk) : 0.0;
    uint c = k0 + e / 64u;
    bool live = c < k_end && col.ok;
    taps.bias[i] = (live && (p.flags & 8u) != 0u) ? LOAD(p.b_dw, c) : 0.0;
    for (uint t = 0u; t < kTaps; ++t) {
      bool use = live && t < taps_n && col.offset[t] >= 0;
      taps.x[i][t] = use ? LOAD(p.x, col.x_base + c * plane + uint(col.offset[t])) : 0.0;
      taps.w[i][t] = use ? LOAD(p.w_dw, c * window + t) : 0.0;
    }
  }
}

// The depthwise value of staged element i (channel c of this invocation's column): the held taps, the taps past
// kTaps loaded now, the bias, a_dw.
float Depthwise(Taps taps, uint i, uint c, Column col, bool live) {
  if (!live) return 0.0;
  float v = taps.bias[i];
  for (uint t = 0u; t < kTaps; ++t) v += taps.x[i][t] * taps.w[i][t];
  uint R = Low(p.window), S = High(p.window), window = R * S;
  for (uint t = kTaps; t < window; ++t) {
    uint r = t / S, s = t - r * S;
    int ih = col.ih0 + int(r * Low(p.dilations)), iw = col.iw0 + int(s * High(p.dilations));
    if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))
      v += LOAD(p.x, col.x_base + c * p.H * p.W + uint(ih) * p.W + uint(iw)) * LOAD(p.w_dw, c * window + t);
  }
  return Activate(v, High(p.acts), p.dw_a, p.dw_b);
}

void main() {
  uint split = gl_WorkGroupID.z;
  uint pixels = p.OH * p.OW;
  uint cols = p.N * pixels;
  uint row0 = gl_WorkGroupID.y * 64, col0 = gl_WorkGroupID.x * 64;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16 + tx;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  // This invocation's B column is the same in every slice: its image, window origin and taps, computed once.
  uint my_col = col0 + tid % 64;
  Column column;
  column.ok = my_col < cols;
  uint n = column.ok ? my_col / pixels : 0u, pix = column.ok ? my_col % pixels : 0u;
  uint oh = pix / p.OW, ow = pix % p.OW;
  column.ih0 = int(oh * Low(p.strides)) - int(Low(p.pads));
  column.iw0 = int(ow * High(p.strides)) - int(High(p.pads));
  column.x_base = n * p.C * p.H * p.W;
  uint S = High(p.window);
  for (uint t = 0u; t < kTaps; ++t) {
    uint r = t / max(S, 1u), s = t - r * max(S, 1u);
    int ih = column.ih0 + int(r * Low(p.dilations)), iw = column.iw0 + int(s * High(p.dilations));
    bool inside = ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W);
    column.offset[t] = inside ? ih * int(p.W) + iw : -1;
  }
  // Depth chunk of this split (whole slices).
  uint chunk = ((p.C + p.splits * TILE_K - 1u) / (p.splits * TILE_K)) * TILE_K;
  uint k_begin = split * chunk, k_end = min(p.C, k_begin + chunk);
  TILE_BEGIN();
  float ra[kPerInvocation];
  Taps taps;
  uint k0 = k_begin;
  if (k0 < k_end) LoadSlice(k0, k_end, row0, tid, column, ra, taps);
  for (; k0 < k_end; k0 += TILE_K) {
    for (uint i = 0u; i < kPerInvocation; ++i) {
      uint e = tid + 256u * i;
      uint c = k0 + e / 64u;
      PUT_A(e % TILE_K, e / TILE_K, ra[i]);
      PUT_B(e / 64u, tid % 64u, Depthwise(taps, i, c, column, c < k_end && column.ok));
    }
    barrier();
    if (k0 + TILE_K < k_end) LoadSlice(k0 + TILE_K, k_end, row0, tid, column, ra, taps);
    TILE_PRODUCT(acc, tx, ty);
    barrier();
  }
  TILE_END(acc, tx, ty);
  if (p.splits > 1u) {  // raw sums of this depth chunk
    Partials partial = Partials(p.y);
    for (int i = 0; i < 4; ++i) {
      uint r = row0 + ty + 16 * i;
      if (r >= p.K) continue;
      for (int j = 0; j < 4; ++j) {
        uint col = col0 + tx + 16 * j;
        if (col < cols) partial.v[(split * p.K + r) * cols + col] = acc[i][j];
      }
    }
    return;
  }
  uint col_base[4];
  for (int j = 0; j < 4; ++j) {
    uint col = col0 + tx + 16 * j;
    uint image = col / pixels;
    col_base[j] = image * p.K * pixels + (col - image * pixels);
  }
  for (int i = 0; i < 4; ++i) {
    uint k = row0 + ty + 16 * i;
    if (k >= p.K) continue;
    float b = (p.flags & 1u) != 0u ? LOAD(p.bias, k) : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint col = col0 + tx + 16 * j;
      if (col >= cols) continue;
      uint out_index = col_base[j] + k * pixels;
      float v = acc[i][j] + b;
      if ((p.flags & 2u) != 0u) v += LOAD(p.residual, out_index);
      STORE(p.y, out_index, Activate(v, Low(p.acts), p.act_a, p.act_b));
    }
  }
}
