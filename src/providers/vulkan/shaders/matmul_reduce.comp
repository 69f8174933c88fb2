#version 450
// The epilogue of a split-K matrix product (matmul.comp with splits > 1): c[b][i][j] = act(alpha * sum over s of
// partial[s][b][i][j] + beta * bias[i * bias_row + j * bias_col]) (+ addend[b][i][j]), one invocation per output
// element.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  FBuf partial; TBuf bias; TBuf c;
  uint total; uint N; uint MN; uint splits; float alpha; float beta; uint bias_row; uint bias_col; uint has_bias;
  uint act; float act_a; float act_b;
  uint has_addend; TBuf addend;
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.total) return;
  float v = 0.0;
  for (uint s = 0; s < p.splits; ++s) v += p.partial.v[s * p.total + i];
  v *= p.alpha;
  if (p.has_bias != 0u) {
    uint within = i % p.MN;
    v += p.beta * LOAD(p.bias, (within / p.N) * p.bias_row + (within % p.N) * p.bias_col);
  }
  v = Activate(v, p.act, p.act_a, p.act_b);
  if (p.has_addend != 0u) v += LOAD(p.addend, i);
  STORE(p.c, i, v);
}
