// ai.tessera::Attention on tensor cores (warp matrix multiply-accumulate, WMMA).
//
// One block per (tile of 16 queries, head, batch) with W warps (1..8). The block's 16 query rows are staged once
// in shared memory; the keys are cut into tiles of 16 (32 beyond 256 keys) and the warps take tiles round-robin (split-K over the key
// axis, as flash-decoding does, so that short query counts still fill the GPU). For each of its tiles a warp
//   1. stages K and V rows in its own shared memory (zero-padded to the fragment size),
//   2. computes S = Q.K^T for 16 x 16 (or 32) scores on tensor cores,
//   3. applies the scale and the mask and updates its running softmax per row (maximum, sum; lanes 2r and 2r+1
//      own row r), writing P = exp(S - max) and each row's correction factor,
//   4. rescales its output accumulator O (16 x head_size floats in shared memory) and adds P.V on tensor cores.
// At the end the warps' partial results are merged (max, rescaled sums) and the output is written once.
//
// float16 operands multiply in float16 with float32 accumulation; P is rounded to float16 before P.V (as
// flash-attention kernels do). float32 operands use three TF32 products per step (a = a_hi + a_lo; a.b ~
// a_hi.b_hi + a_hi.b_lo + a_lo.b_hi), which keeps float32 accuracy (errors ~1e-6 relative) on tensor cores.
#include <mma.h>

#include <cfloat>
#include <cmath>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/attention_device.cuh"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::kWarp;
using device::ToFloat;
namespace wmma = nvcuda::wmma;

constexpr int kRows = 16;      // query rows per block (one fragment's M)
// Keys per warp step: 16 for short key sequences (more warps share them), 32 beyond kShortKeys.
constexpr int kShortKeys = 256;
constexpr int kMaxWarps = 8;
constexpr int kStatsPerWarp = 3 * kRows;  // max, sum, correction per row

int RoundUp(int64_t v, int to) { return static_cast<int>((v + to - 1) / to * to); }

// The shared-memory plan of one launch (element counts; every region starts 128-byte aligned).
struct MmaLayout {
  int warps;
  int dp, dvp;          // head sizes rounded up to 16
  int ldq, ldk, ldv;    // leading dimensions of the staged Q, K, V (elements of the storage type)
  int lds, ldp, ldo;    // scores (float), P (storage type), output accumulator (float)
  size_t q_bytes, warp_bytes;
  size_t k_off, v_off, s_off, p_off, o_off, stats_off;  // byte offsets inside a warp's region
  size_t Bytes() const { return q_bytes + warps * warp_bytes; }
};

size_t Align(size_t bytes) { return (bytes + 127) / 128 * 128; }

template <typename T>
MmaLayout MakeLayout(const AttentionArgs& a, int warps, int key_tile) {
  constexpr int pad = sizeof(T) == 2 ? 8 : 4;  // keeps rows 16-byte aligned and shifts banks
  MmaLayout l{};
  l.warps = warps;
  l.dp = RoundUp(a.head_size, 16);
  l.dvp = RoundUp(a.v_head_size, 16);
  l.ldq = l.dp + pad;
  l.ldk = l.dp + pad;
  l.ldv = l.dvp + pad;
  l.lds = key_tile + 4;
  l.ldp = key_tile + pad;
  l.ldo = l.dvp + 4;
  l.q_bytes = Align(sizeof(T) * kRows * l.ldq);
  size_t at = 0;
  l.k_off = at;
  at += Align(sizeof(T) * key_tile * l.ldk);
  l.v_off = at;
  at += Align(sizeof(T) * key_tile * l.ldv);
  l.s_off = at;
  at += Align(sizeof(float) * kRows * l.lds);
  l.p_off = at;
  at += Align(sizeof(T) * kRows * l.ldp);
  l.o_off = at;
  at += Align(sizeof(float) * kRows * l.ldo);
  l.stats_off = at;
  at += Align(sizeof(float) * kStatsPerWarp);
  l.warp_bytes = at;
  return l;
}

// Fragment shapes and the product per storage type: float16 -> m16n16k16 in float16; float -> m16n16k8 in TF32,
// three products (hi.hi + hi.lo + lo.hi).
template <typename T>
struct Mma;

template <>
struct Mma<__half> {
  static constexpr int kK = 16;
  using A = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
  using BCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>;
  using BRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
  using C = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  template <typename B>
  __device__ static void Step(C& c, const __half* a, int lda, const __half* b, int ldb) {
    A fa;
    B fb;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::mma_sync(c, fa, fb, c);
  }
};

template <>
struct Mma<float> {
  static constexpr int kK = 8;
  using A = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using BCol = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
  using BRow = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using C = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
  template <typename F>
  __device__ static void Split(F& hi, F& lo) {
#pragma unroll
    for (int i = 0; i < hi.num_elements; ++i) {
      const float x = hi.x[i];
      hi.x[i] = wmma::__float_to_tf32(x);
      lo.x[i] = wmma::__float_to_tf32(x - hi.x[i]);
    }
  }
  template <typename B>
  __device__ static void Step(C& c, const float* a, int lda, const float* b, int ldb) {
    A a_hi, a_lo;
    B b_hi, b_lo;
    wmma::load_matrix_sync(a_hi, a, lda);
    wmma::load_matrix_sync(b_hi, b, ldb);
    Split(a_hi, a_lo);
    Split(b_hi, b_lo);
    wmma::mma_sync(c, a_lo, b_hi, c);
    wmma::mma_sync(c, a_hi, b_lo, c);
    wmma::mma_sync(c, a_hi, b_hi, c);
  }
};

__device__ __forceinline__ float PairMax(float v) { return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1)); }
__device__ __forceinline__ float PairSum(float v) { return v + __shfl_xor_sync(0xffffffffu, v, 1); }

template <typename T>
__device__ __forceinline__ T StorageFrom(float v) {
  return FromFloat<T>(v);
}

// Copies `rows` rows of `cols` elements (row r at src + r * row_stride, element c at c * col_stride) into dst
// (leading dimension ld), zero-filling rows from rows_valid on and columns from cols_valid up to padded_cols.
// Threads `first`, `first + step`, ... share the work; each keeps kBatch loads in flight before it stores, and
// rows contiguous in memory (col_stride 1, 16-byte aligned) move in 16-byte words.
template <typename T>
__device__ __noinline__ void StageRows(T* __restrict__ dst, int ld, int padded_cols, const T* __restrict__ src,
                                         int64_t row_stride, int64_t col_stride, int rows, int64_t rows_valid,
                                         int64_t cols_valid, int first, int step) {
  constexpr int kBatch = 8;
  constexpr int kVec = 16 / sizeof(T);
  const bool vector = col_stride == 1 && cols_valid % kVec == 0 && row_stride % kVec == 0 &&
                      reinterpret_cast<uintptr_t>(src) % 16 == 0;
  const int width = vector ? padded_cols / kVec : padded_cols;  // units per row: 16-byte words or elements
  const int unit = vector ? kVec : 1;
  // Position of unit `first` and the increment of `step` units, as (row, unit in row): no division per unit.
  int r = first / width, c = first % width;
  const int dr = step / width, dc = step % width;
  while (r < rows) {
    int rs[kBatch], cs[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      rs[u] = r;
      cs[u] = c * unit;
      r += dr;
      c += dc;
      if (c >= width) {
        c -= width;
        ++r;
      }
    }
    if (vector) {
      uint4 buf[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        buf[u] = make_uint4(0, 0, 0, 0);
        if (rs[u] < rows && rs[u] < rows_valid && cs[u] < cols_valid)
          buf[u] = __ldg(reinterpret_cast<const uint4*>(src + rs[u] * row_stride + cs[u]));
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (rs[u] < rows) *reinterpret_cast<uint4*>(dst + rs[u] * ld + cs[u]) = buf[u];
    } else {
      T buf[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        buf[u] = StorageFrom<T>(0.0f);
        if (rs[u] < rows && rs[u] < rows_valid && cs[u] < cols_valid) buf[u] = src[rs[u] * row_stride + cs[u] * col_stride];
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (rs[u] < rows) dst[rs[u] * ld + cs[u]] = buf[u];
    }
  }
}

template <typename T, int kKeyTile>
__global__ void __launch_bounds__(kMaxWarps * kWarp) AttentionMmaKernel(AttentionArgs a, MmaLayout l) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched there: AttentionOnTensorCoresFits checks the compute capability
#else
  using M = Mma<T>;
  extern __shared__ __align__(128) unsigned char shared[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const T* q = static_cast<const T*>(a.q) + b * a.q_strides[0] + h * a.q_strides[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_strides[0] + h * a.k_strides[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_strides[0] + h * a.v_strides[1];

  T* q_tile = reinterpret_cast<T*>(shared);
  unsigned char* mine = shared + l.q_bytes + warp * l.warp_bytes;
  T* k_tile = reinterpret_cast<T*>(mine + l.k_off);
  T* v_tile = reinterpret_cast<T*>(mine + l.v_off);
  float* s_tile = reinterpret_cast<float*>(mine + l.s_off);
  T* p_tile = reinterpret_cast<T*>(mine + l.p_off);
  float* o_acc = reinterpret_cast<float*>(mine + l.o_off);
  float* stats = reinterpret_cast<float*>(mine + l.stats_off);  // [max | sum | correction] x kRows

  // K and V of a warp's first tile are staged before the barrier, so their loads overlap the block's Q loads.
  const auto stage_keys = [&](int64_t j0) {
    StageRows(k_tile, l.ldk, l.dp, k + j0 * a.k_strides[2], a.k_strides[2], a.k_strides[3], kKeyTile, a.k_len - j0,
              a.head_size, lane, kWarp);
    StageRows(v_tile, l.ldv, l.dvp, v + j0 * a.v_strides[2], a.v_strides[2], a.v_strides[3], kKeyTile, a.k_len - j0,
              a.v_head_size, lane, kWarp);
  };
  const int64_t tiles = (a.k_len + kKeyTile - 1) / kKeyTile;
  if (warp < tiles) stage_keys(warp * kKeyTile);
  StageRows(q_tile, l.ldq, l.dp, q + row0 * a.q_strides[2], a.q_strides[2], a.q_strides[3], kRows, a.q_len - row0,
            a.head_size, threadIdx.x, blockDim.x);
  __syncthreads();

  // Lanes 2r and 2r+1 own query row r; each scores half of a key tile.
  constexpr int kCols = kKeyTile / 2;
  const int my_row = lane / 2, my_half = lane % 2;
  const int64_t my_i = row0 + my_row;
  const bool row_valid = my_i < a.q_len;
  const void* mask_row = nullptr;  // the mask's entries for this query (key stride a.mask_strides[3])
  if (a.mask != nullptr)
    mask_row = static_cast<const unsigned char*>(a.mask) +
               (b * a.mask_strides[0] + h * a.mask_strides[1] + my_i * a.mask_strides[2]) *
                   (a.bool_mask ? sizeof(bool) : sizeof(T));
  float row_max = -INFINITY, row_sum = 0.0f;
  for (int64_t t = warp; t < tiles; t += l.warps) {
    const int64_t j0 = t * kKeyTile;
    const bool first = t == warp;  // the accumulator starts here: no rescaling, no load; K and V are staged
    if (!first) stage_keys(j0);
    // The mask entries of this tile, loaded before the products so that their latency overlaps them.
    float mask_add[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int64_t j = j0 + my_half * kCols + c;
      mask_add[c] = 0.0f;
      if (mask_row != nullptr && j < a.k_len && row_valid) {
        const int64_t at = j * a.mask_strides[3];
        if (a.bool_mask) mask_add[c] = static_cast<const bool*>(mask_row)[at] ? 0.0f : -INFINITY;
        else mask_add[c] = ToFloat(static_cast<const T*>(mask_row)[at]);
      }
    }
    __syncwarp();
    // S = Q . K^T (K staged row-major [key][feature] is K^T column-major).
#pragma unroll
    for (int n = 0; n < kKeyTile / 16; ++n) {
      typename M::C c;
      wmma::fill_fragment(c, 0.0f);
      for (int kk = 0; kk < l.dp; kk += M::kK)
        M::template Step<typename M::BCol>(c, q_tile + kk, l.ldq, k_tile + n * 16 * l.ldk + kk, l.ldk);
      wmma::store_matrix_sync(s_tile + n * 16, c, l.lds, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax over this tile for row my_row, columns [kCols * my_half, kCols * my_half + kCols).
    float score[kCols];
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = my_half * kCols + c;
      const int64_t j = j0 + col;
      float s = -INFINITY;
      if (j < a.k_len && row_valid)
        s = a.bool_mask && mask_add[c] == -INFINITY ? -INFINITY : a.scale * s_tile[my_row * l.lds + col] + mask_add[c];
      score[c] = s;
      tile_max = fmaxf(tile_max, s);
    }
    tile_max = PairMax(tile_max);
    const float new_max = fmaxf(row_max, tile_max);
    // Every key of the row masked so far: nothing accumulated, P = 0, the accumulator keeps its zeros.
    const float correction = new_max == -INFINITY ? 1.0f : __expf(row_max - new_max);
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const float p = score[c] == -INFINITY ? 0.0f : __expf(score[c] - new_max);
      sum += p;
      p_tile[my_row * l.ldp + my_half * kCols + c] = StorageFrom<T>(p);
    }
    row_sum = row_sum * correction + PairSum(sum);
    row_max = new_max;
    if (!first) {
      if (my_half == 0) stats[2 * kRows + my_row] = correction;
      __syncwarp();
      for (int r = 0; r < kRows; ++r) {
        const float f = stats[2 * kRows + r];
        if (f != 1.0f)
          for (int c = lane; c < l.dvp; c += kWarp) o_acc[r * l.ldo + c] *= f;
      }
    }
    __syncwarp();
    // O += P . V (O = P . V on the warp's first tile)
    for (int n = 0; n < l.dvp; n += 16) {
      typename M::C c;
      if (first) wmma::fill_fragment(c, 0.0f);
      else wmma::load_matrix_sync(c, o_acc + n, l.ldo, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kKeyTile; kk += M::kK)
        M::template Step<typename M::BRow>(c, p_tile + kk, l.ldp, v_tile + kk * l.ldv + n, l.ldv);
      wmma::store_matrix_sync(o_acc + n, c, l.ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (my_half == 0) {
    stats[my_row] = row_max;
    stats[kRows + my_row] = row_sum;
  }
  __syncthreads();

  // Merge the warps' partial softmax states: per row, each warp's weight exp(max_w - max) / total (in its
  // correction slot, unused from here on), then the output once.
  if (threadIdx.x < kRows) {
    const int r = threadIdx.x;
    float m = -INFINITY;
    for (int w = 0; w < l.warps; ++w)
      m = fmaxf(m, reinterpret_cast<const float*>(shared + l.q_bytes + w * l.warp_bytes + l.stats_off)[r]);
    float total = 0.0f;
    for (int w = 0; w < l.warps; ++w) {
      float* st = reinterpret_cast<float*>(shared + l.q_bytes + w * l.warp_bytes + l.stats_off);
      const float weight = st[r] == -INFINITY ? 0.0f : __expf(st[r] - m);
      st[2 * kRows + r] = weight;
      total += st[kRows + r] * weight;
    }
    // A row with no unmasked key (or no keys) gets zero weights and its value is the fill.
    const float fill = a.masked_rows_zero || a.k_len == 0 ? 0.0f : NAN;
    for (int w = 0; w < l.warps; ++w) {
      float* st = reinterpret_cast<float*>(shared + l.q_bytes + w * l.warp_bytes + l.stats_off);
      st[2 * kRows + r] = total == 0.0f ? 0.0f : st[2 * kRows + r] / total;
    }
    reinterpret_cast<float*>(shared + l.q_bytes + l.stats_off)[kRows + r] = total == 0.0f ? fill : 0.0f;
  }
  __syncthreads();
  T* out = static_cast<T*>(a.out) + b * a.out_strides[0] + h * a.out_strides[1];
  const int dv = static_cast<int>(a.v_head_size);
  const int rows = static_cast<int>(a.q_len - row0 < kRows ? a.q_len - row0 : kRows);
  const float* fills = reinterpret_cast<const float*>(shared + l.q_bytes + l.stats_off) + kRows;
  for (int idx = threadIdx.x; idx < rows * dv; idx += blockDim.x) {
    const int r = idx / dv, c = idx - r * dv;  // a few per thread
    float value = fills[r];  // 0 for a row with keys (the sums below), else the fill
    for (int w = 0; w < l.warps; ++w) {
      const unsigned char* region = shared + l.q_bytes + w * l.warp_bytes;
      const float weight = reinterpret_cast<const float*>(region + l.stats_off)[2 * kRows + r];
      if (weight != 0.0f) value += reinterpret_cast<const float*>(region + l.o_off)[r * l.ldo + c] * weight;
    }
    out[(row0 + r) * a.out_strides[2] + c * a.out_strides[3]] = FromFloat<T>(value);
  }
#endif
}

int KeyTileFor(const AttentionArgs& a) { return a.k_len <= kShortKeys ? 16 : 32; }

template <typename T, int kKeyTile>
cudaError_t LaunchMma(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t tiles = (a.k_len + kKeyTile - 1) / kKeyTile;
  int warps = static_cast<int>(tiles < kMaxWarps ? (tiles > 0 ? tiles : 1) : kMaxWarps);
  const size_t limit = CurrentAttentionDevice().shared_opt_in;
  MmaLayout l = MakeLayout<T>(a, warps, kKeyTile);
  while (l.Bytes() > limit && warps > 1) l = MakeLayout<T>(a, warps /= 2, kKeyTile);
  if (l.Bytes() > limit) return cudaErrorInvalidConfiguration;
  const int64_t q_tiles = (a.q_len + kRows - 1) / kRows;
  if (q_tiles > 2147483647 || a.heads > 65535 || a.batch > 65535) return cudaErrorInvalidConfiguration;
  if (l.Bytes() > 48 * 1024) {
    const cudaError_t status = AllowDynamicShared<AttentionMmaKernel<T, kKeyTile>>(limit);
    if (status != cudaSuccess) return status;
  }
  const dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  AttentionMmaKernel<T, kKeyTile><<<grid, warps * kWarp, l.Bytes(), stream>>>(a, l);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchMma(const AttentionArgs& a, cudaStream_t stream) {
  return KeyTileFor(a) == 16 ? LaunchMma<T, 16>(a, stream) : LaunchMma<T, 32>(a, stream);
}

}  // namespace

bool AttentionOnTensorCoresFits(const AttentionArgs& a) {
  const AttentionDevice limits = CurrentAttentionDevice();
  if (!limits.tensor_cores) return false;
  const int key_tile = KeyTileFor(a);
  const size_t bytes = a.type == ElementType::kHalf ? MakeLayout<__half>(a, 1, key_tile).Bytes()
                                                    : MakeLayout<float>(a, 1, key_tile).Bytes();
  return bytes <= limits.shared_opt_in;
}

cudaError_t AttentionOnTensorCores(const AttentionArgs& a, cudaStream_t stream) {
  if (a.batch * a.heads * a.q_len * a.v_head_size == 0) return cudaSuccess;
  if (a.type == ElementType::kHalf) return LaunchMma<__half>(a, stream);
  return LaunchMma<float>(a, stream);
}

}  // namespace tessera::cuda::launch
