// ai.tessera::Attention for one query per (batch, head) -- a decoding step over its key/value cache -- in one block
// per (batch, head): the threads take a key each for the scores (one key row read as consecutive 16-byte words, all
// loads issued before the products), the block normalizes them in shared memory, then the threads take a pair of
// value features each and accumulate over the keys (value rows read coalesced, several rows in flight). The tiled kernels (attention.cu, attention_mma.cu) stage tiles of keys for many
// queries; for one query over a cache of ~100-4000 keys that staging is most of their time (14 us against ~3 us
// for GPT-2's 12 heads x 144 keys, measured with ncu on the H100).
#include <cfloat>
#include <cmath>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::kWarp;
using device::ToFloat;

constexpr int kThreads = 256;

__device__ __forceinline__ float BlockReduce(float v, bool is_max, float* scratch) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  if (threadIdx.x % kWarp == 0) scratch[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < kThreads / kWarp; ++w) total = is_max ? fmaxf(total, scratch[w]) : total + scratch[w];
  __syncthreads();  // scratch is reused by the next reduction
  return total;
}

// q . k over `head` features of one key row. `contiguous`: the row's features are adjacent and 16-byte aligned; all
// of its words are then loaded before any is used, so their latencies overlap.
template <typename T, bool kContiguous>
__device__ __forceinline__ float Dot(const float* q, const T* row, int64_t stride, int head) {
  float dot = 0.0f;
  if constexpr (kContiguous) {
    constexpr int kPerWord = 16 / sizeof(T);
    constexpr int kMaxWords = kMaxOneQueryHead / kPerWord;
    const int words = head / kPerWord;
    const uint4* source = reinterpret_cast<const uint4*>(row);
    uint4 buffer[kMaxWords];
#pragma unroll
    for (int w = 0; w < kMaxWords; ++w)
      if (w < words) buffer[w] = source[w];
#pragma unroll
    for (int w = 0; w < kMaxWords; ++w) {
      if (w >= words) break;
      const T* values = reinterpret_cast<const T*>(&buffer[w]);
#pragma unroll
      for (int e = 0; e < kPerWord; ++e) dot = fmaf(q[w * kPerWord + e], ToFloat(values[e]), dot);
    }
  } else {
    for (int d = 0; d < head; ++d) dot = fmaf(q[d], ToFloat(row[d * stride]), dot);
  }
  return dot;
}

// Two adjacent features of a value row (`pairs`: adjacent and aligned for one 4- or 8-byte load), or one.
template <typename T, bool kPairs>
__device__ __forceinline__ float2 LoadPair(const T* at) {
  if constexpr (kPairs && sizeof(T) == 2) return __half22float2(*reinterpret_cast<const __half2*>(at));
  else if constexpr (kPairs) return *reinterpret_cast<const float2*>(at);
  else return make_float2(ToFloat(at[0]), 0.0f);
}

constexpr int kRowsInFlight = 8;  // value rows each thread loads before using any

// The cache-update form: block (b, h) writes the updates of its (batch, head) into the cache (K or V, strides along
// (batch, heads, position, feature)) at the positions the indices give, as ScatterElements along the position axis
// does; indices outside the cache are skipped (the device cannot report them).
template <typename T>
__device__ __forceinline__ void WriteCacheRows(const AttentionArgs::CacheUpdate& u, void* cache,
                                               const int64_t* cache_strides, int64_t positions, int64_t b, int64_t h) {
  if (u.updates == nullptr || b >= u.dims[0] || h >= u.dims[1]) return;
  const int64_t n = u.dims[2] * u.dims[3];
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    const int64_t row = e / u.dims[3], feature = e % u.dims[3];
    const int64_t at = b * u.strides[0] + h * u.strides[1] + row * u.strides[2] + feature * u.strides[3];
    int64_t position = u.int64_indices ? static_cast<const int64_t*>(u.indices)[at]
                                       : static_cast<int64_t>(static_cast<const int32_t*>(u.indices)[at]);
    if (position < 0) position += positions;
    if (position < 0 || position >= positions) continue;
    static_cast<T*>(cache)[b * cache_strides[0] + h * cache_strides[1] + position * cache_strides[2] +
                           feature * cache_strides[3]] = static_cast<const T*>(u.updates)[at];
  }
}

template <typename T, bool kContiguous, bool kPairs>
__global__ void OneQueryKernel(AttentionArgs a) {
  __shared__ float q[kMaxOneQueryHead];
  __shared__ float p[kMaxOneQueryKeys];
  __shared__ float scratch[kThreads / kWarp];
  __shared__ float2 partial[kThreads];
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t b = blockIdx.x / a.heads, h = blockIdx.x % a.heads;
  // The block's cache rows first; the __syncthreads below makes them visible to the block's reads.
  WriteCacheRows<T>(a.k_update, const_cast<void*>(a.k), a.k_strides, a.k_len, b, h);
  WriteCacheRows<T>(a.v_update, const_cast<void*>(a.v), a.v_strides, a.k_len, b, h);
  const int head = static_cast<int>(a.head_size), v_head = static_cast<int>(a.v_head_size);
  const int keys = static_cast<int>(a.k_len);
  const T* query = static_cast<const T*>(a.q) + b * a.q_strides[0] + h * a.q_strides[1];
  for (int d = threadIdx.x; d < head; d += kThreads) q[d] = a.scale * ToFloat(query[d * a.q_strides[3]]);
  __syncthreads();

  const T* k = static_cast<const T*>(a.k) + b * a.k_strides[0] + h * a.k_strides[1];
  float local_max = -INFINITY;
  for (int j = threadIdx.x; j < keys; j += kThreads) {
    float score = Dot<T, kContiguous>(q, k + j * a.k_strides[2], a.k_strides[3], head);
    if (a.mask != nullptr) {
      const int64_t at = b * a.mask_strides[0] + h * a.mask_strides[1] + j * a.mask_strides[3];
      if (a.bool_mask) score = static_cast<const bool*>(a.mask)[at] ? score : -INFINITY;
      else score += ToFloat(static_cast<const T*>(a.mask)[at]);
    }
    p[j] = score;
    local_max = fmaxf(local_max, score);
  }
  const float max = BlockReduce(local_max, true, scratch);
  T* out = static_cast<T*>(a.out) + b * a.out_strides[0] + h * a.out_strides[1];
  if (max == -INFINITY) {  // every key masked (or none): zeros behind the NaN guard, else NaN as softmax gives
    for (int c = threadIdx.x; c < v_head; c += kThreads)
      out[c * a.out_strides[3]] = FromFloat<T>(a.masked_rows_zero || keys == 0 ? 0.0f : NAN);
    return;
  }
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < keys; j += kThreads) {
    const float e = p[j] == -INFINITY ? 0.0f : __expf(p[j] - max);
    p[j] = e;
    local_sum += e;
  }
  const float sum = BlockReduce(local_sum, false, scratch);  // its barriers also publish p

  // Value features, two per thread where they are adjacent: `width` threads per group (the row's items rounded up to
  // a warp), the groups taking every groups-th key; unrolled so that several rows' loads are in flight at once.
  const int items = kPairs ? (v_head + 1) / 2 : v_head;
  const int width = (items + kWarp - 1) / kWarp * kWarp;
  const int groups = kThreads / width;
  const int group = threadIdx.x / width, c = threadIdx.x % width;
  const int64_t feature = kPairs ? 2 * c : c;
  const T* v = static_cast<const T*>(a.v) + b * a.v_strides[0] + h * a.v_strides[1] + feature * a.v_strides[3];
  float2 acc = make_float2(0.0f, 0.0f);
  if (group < groups && c < items) {
    for (int j0 = group; j0 < keys; j0 += groups * kRowsInFlight) {
      float2 x[kRowsInFlight];
#pragma unroll
      for (int u = 0; u < kRowsInFlight; ++u) {
        const int j = j0 + u * groups;
        x[u] = j < keys ? LoadPair<T, kPairs>(v + j * a.v_strides[2]) : make_float2(0.0f, 0.0f);
      }
#pragma unroll
      for (int u = 0; u < kRowsInFlight; ++u) {
        const int j = j0 + u * groups;
        const float weight = j < keys ? p[j] : 0.0f;
        acc.x = fmaf(weight, x[u].x, acc.x);
        acc.y = fmaf(weight, x[u].y, acc.y);
      }
    }
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  if (group == 0 && c < items) {
    float2 total = acc;
    for (int g = 1; g < groups; ++g) {
      total.x += partial[g * width + c].x;
      total.y += partial[g * width + c].y;
    }
    out[feature * a.out_strides[3]] = FromFloat<T>(total.x / sum);
    if (kPairs && feature + 1 < v_head) out[(feature + 1) * a.out_strides[3]] = FromFloat<T>(total.y / sum);
  }
}

}  // namespace

bool AttentionOneQueryFits(const AttentionArgs& a) {
  return a.q_len == 1 && a.head_size <= kMaxOneQueryHead && a.v_head_size <= kMaxOneQueryHead &&
         a.k_len <= kMaxOneQueryKeys && a.batch * a.heads <= 2147483647;
}

cudaError_t AttentionOneQuery(const AttentionArgs& a, cudaStream_t stream) {
  if (!AttentionOneQueryFits(a)) return cudaErrorInvalidConfiguration;
  if (a.batch * a.heads * a.v_head_size == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(a.batch * a.heads);
  const auto contiguous = [&](size_t element) {
    const int64_t per_word = 16 / static_cast<int64_t>(element);
    const int64_t bytes = a.k_strides[2] * static_cast<int64_t>(element);
    const int64_t batch_bytes = a.k_strides[0] * static_cast<int64_t>(element);
    const int64_t head_bytes = a.k_strides[1] * static_cast<int64_t>(element);
    return a.k_strides[3] == 1 && a.head_size % per_word == 0 && bytes % 16 == 0 && batch_bytes % 16 == 0 &&
           head_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(a.k) % 16 == 0;
  };
  // Value features in pairs: adjacent, an even count, and every row start aligned to the pair.
  const auto pairs = [&](size_t element) {
    const int64_t pair_bytes = 2 * static_cast<int64_t>(element);
    return a.v_strides[3] == 1 && a.v_head_size % 2 == 0 && (a.v_strides[2] * static_cast<int64_t>(element)) % pair_bytes == 0 &&
           (a.v_strides[1] * static_cast<int64_t>(element)) % pair_bytes == 0 &&
           (a.v_strides[0] * static_cast<int64_t>(element)) % pair_bytes == 0 &&
           reinterpret_cast<uintptr_t>(a.v) % static_cast<uintptr_t>(pair_bytes) == 0;
  };
  const auto launch = [&](auto tag) {
    using T = decltype(tag);
    const bool contiguous_keys = contiguous(sizeof(T)), paired_values = pairs(sizeof(T));
    const dim3 grid(blocks), block(kThreads);
    if (contiguous_keys && paired_values)
      return device::LaunchDependent(OneQueryKernel<T, true, true>, grid, block, 0, stream, a);
    if (contiguous_keys) return device::LaunchDependent(OneQueryKernel<T, true, false>, grid, block, 0, stream, a);
    if (paired_values) return device::LaunchDependent(OneQueryKernel<T, false, true>, grid, block, 0, stream, a);
    return device::LaunchDependent(OneQueryKernel<T, false, false>, grid, block, 0, stream, a);
  };
  if (a.type == ElementType::kFloat) return launch(float{});
  return launch(__half{});
}

}  // namespace tessera::cuda::launch
