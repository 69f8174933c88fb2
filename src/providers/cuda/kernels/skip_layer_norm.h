// Launcher of the SkipLayerNormalization device kernel (skip_layer_norm.cu), kept out of the shared
// launch.h: plain types only, as there.
#pragma once

#include "providers/cuda/kernels/launch.h"

namespace tessera::cuda::launch {

// sum = (input + bias) + skip, output = (sum - mean) * rsqrt(var + epsilon) * gamma + beta per row of
// `hidden` elements. gamma, beta and bias hold `hidden` values of `type`; beta, bias and sum may be null.
// `index` (over the output's shape) maps input (its a_strides) and skip (b_strides) when they broadcast;
// null when both have the output's shape. `strict` rounds each addition to `type` (the unfused Adds'
// results) before the statistics; otherwise the sum stays in float32 until it is written.
struct SkipLayerNormArgs {
  ElementType type = ElementType::kFloat;
  const void* input = nullptr;
  const void* skip = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  const void* bias = nullptr;
  void* output = nullptr;
  void* sum = nullptr;
  int64_t rows = 0;
  int64_t hidden = 0;
  float epsilon = 1e-12f;
  const BroadcastIndex* index = nullptr;
  bool strict = false;
  // gamma, beta and bias are constants (initializers: no kernel on the stream writes them), so a kernel launched
  // as a programmatic dependent may read them before waiting for the kernels before it.
  bool constant_parameters = false;
  // Instead of `input` (which is then null): the sum of `partial_count` float32 arrays of rows x hidden values,
  // `partial_stride` elements apart -- a product's depth chunks (MatMulSkipLayerNormalization), added in float32.
  // Only the word kernel reads them (SkipLayerNormTakesPartials).
  const float* partials = nullptr;
  int partial_count = 0;
  int64_t partial_stride = 0;
};

// Whether SkipLayerNorm takes `args` with partials: default arithmetic, no broadcasting, rows of whole aligned
// 16-byte words (of the row type) that the word kernel holds.
bool SkipLayerNormTakesPartials(const SkipLayerNormArgs& args);

cudaError_t SkipLayerNorm(const SkipLayerNormArgs& args, cudaStream_t stream);

}  // namespace tessera::cuda::launch
