// ai.tessera::Attention (opset 1), made by graph/passes/attention_fusion: scaled dot-product attention over
// rank-4 Q, K, V read through axis maps, with an optional additive (or Boolean) mask, and in its cache-update form
// (graph/passes/cache_update_fusion) the rows a decoding step writes into K and V first. Semantics in
// graph/passes/attention_fusion.h and cache_update_fusion.h. Float32 and float16; scores, softmax and the weighted sum of V are computed
// in float32 per query row (float16 results are rounded once, at the end).
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/common/float_width.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/cpu_kernels.h"
#include "tessera/ep/attention_geometry.h"

namespace tessera::cpu {
namespace {

// The float32 inner loops over contiguous rows (keys and values whose head dim has stride 1, the layout exporters
// give), built per instruction set: a dot product with 16 independent partial sums (a strict-IEEE reduction does not
// vectorize otherwise) and y += alpha * x.
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
float DotContiguous(const float* a, const float* b, int64_t n) {
  float partial[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) partial[j] += a[i + j] * b[i + j];
  float sum = 0.0f;
  for (int j = 0; j < 16; ++j) sum += partial[j];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void AxpyContiguous(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <typename T>
void RunAttention(const ThreadPool& pool, const AttentionGeometry& g, const AttentionAttributes& a, const T* q,
                  const T* k, const T* v, const void* mask, T* out) {
  const int64_t rows = g.batch * g.heads * g.q_len;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  pool.ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.k_len * g.head_size)),
                   [&](int64_t begin, int64_t end) {
    std::vector<float> scores(g.k_len), acc(g.v_head_size), query(g.head_size);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row % g.q_len, h = (row / g.q_len) % g.heads, b = row / (g.q_len * g.heads);
      const T* q_row = q + b * g.q[0] + h * g.q[1] + i * g.q[2];
      for (int64_t d = 0; d < g.head_size; ++d) query[d] = Widen(q_row[d * g.q[3]]);
      float max = minus_inf;
      for (int64_t j = 0; j < g.k_len; ++j) {
        const T* k_row = k + b * g.k[0] + h * g.k[1] + j * g.k[2];
        float dot = 0;
        if constexpr (std::is_same_v<T, float>) {
          if (g.k[3] == 1) dot = DotContiguous(query.data(), k_row, g.head_size);
          else for (int64_t d = 0; d < g.head_size; ++d) dot += query[d] * k_row[d * g.k[3]];
        } else {
          for (int64_t d = 0; d < g.head_size; ++d) dot += query[d] * Widen(k_row[d * g.k[3]]);
        }
        float s = a.scale * dot;
        if (g.has_mask) {
          const int64_t at = b * g.mask[0] + h * g.mask[1] + i * g.mask[2] + j * g.mask[3];
          if (g.bool_mask) s = static_cast<const bool*>(mask)[at] ? s : minus_inf;
          else s += Widen(static_cast<const T*>(mask)[at]);
        }
        scores[j] = s;
        max = std::max(max, s);
      }
      T* out_row = out + b * g.out[0] + h * g.out[1] + i * g.out[2];
      if (max == minus_inf || std::isnan(max)) {  // every score -inf (or NaN): softmax is NaN, or 0 when asked
        // No keys at all: the empty weighted sum is 0, as the unfused MatMul gives.
        const float fill = (a.masked_rows_zero && max == minus_inf) || g.k_len == 0
                               ? 0.0f : std::numeric_limits<float>::quiet_NaN();
        for (int64_t d = 0; d < g.v_head_size; ++d) out_row[d * g.out[3]] = Narrow<T>(fill);
        continue;
      }
      float sum = 0;
      for (int64_t j = 0; j < g.k_len; ++j) sum += scores[j] = std::exp(scores[j] - max);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < g.k_len; ++j) {
        const float p = scores[j] / sum;
        const T* v_row = v + b * g.v[0] + h * g.v[1] + j * g.v[2];
        if constexpr (std::is_same_v<T, float>) {
          if (g.v[3] == 1) {
            AxpyContiguous(p, v_row, acc.data(), g.v_head_size);
            continue;
          }
        }
        for (int64_t d = 0; d < g.v_head_size; ++d) acc[d] += p * Widen(v_row[d * g.v[3]]);
      }
      for (int64_t d = 0; d < g.v_head_size; ++d) out_row[d * g.out[3]] = Narrow<T>(acc[d]);
    }
  });
}

// The tensor the attention reads at `operand` (1: K, 2: V): the input itself, or in the cache-update form a copy of
// it with the updates scattered in along `axis` (ScatterElements' semantics), written to output `operand` -- the
// input's own buffer when the executor hands it over for an in-place update, so only the updates are written.
const Tensor& ReadCache(KernelContext& ctx, size_t operand, int64_t axis, Tensor& scratch) {
  const Tensor& cache = ctx.Input(operand);
  if (!UpdatesCache(ctx, operand)) return cache;
  const size_t first = operand == 1 ? kKeyIndicesInput : kValueIndicesInput;
  const Tensor& indices = ctx.Input(first);
  const Tensor& updates = ctx.Input(first + 1);
  CheckCacheUpdate(ctx.node(), operand == 1 ? "K" : "V", cache, indices, updates, axis);
  Tensor& out = ctx.NumOutputs() > operand ? ctx.Output(operand, cache.type(), cache.shape())
                                           : (scratch = Tensor::Allocate(cache.type(), cache.shape(), ctx.allocator()));
  if (out.raw_data() != cache.raw_data() && out.SizeInBytes() > 0)
    std::memcpy(out.raw_data(), cache.raw_data(), out.SizeInBytes());
  const Shape& at = indices.shape();
  const Shape& dims = cache.shape();
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const size_t element = SizeOf(cache.type());
  char* target = static_cast<char*>(out.raw_data());
  const char* source = static_cast<const char*>(updates.raw_data());
  int64_t coord[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    int64_t rest = i;
    for (int d = 3; d >= 0; --d) {
      coord[d] = rest % at[d];
      rest /= at[d];
    }
    coord[axis] = CacheIndex(ctx.node(), indices, i, dims[axis]);
    const int64_t offset = coord[0] * strides[0] + coord[1] * strides[1] + coord[2] * strides[2] + coord[3];
    std::memcpy(target + offset * element, source + i * element, element);
  }
  return out;
}

class Attention : public Kernel {
 public:
  explicit Attention(const KernelInfo& info) : attributes_(ReadAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& q = ctx.Input(0);
    const Tensor* mask = ctx.OptionalInput(3);
    Tensor k_scratch, v_scratch;
    const Tensor& k = ReadCache(ctx, 1, attributes_.k_axes[2], k_scratch);
    const Tensor& v = ReadCache(ctx, 2, attributes_.v_axes[2], v_scratch);
    const AttentionGeometry g = MakeAttentionGeometry(ctx.node(), attributes_, q, k, v, mask);
    Tensor& y = ctx.Output(0, q.type(), g.output_shape);
    if (y.NumElements() == 0) return;
    const void* mask_data = mask != nullptr ? mask->raw_data() : nullptr;
    if (q.type() == DataType::kFloat)
      RunAttention<float>(ctx.thread_pool(), g, attributes_, q.Data<float>() + g.q_offset,
                          k.Data<float>() + g.k_offset, v.Data<float>() + g.v_offset, mask_data, y.Data<float>());
    else
      RunAttention<Float16>(ctx.thread_pool(), g, attributes_, q.Data<Float16>() + g.q_offset,
                            k.Data<Float16>() + g.k_offset, v.Data<Float16>() + g.v_offset, mask_data,
                            y.Data<Float16>());
  }

 private:
  AttentionAttributes attributes_;
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry) {
  registry.Register<Attention>(AttentionKernelDef());
}

}  // namespace tessera::cpu
