// ai.tessera::Attention on FMA units (the fallback of attention_mma.cu's tensor-core kernel): one block of 16 warps per (batch, head, tile of 16 queries,
// chunk of up to 128 value features). Keys and values stream through shared memory in tiles; every warp keeps
// one query row and its running softmax (maximum, sum, weighted values in registers: one value
// feature per lane and 32-feature slice) across the tiles, so scores never reach global memory. Float32
// arithmetic throughout; float16 operands are widened on load and the output rounded once.
#include <cfloat>
#include <cmath>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::kWarp;
using device::ToFloat;

constexpr int kWarps = 16;  // one query row each: enough warps per SM to hide shared-memory latency
constexpr int kMaxRowsPerWarp = 4;
constexpr int kChunk = 128;                       // value features per block (4 per lane)
constexpr int kSlices = kChunk / kWarp;           // 4
constexpr int kMaxTile = 64;                      // keys per shared-memory tile (2 per lane)
constexpr size_t kSharedBudget = 48 * 1024;

struct Layout {
  int rows_per_warp;  // query rows per warp (1..4)
  int tile;           // keys per tile (1..64)
  int k_stride;       // floats per key row in shared memory (head_size rounded to odd: no bank conflicts)
};

size_t SharedBytes(const AttentionArgs& a, const Layout& l) {
  const size_t q = static_cast<size_t>(kWarps) * l.rows_per_warp * a.head_size;
  const size_t kv = static_cast<size_t>(l.tile) * (l.k_stride + kChunk);
  return (q + kv) * sizeof(float);
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
__global__ void AttentionKernel(AttentionArgs a, Layout l) {
  extern __shared__ float shared[];
  const int rows_per_block = kWarps * l.rows_per_warp;
  float* q_rows = shared;                                        // [rows_per_block][head_size]
  float* k_tile = q_rows + rows_per_block * a.head_size;         // [tile][k_stride]
  float* v_tile = k_tile + l.tile * l.k_stride;                  // [tile][kChunk]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t q_tiles = (a.q_len + rows_per_block - 1) / rows_per_block;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t b = bh / a.heads, h = bh % a.heads;
  const int64_t first_row = static_cast<int64_t>(blockIdx.x % q_tiles) * rows_per_block;
  const int64_t chunk = static_cast<int64_t>(blockIdx.z) * kChunk;
  const int chunk_width = static_cast<int>(a.v_head_size - chunk < kChunk ? a.v_head_size - chunk : kChunk);
  const T* q = static_cast<const T*>(a.q) + b * a.q_strides[0] + h * a.q_strides[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_strides[0] + h * a.k_strides[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_strides[0] + h * a.v_strides[1];

  for (int idx = threadIdx.x; idx < rows_per_block * a.head_size; idx += blockDim.x) {
    const int r = idx / a.head_size, d = idx % a.head_size;
    const int64_t i = first_row + r;
    q_rows[idx] = i < a.q_len ? ToFloat(q[i * a.q_strides[2] + d * a.q_strides[3]]) : 0.0f;
  }
  float row_max[kMaxRowsPerWarp], row_sum[kMaxRowsPerWarp], acc[kMaxRowsPerWarp][kSlices];
#pragma unroll
  for (int r = 0; r < kMaxRowsPerWarp; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
    for (int t = 0; t < kSlices; ++t) acc[r][t] = 0.0f;
  }
  for (int64_t j0 = 0; j0 < a.k_len; j0 += l.tile) {
    const int tile = static_cast<int>(a.k_len - j0 < l.tile ? a.k_len - j0 : l.tile);
    __syncthreads();  // the previous tile has been used (and, at the first, q_rows are written)
    for (int idx = threadIdx.x; idx < tile * a.head_size; idx += blockDim.x) {
      const int j = idx / a.head_size, d = idx % a.head_size;
      k_tile[j * l.k_stride + d] = ToFloat(k[(j0 + j) * a.k_strides[2] + d * a.k_strides[3]]);
    }
    for (int idx = threadIdx.x; idx < tile * chunk_width; idx += blockDim.x) {
      const int j = idx / chunk_width, c = idx % chunk_width;
      v_tile[j * kChunk + c] = ToFloat(v[(j0 + j) * a.v_strides[2] + (chunk + c) * a.v_strides[3]]);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kMaxRowsPerWarp; ++r) {
      if (r >= l.rows_per_warp) break;
      const int row_in_block = warp * l.rows_per_warp + r;
      const int64_t i = first_row + row_in_block;
      if (i >= a.q_len) break;  // uniform across the warp
      const float* q_row = q_rows + row_in_block * a.head_size;
      float s[2];
      float tile_max = -INFINITY;
      for (int t = 0; t < 2; ++t) {
        const int j = lane + t * kWarp;
        s[t] = -INFINITY;
        if (j >= tile) continue;
        const float* k_row = k_tile + j * l.k_stride;
        float dot = 0.0f;
        for (int d = 0; d < a.head_size; ++d) dot = fmaf(q_row[d], k_row[d], dot);
        float score = a.scale * dot;
        if (a.mask != nullptr) {
          const int64_t at = b * a.mask_strides[0] + h * a.mask_strides[1] + i * a.mask_strides[2] +
                             (j0 + j) * a.mask_strides[3];
          if (a.bool_mask) score = static_cast<const bool*>(a.mask)[at] ? score : -INFINITY;
          else score += ToFloat(static_cast<const T*>(a.mask)[at]);
        }
        s[t] = score;
        tile_max = fmaxf(tile_max, score);
      }
      tile_max = WarpMax(tile_max);
      const float new_max = fmaxf(row_max[r], tile_max);
      if (new_max == -INFINITY) continue;  // every key so far masked: nothing to add
      const float correction = __expf(row_max[r] - new_max);  // 0 while the row had no unmasked key
      float p[2];
      for (int t = 0; t < 2; ++t) p[t] = s[t] == -INFINITY ? 0.0f : __expf(s[t] - new_max);
      row_sum[r] = row_sum[r] * correction + WarpSum(p[0] + p[1]);
      for (int t = 0; t < kSlices; ++t) acc[r][t] *= correction;
      for (int j = 0; j < tile; ++j) {
        const float pj = __shfl_sync(0xffffffffu, j < kWarp ? p[0] : p[1], j % kWarp);
        const float* v_row = v_tile + j * kChunk;
        for (int t = 0; t < kSlices; ++t) acc[r][t] = fmaf(pj, v_row[lane + t * kWarp], acc[r][t]);
      }
      row_max[r] = new_max;
    }
  }
  T* out = static_cast<T*>(a.out) + b * a.out_strides[0] + h * a.out_strides[1];
#pragma unroll
  for (int r = 0; r < kMaxRowsPerWarp; ++r) {
    if (r >= l.rows_per_warp) break;
    const int64_t i = first_row + warp * l.rows_per_warp + r;
    if (i >= a.q_len) break;
    const bool empty = row_sum[r] == 0.0f;  // every key masked (or no keys: the empty sum)
    const float fill = a.masked_rows_zero || a.k_len == 0 ? 0.0f : NAN;
    for (int t = 0; t < kSlices; ++t) {
      const int c = lane + t * kWarp;
      if (c >= chunk_width) continue;
      const float value = empty ? fill : acc[r][t] / row_sum[r];
      out[i * a.out_strides[2] + (chunk + c) * a.out_strides[3]] = FromFloat<T>(value);
    }
  }
}

}  // namespace

cudaError_t Attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.batch * a.heads * a.q_len * a.v_head_size == 0) return cudaSuccess;
  // A few queries over a few keys (a decoder's step over a short cache): the FMA kernel's single pass is
  // quicker than the tensor-core kernel's staging (tessera_attention_kernels: 6.7 against 7.8-9.7 us at one
  // query and 17 keys, 28-56 against 132 us at 1024 keys).
  if (AttentionOneQueryFits(a)) return AttentionOneQuery(a, stream);
  const bool small = a.q_len <= 4 && a.k_len <= 64;
  if (!small && AttentionFlashFits(a)) return AttentionFlash(a, stream);
  if (!small && AttentionOnTensorCoresFits(a)) return AttentionOnTensorCores(a, stream);
  return AttentionOnFmaUnits(a, stream);
}

cudaError_t AttentionOnFmaUnits(const AttentionArgs& a, cudaStream_t stream) {
  if (a.batch * a.heads * a.q_len * a.v_head_size == 0) return cudaSuccess;
  Layout l{1, kMaxTile, static_cast<int>(a.head_size | 1)};
  while (SharedBytes(a, l) > kSharedBudget && l.tile > 8) l.tile /= 2;
  while (SharedBytes(a, l) > kSharedBudget && l.tile > 1) l.tile /= 2;
  if (SharedBytes(a, l) > kSharedBudget) return cudaErrorInvalidConfiguration;
  const int64_t rows_per_block = kWarps * l.rows_per_warp;
  const int64_t blocks = (a.q_len + rows_per_block - 1) / rows_per_block * a.batch * a.heads;
  const int64_t chunks = (a.v_head_size + kChunk - 1) / kChunk;
  if (blocks > 2147483647 || chunks > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(chunks));
  const size_t shared = SharedBytes(a, l);
  if (a.type == ElementType::kFloat)
    AttentionKernel<float><<<grid, kWarps * kWarp, shared, stream>>>(a, l);
  else
    AttentionKernel<__half><<<grid, kWarps * kWarp, shared, stream>>>(a, l);
  return cudaGetLastError();
}

}  // namespace tessera::cuda::launch
