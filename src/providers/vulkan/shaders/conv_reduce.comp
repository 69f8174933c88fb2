#version 450
// The epilogue of a split-K convolution (conv2d.comp with splits > 1): y[n, k, pix] = act(sum over s of
// partial[s][k][n * pixels + pix] + bias[k] (+ residual)), one invocation per output element.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  FBuf partial; TBuf bias; TBuf residual; TBuf y;
  uint N; uint K; uint pixels; uint splits; uint act; float act_a; float act_b; uint flags;
} p;
void main() {
  uint i = FlatIndex();
  uint total = p.N * p.K * p.pixels;
  if (i >= total) return;
  uint pix = i % p.pixels, t = i / p.pixels;
  uint k = t % p.K, n = t / p.K;
  uint cols = p.N * p.pixels;
  uint col = n * p.pixels + pix;
  float v = 0.0;
  for (uint s = 0; s < p.splits; ++s) v += p.partial.v[(s * p.K + k) * cols + col];
  if ((p.flags & 1u) != 0u) v += LOAD(p.bias, k);
  if ((p.flags & 2u) != 0u) v += LOAD(p.residual, i);
  STORE(p.y, i, Activate(v, p.act, p.act_a, p.act_b));
}
