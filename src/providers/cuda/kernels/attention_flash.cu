// ai.tessera::Attention in float16 on tensor cores with the softmax in registers (the flash-attention-2 scheme).
//
// A warp owns 16 query rows of one (batch, head). A block has four warps: `q_warps` query tiles x `splits` warps per
// query tile (FlashLayout; splits > 1 when the query tiles alone would leave the device short of warps), and its
// threads copy K, V and the mask's rows of `splits` tiles of 64 keys per round into shared memory with cp.async, two
// rounds in flight. Per tile (split s of a query tile takes tiles s, s + splits, ...) a warp
//   1. computes S = Q.K^T (16 x 64) with mma.sync m16n8k16 from Q fragments held in registers for the whole
//      kernel and K rows read from shared memory,
//   2. scales it, adds the mask (from the copied rows, or for masks that cannot be copied so from global memory
//      before the round's wait) and updates each row's running maximum and sum in registers (the four lanes of a
//      row exchange by shuffles),
//   3. rounds P = exp(S - max) to float16 in the accumulator layout, which is the A operand's layout of the next
//      product, and adds P.V to its output accumulators (V transposed on the fly by ldmatrix.trans).
// With several splits, each warp's partial state (O, maximum, sum) goes through shared memory at the end and the
// first warp of the query tile merges them (flash-decoding's scheme) before writing the output once.
//
// Operands: float16, head sizes multiples of 8 up to 128 (padded with zeros to 16, 32, 64 or 128), features
// contiguous, K / V element strides multiples of 8 and 16-byte aligned (16-byte copies; every fused BERT / GPT-2
// layout). Other cases run on attention_mma.cu's kernel. Products accumulate in float32; the softmax is in float32
// (base 2, the scale folded with log2(e)); P is rounded to float16 before P.V, as attention_mma.cu and
// flash-attention do.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/attention_device.cuh"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::kWarp;

constexpr int kRows = 16;       // query rows per warp (the products' M)
constexpr int kKeys = 64;       // keys per tile
constexpr int kMaxThreads = 8 * kWarp;
constexpr float kLog2e = 1.4426950408889634f;

// Copies `bytes` (0..16) from global memory and zero-fills the rest of the 16 shared bytes, asynchronously.
__device__ __forceinline__ void CopyAsync16(void* shared, const void* global, int bytes) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// c += a . b for one m16n8k16 step (a: 16 x 16 row-major fragment, b: 16 x 8 column-major, c: float32).
__device__ __forceinline__ void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 x 8 float16 matrices from shared memory, transposed: lane l gives the address of row l % 8 of matrix
// l / 8, and receives of each matrix the elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4).
__device__ __forceinline__ void LoadTransposed(uint32_t (&r)[4], const __half* row) {
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}

__device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

__device__ __forceinline__ float RowMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float RowSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// How the kernel reads the mask: none; one row of keys for every query of a (batch, head), copied with the keys
// (float16 or bool, contiguous and 16-byte aligned: a [batch, 1, 1, keys] padding mask); a row per query, copied
// likewise (the [batch, 1, queries, keys] masks of Hugging Face's exports); or else element by element from global
// memory.
enum MaskMode {
  kNoMask = 0,
  kKeyMaskHalf = 1,
  kKeyMaskBool = 2,
  kRowMaskHalf = 3,
  kRowMaskBool = 4,
  kGeneralMask = 5
};

__host__ __device__ constexpr bool KeyMask(int mode) { return mode == kKeyMaskHalf || mode == kKeyMaskBool; }
__host__ __device__ constexpr bool RowMask(int mode) { return mode == kRowMaskHalf || mode == kRowMaskBool; }
__host__ __device__ constexpr bool BoolMask(int mode) { return mode == kKeyMaskBool || mode == kRowMaskBool; }

// The block: q_warps tiles of 16 queries x `splits` warps per query tile, each warp of a query tile taking every
// splits-th key tile (the partial softmax states merge at the end, as flash-decoding does): short sequences then
// spread over more warps.
struct FlashLayout {
  int q_warps = 1, splits = 1;
};

// Shared memory: K and V tiles [2 buffers][splits][kKeys][kD + 8], the mask's tiles [2][rows][splits x kKeys]
// (rows: 1 for a key mask, the block's queries for a row mask; 2 bytes each), and for the merge of several splits
// the partial states [warps][kD / 2 + 4][32] floats in the same bytes.
__host__ __device__ inline size_t MaskRows(int mask_mode, const FlashLayout& l) {
  return KeyMask(mask_mode) ? 1 : RowMask(mask_mode) ? static_cast<size_t>(l.q_warps) * kRows : 0;
}

size_t FlashSharedBytes(int padded_head, const FlashLayout& l, int mask_mode) {
  const size_t staging = sizeof(__half) * 2 * 2 * l.splits * kKeys * (padded_head + 8) +
                         2 * MaskRows(mask_mode, l) * l.splits * kKeys * 2;
  const size_t merge = l.splits > 1 ? sizeof(float) * l.q_warps * l.splits * (padded_head / 2 + 4) * kWarp : 0;
  return staging > merge ? staging : merge;
}

// kD: the head sizes rounded up (zero-padded in Q fragments and in the staged K and V rows). Offsets inside one
// (batch, head) are 32-bit (AttentionFlashFits checks that they fit).
template <int kD, int kMask>
__global__ void __launch_bounds__(kMaxThreads) FlashAttentionKernel(AttentionArgs a, FlashLayout l) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched there: AttentionFlashFits checks the compute capability
#else
  constexpr int kLd = kD + 8;        // shared row stride (elements): 16-byte aligned rows, conflict-free reads
  constexpr int kChunks = kD / 8;    // 16-byte chunks per staged row
  constexpr int kSteps = kD / 16;    // k-steps of Q.K^T
  constexpr int kScoreTiles = kKeys / 8;
  constexpr int kOutTiles = kD / 8;
  constexpr int kMaskBytes = BoolMask(kMask) ? 1 : 2;
  extern __shared__ __align__(16) unsigned char shared[];
  const int splits = l.splits;
  const int tile_elements = kKeys * kLd;
  __half* k_tiles = reinterpret_cast<__half*>(shared);     // [2][splits][kKeys][kLd]
  __half* v_tiles = k_tiles + 2 * splits * tile_elements;  // [2][splits][kKeys][kLd]
  unsigned char* mask_tiles = reinterpret_cast<unsigned char*>(v_tiles + 2 * splits * tile_elements);

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int split = warp % splits, q_warp = warp / splits;
  const int group = lane / 4, quad = lane % 4;  // a fragment's row (and row + 8) and column pair
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int block_row0 = static_cast<int>(blockIdx.x) * l.q_warps * kRows;
  const int row0 = block_row0 + q_warp * kRows;
  const int mask_keys = splits * kKeys;  // a staged mask row: one round's keys
  const int mask_bytes = static_cast<int>(MaskRows(kMask, l)) * mask_keys * 2;  // one buffer of mask rows
  const __half* q = static_cast<const __half*>(a.q) + b * a.q_strides[0] + h * a.q_strides[1];
  const __half* k = static_cast<const __half*>(a.k) + b * a.k_strides[0] + h * a.k_strides[1];
  const __half* v = static_cast<const __half*>(a.v) + b * a.v_strides[0] + h * a.v_strides[1];
  const int q_len = static_cast<int>(a.q_len), k_len = static_cast<int>(a.k_len);
  const int head_size = static_cast<int>(a.head_size), v_head_size = static_cast<int>(a.v_head_size);
  const int q_stride = static_cast<int>(a.q_strides[2]);
  const int k_stride = static_cast<int>(a.k_strides[2]), v_stride = static_cast<int>(a.v_strides[2]);
  const int tiles = (k_len + kKeys - 1) / kKeys;
  const int steps = (tiles + splits - 1) / splits;  // rounds of `splits` tiles
  const unsigned char* mask = nullptr;
  if (kMask != kNoMask)
    mask = static_cast<const unsigned char*>(a.mask) +
           (b * a.mask_strides[0] + h * a.mask_strides[1]) * (a.bool_mask ? 1 : 2);

  // Round `step`'s tiles (keys step * splits * kKeys on, consecutive) into buffer `buffer`.
  const auto stage = [&](int step, int buffer) {
    const int rows = splits * kKeys;
    const int first = step * rows;
    __half* kt = k_tiles + buffer * rows * kLd;
    __half* vt = v_tiles + buffer * rows * kLd;
    for (int i = threadIdx.x; i < rows * kChunks; i += blockDim.x) {
      const int r = i / kChunks, col = i % kChunks * 8;
      const int j = first + r;
      const bool k_valid = j < k_len && col < head_size;
      const bool v_valid = j < k_len && col < v_head_size;
      CopyAsync16(kt + r * kLd + col, k_valid ? k + j * k_stride + col : k, k_valid ? 16 : 0);
      CopyAsync16(vt + r * kLd + col, v_valid ? v + j * v_stride + col : v, v_valid ? 16 : 0);
    }
    if (KeyMask(kMask) || RowMask(kMask)) {
      // Mask row r (the key row, or query block_row0 + r), keys first .. first + mask_keys: 16-byte chunks, zeros
      // past the last key (masked below) and for queries past the end.
      constexpr int kKeysPerChunk = 16 / kMaskBytes;
      const int row_chunks = mask_keys / kKeysPerChunk;
      const int mask_rows = KeyMask(kMask) ? 1 : l.q_warps * kRows;
      unsigned char* mt = mask_tiles + buffer * mask_bytes;
      for (int i = threadIdx.x; i < mask_rows * row_chunks; i += blockDim.x) {
        const int r = i / row_chunks, j = first + i % row_chunks * kKeysPerChunk;
        const int query = block_row0 + r;
        const int left = (k_len - j) * kMaskBytes;
        int bytes = left < 0 ? 0 : (left > 16 ? 16 : left);
        const unsigned char* from = mask + j * kMaskBytes;
        if (RowMask(kMask)) {
          if (query >= q_len) bytes = 0;
          else from += static_cast<int64_t>(query) * a.mask_strides[2] * kMaskBytes;
        }
        CopyAsync16(mt + r * mask_keys * kMaskBytes + i % row_chunks * 16, bytes > 0 ? from : mask, bytes);
      }
    }
    CommitCopies();
  };
  stage(0, 0);
  if (steps > 1) stage(1, 1);
  if (steps == 0) WaitCopies<0>();  // no keys: round 0's zero-fills land before the block exits

  // Q fragments of rows row0 + group (+ 8), columns 16 s + 2 quad (+ 8), for the whole kernel.
  uint32_t qf[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row0 + group + (e & 1) * 8;
      const int col = s * 16 + quad * 2 + (e >> 1) * 8;
      qf[s][e] = i < q_len && col < head_size ? *reinterpret_cast<const uint32_t*>(q + i * q_stride + col) : 0u;
    }

  // The general mask: this thread's two query rows (null past the last query).
  const unsigned char* mask_rows[2] = {nullptr, nullptr};
  if (kMask == kGeneralMask)
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + group + r * 8;
      if (i < q_len) mask_rows[r] = mask + static_cast<int64_t>(i) * a.mask_strides[2] * (a.bool_mask ? 1 : 2);
    }

  float o[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};

  for (int step = 0; step < steps; ++step) {
    const int buffer = step & 1;
    const int tile = step * splits + split;
    const int j0 = tile * kKeys;
    // The general mask's entries of this tile (element e of score tile n: row group + 8 (e / 2), key
    // 8 n + 2 quad + e % 2), loaded before the wait so that their latency overlaps the copies'.
    float mask_add[kMask == kGeneralMask ? kScoreTiles : 1][4];
    if (kMask == kGeneralMask && tile < tiles) {
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + n * 8 + quad * 2 + (e & 1);
          const unsigned char* row = mask_rows[e >> 1];
          float add = 0.0f;
          if (row != nullptr && j < k_len) {
            const int64_t at = j * a.mask_strides[3];
            if (a.bool_mask) add = reinterpret_cast<const bool*>(row)[at] ? 0.0f : -INFINITY;
            else add = __half2float(reinterpret_cast<const __half*>(row)[at]);
          }
          mask_add[n][e] = add;
        }
    }
    if (step + 1 < steps) WaitCopies<1>();
    else WaitCopies<0>();
    __syncthreads();
    if (tile < tiles) {  // the same for the whole warp
      const __half* kt = k_tiles + (buffer * splits + split) * tile_elements;
      const __half* vt = v_tiles + (buffer * splits + split) * tile_elements;
      // This warp's mask entries: its tile's keys in the key row, or in its queries' rows (rows group, group + 8).
      const unsigned char* mt = mask_tiles + buffer * mask_bytes + split * kKeys * kMaskBytes;
      if (RowMask(kMask)) mt += (q_warp * kRows + group) * mask_keys * kMaskBytes;

      // S = Q . K^T: K's row-major rows are the column-major B operand.
      float s[kScoreTiles][4];
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        const __half* key = kt + (n * 8 + group) * kLd + quad * 2;
#pragma unroll
        for (int st = 0; st < kSteps; ++st)
          Mma(s[n], qf[st], *reinterpret_cast<const uint32_t*>(key + st * 16),
              *reinterpret_cast<const uint32_t*>(key + st * 16 + 8));
      }

      // Scale, mask, keys past the end; the online softmax per row (base 2).
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n) {
        const int col = n * 8 + quad * 2;  // this thread's two keys col, col + 1 of rows group, group + 8
        float add[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          // Key masks: one row for both; row masks: row r is 8 rows further.
          const unsigned char* at = mt + (RowMask(kMask) ? r * 8 * mask_keys * kMaskBytes : 0) + col * kMaskBytes;
          if (kMask == kKeyMaskHalf || kMask == kRowMaskHalf) {
            const float2 pair = __half22float2(*reinterpret_cast<const __half2*>(at));
            add[r][0] = pair.x;
            add[r][1] = pair.y;
          }
          if (kMask == kKeyMaskBool || kMask == kRowMaskBool) {
            add[r][0] = at[0] != 0 ? 0.0f : -INFINITY;
            add[r][1] = at[1] != 0 ? 0.0f : -INFINITY;
          }
          if (kMask == kGeneralMask) {
            add[r][0] = mask_add[n][2 * r];
            add[r][1] = mask_add[n][2 * r + 1];
          }
        }
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const bool inside = j0 + col + c < k_len;
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int e = 2 * r + c;
            const float x = inside ? fmaf(s[n][e], a.scale, add[r][c]) * kLog2e : -INFINITY;
            s[n][e] = x;
            tile_max[r] = fmaxf(tile_max[r], x);
          }
        }
      }
      float base[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float new_max = fmaxf(row_max[r], RowMax(tile_max[r]));
        base[r] = new_max == -INFINITY ? 0.0f : new_max;  // every key masked so far: P = 0, nothing to rescale
        const float correction = exp2f(row_max[r] - base[r]);
        row_max[r] = new_max;
        row_sum[r] *= correction;
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n) {
          o[n][2 * r] *= correction;
          o[n][2 * r + 1] *= correction;
        }
      }
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = exp2f(s[n][e] - base[e >> 1]);
          s[n][e] = p;
          row_sum[e >> 1] += p;
        }

      // O += P . V: score tiles 2 kk and 2 kk + 1 form the A fragment of keys 16 kk .. 16 kk + 15.
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        const uint32_t pa[4] = {Pack(s[2 * kk][0], s[2 * kk][1]), Pack(s[2 * kk][2], s[2 * kk][3]),
                                Pack(s[2 * kk + 1][0], s[2 * kk + 1][1]), Pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
        const __half* rows = vt + (kk * 16 + (lane >> 3 & 1) * 8 + (lane & 7)) * kLd + (lane >> 4) * 8;
#pragma unroll
        for (int n = 0; n < kD / 16; ++n) {
          uint32_t vb[4];
          LoadTransposed(vb, rows + n * 16);
          Mma(o[2 * n], pa, vb[0], vb[1]);
          Mma(o[2 * n + 1], pa, vb[2], vb[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer
    if (step + 2 < steps) stage(step + 2, buffer);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) row_sum[r] = RowSum(row_sum[r]);

  // Several splits: each warp's state goes to shared memory in its own lane order (the staging buffers are free:
  // every copy has landed and every warp passed the loop's last barrier); the first warp of each query tile merges.
  if (splits > 1) {
    constexpr int kValues = kOutTiles * 4 + 4;  // O, then the two rows' maximum and sum
    float* states = reinterpret_cast<float*>(shared);
    if (split != 0) {
      float* mine = states + warp * kValues * kWarp + lane;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) mine[(n * 4 + e) * kWarp] = o[n][e];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mine[(kOutTiles * 4 + r) * kWarp] = row_max[r];
        mine[(kOutTiles * 4 + 2 + r) * kWarp] = row_sum[r];
      }
    }
    __syncthreads();
    if (split != 0) return;  // no barrier follows
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m = row_max[r];
      for (int w = 1; w < splits; ++w) m = fmaxf(m, states[(warp + w) * kValues * kWarp + (kOutTiles * 4 + r) * kWarp + lane]);
      const float base = m == -INFINITY ? 0.0f : m;
      const float own = exp2f(row_max[r] - base);
      float total = row_sum[r] * own;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n) {
        o[n][2 * r] *= own;
        o[n][2 * r + 1] *= own;
      }
      for (int w = 1; w < splits; ++w) {
        const float* other = states + (warp + w) * kValues * kWarp + lane;
        const float weight = exp2f(other[(kOutTiles * 4 + r) * kWarp] - base);
        total += other[(kOutTiles * 4 + 2 + r) * kWarp] * weight;
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n) {
          o[n][2 * r] += other[(n * 4 + 2 * r) * kWarp] * weight;
          o[n][2 * r + 1] += other[(n * 4 + 2 * r + 1) * kWarp] * weight;
        }
      }
      row_sum[r] = total;
    }
  }

  // Normalize and write; a row with no unmasked key (or no keys) gets the fill.
  const float fill = a.masked_rows_zero || k_len == 0 ? 0.0f : NAN;
  __half* out = static_cast<__half*>(a.out) + b * a.out_strides[0] + h * a.out_strides[1];
  const int out_stride = static_cast<int>(a.out_strides[2]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float total = row_sum[r];
    const int i = row0 + group + r * 8;
    if (i >= q_len) continue;
    const float inverse = total == 0.0f ? 0.0f : 1.0f / total;
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
      const int col = n * 8 + quad * 2;
      if (col >= v_head_size) break;
      const float x0 = total == 0.0f ? fill : o[n][2 * r] * inverse;
      const float x1 = total == 0.0f ? fill : o[n][2 * r + 1] * inverse;
      *reinterpret_cast<__half2*>(out + i * out_stride + col) = __floats2half2_rn(x0, x1);
    }
  }
#endif
}

int PaddedHead(const AttentionArgs& a) {
  const int64_t widest = a.head_size > a.v_head_size ? a.head_size : a.v_head_size;
  for (int d : {16, 32, 64, 128})
    if (widest <= d) return d;
  return 0;
}

bool Aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

MaskMode MaskModeOf(const AttentionArgs& a) {
  if (a.mask == nullptr) return kNoMask;
  const int64_t element = a.bool_mask ? 1 : 2;
  // Contiguous rows of keys, each starting 16-byte aligned: one for all queries, or one per query.
  if (a.mask_strides[3] != 1 || !Aligned(a.mask, 16) || a.mask_strides[0] * element % 16 != 0 ||
      a.mask_strides[1] * element % 16 != 0 || a.mask_strides[2] * element % 16 != 0)
    return kGeneralMask;
  if (a.mask_strides[2] == 0) return a.bool_mask ? kKeyMaskBool : kKeyMaskHalf;
  return a.bool_mask ? kRowMaskBool : kRowMaskHalf;
}

// The block for `a`: four warps, which share the copies of the key tiles. One split (four query tiles per block)
// when the query tiles alone give every multiprocessor two warps; otherwise the key tiles split over 2 or 4 warps
// of each query tile (BERT-base at 128 tokens, batch 1: 96 query tiles, 2 key tiles -> 48 blocks of 2 x 2 warps).
// tessera_attention_kernels (H200): 2 x 2 5.4 us against 5.6-6.3 for 4 x 1, 1 x 2 and 1 x 4 there; 4 x 1 first at
// batch 8, 512 and 1024 tokens, 1 x 4 for one query over 1024 keys. Splits and query tiles shrink until the block's
// shared memory fits `shared_limit`.
FlashLayout ChooseLayout(const AttentionArgs& a, int padded_head, int processors, size_t shared_limit) {
  const int64_t q_tiles = (a.q_len + kRows - 1) / kRows * a.heads * a.batch;
  const int64_t key_tiles = (a.k_len + kKeys - 1) / kKeys;
  FlashLayout l;
  while (l.splits < 4 && l.splits < key_tiles && q_tiles * l.splits < 2 * processors) l.splits *= 2;
  l.q_warps = 4 / l.splits;
  const int mask_mode = MaskModeOf(a);
  while (FlashSharedBytes(padded_head, l, mask_mode) > shared_limit && l.splits > 1) l.splits /= 2;
  while (FlashSharedBytes(padded_head, l, mask_mode) > shared_limit && l.q_warps > 1) l.q_warps /= 2;
  return l;
}

template <int kD, int kMask>
cudaError_t Launch(const AttentionArgs& a, const FlashLayout& l, size_t limit, cudaStream_t stream) {
  const size_t bytes = FlashSharedBytes(kD, l, kMask);
  if (bytes > limit) return cudaErrorInvalidConfiguration;
  if (bytes > 48 * 1024) {
    const cudaError_t status = AllowDynamicShared<FlashAttentionKernel<kD, kMask>>(limit);
    if (status != cudaSuccess) return status;
  }
  const int64_t rows = static_cast<int64_t>(l.q_warps) * kRows;
  const dim3 grid(static_cast<unsigned>((a.q_len + rows - 1) / rows), static_cast<unsigned>(a.heads),
                  static_cast<unsigned>(a.batch));
  FlashAttentionKernel<kD, kMask><<<grid, l.q_warps * l.splits * kWarp, bytes, stream>>>(a, l);
  return cudaGetLastError();
}

template <int kD>
cudaError_t LaunchForMask(const AttentionArgs& a, const FlashLayout& l, size_t limit, cudaStream_t stream) {
  switch (MaskModeOf(a)) {
    case kNoMask: return Launch<kD, kNoMask>(a, l, limit, stream);
    case kKeyMaskHalf: return Launch<kD, kKeyMaskHalf>(a, l, limit, stream);
    case kKeyMaskBool: return Launch<kD, kKeyMaskBool>(a, l, limit, stream);
    case kRowMaskHalf: return Launch<kD, kRowMaskHalf>(a, l, limit, stream);
    case kRowMaskBool: return Launch<kD, kRowMaskBool>(a, l, limit, stream);
    default: return Launch<kD, kGeneralMask>(a, l, limit, stream);
  }
}

// Whether the largest element offset inside one (batch, head) of an operand fits 32 bits.
bool Offsets32(int64_t rows, int64_t row_stride, int64_t width) {
  return rows * row_stride + width < (int64_t{1} << 31);
}

}  // namespace

bool AttentionFlashFits(const AttentionArgs& a) {
  if (a.type != ElementType::kHalf || a.head_size % 8 != 0 || a.v_head_size % 8 != 0) return false;
  const int d = PaddedHead(a);
  if (d == 0) return false;
  const AttentionDevice device = CurrentAttentionDevice();
  if (!device.tensor_cores ||
      FlashSharedBytes(d, ChooseLayout(a, d, device.processors, device.shared_opt_in), MaskModeOf(a)) >
          device.shared_opt_in)
    return false;
  // 16-byte copies of K and V rows, 4-byte reads of Q and writes of the output.
  for (int i = 0; i < 3; ++i)
    if (a.k_strides[i] % 8 != 0 || a.v_strides[i] % 8 != 0 || a.q_strides[i] % 2 != 0 || a.out_strides[i] % 2 != 0)
      return false;
  if (a.k_strides[3] != 1 || a.v_strides[3] != 1 || a.q_strides[3] != 1 || a.out_strides[3] != 1) return false;
  if (!Aligned(a.k, 16) || !Aligned(a.v, 16) || !Aligned(a.q, 4) || !Aligned(a.out, 4)) return false;
  if (!Offsets32(a.q_len, a.q_strides[2], a.head_size) || !Offsets32(a.k_len, a.k_strides[2], a.head_size) ||
      !Offsets32(a.k_len, a.v_strides[2], a.v_head_size) || !Offsets32(a.q_len, a.out_strides[2], a.v_head_size) ||
      a.k_len + kKeys >= (int64_t{1} << 31))
    return false;
  const int64_t q_tiles = (a.q_len + kRows - 1) / kRows;
  return q_tiles <= 2147483647 && a.heads <= 65535 && a.batch <= 65535;
}

cudaError_t AttentionFlash(const AttentionArgs& a, cudaStream_t stream, int q_warps, int splits) {
  if (a.batch * a.heads * a.q_len * a.v_head_size == 0) return cudaSuccess;
  const AttentionDevice device = CurrentAttentionDevice();
  FlashLayout l = ChooseLayout(a, PaddedHead(a), device.processors, device.shared_opt_in);
  if (q_warps > 0) l.q_warps = q_warps;
  if (splits > 0) l.splits = splits;
  if (l.q_warps * l.splits * kWarp > kMaxThreads || l.q_warps < 1 || l.splits < 1) return cudaErrorInvalidValue;
  switch (PaddedHead(a)) {
    case 16: return LaunchForMask<16>(a, l, device.shared_opt_in, stream);
    case 32: return LaunchForMask<32>(a, l, device.shared_opt_in, stream);
    case 64: return LaunchForMask<64>(a, l, device.shared_opt_in, stream);
    case 128: return LaunchForMask<128>(a, l, device.shared_opt_in, stream);
    default: return cudaErrorInvalidConfiguration;
  }
}

}  // namespace tessera::cuda::launch
