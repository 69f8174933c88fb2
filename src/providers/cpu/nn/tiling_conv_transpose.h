// Transposed convolutions whose kernel tiles the output: stride == kernel on every spatial axis, no dilation, no
// pads (the 2x2 stride-2 "learned upsampling" of detectors, segmenters and U-Nets). Each input position then owns
// its own kernel-sized block of the output, so
//   Y[n, oc, i * k + t] = B[oc] + sum over ic of X[n, ic, i] * W[ic, oc, t]
// with no overlap to accumulate. This runs as plain vector code, no oneDNN primitive: oneDNN's deconvolution
// builds its kernels (or its GEMM's) on first use, which cost 10-20 ms per shape on the first run, and its
// blocked path pays reorders in and out.
#pragma once

#include "tessera/ep/conv_transpose_geometry.h"
#include "tessera/ep/fused_activation.h"
#include "tessera/ep/thread_pool.h"

namespace tessera::cpu {

// True when `s` is such a geometry and the channels are few enough that the direct loop beats oneDNN's
// JIT deconvolution in steady state (measured: see the .cc).
bool UseTilingConvTranspose(const ConvTransposeShapes& s);

// Y = activation(ConvTranspose(X, W, B)) for a geometry UseTilingConvTranspose accepts. X is [N, C_in, input...],
// W is [C_in, C_out / group, kernel...], `bias` (may be null) is [C_out], Y is [N, C_out, output...], all dense
// float32. The activation is applied to each output row as it is written.
void TilingConvTranspose(const ConvTransposeShapes& s, const float* x, const float* w, const float* bias,
                         const FusedActivation& activation, float* y, const ThreadPool& pool);

}  // namespace tessera::cpu
