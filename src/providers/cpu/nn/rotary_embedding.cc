// RotaryEmbedding: ai.onnx (opset 23) and ONNX Runtime's com.microsoft contrib op. Rotates the first
// `rotary_embedding_dim` features of every head by the angle of its token's position: with c, s the cached
// cosine and sine of that position and (x1, x2) the feature pairs (the two halves of the rotated span, or
// even/odd features when `interleaved`), out1 = c*x1 - s*x2 and out2 = s*x1 + c*x2; the remaining features pass
// through.
//
// X is [batch, seq, hidden] (3-D, `num_heads` splits hidden into heads) or [batch, heads, seq, head_size]
// (4-D). Inputs by domain:
//   ai.onnx:       X, cos_cache, sin_cache, position_ids?  — with position_ids [batch, seq] the caches are
//                  [max_position, rot/2] rows picked per token; without them they are [batch, seq, rot/2].
//   com.microsoft: X, position_ids, cos_cache, sin_cache   — position_ids [batch, seq], or one value: the
//                  first position of every sequence (token s sits at position_ids[0] + s); caches
//                  [max_position, rot/2].
// Arithmetic in float32 for float16 and bfloat16.
#include <cstring>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {

class RotaryEmbedding : public Kernel {
 public:
  explicit RotaryEmbedding(const KernelInfo& info)
      : contrib_(info.node().domain == "com.microsoft"),
        interleaved_(info.node().GetInt("interleaved", 0) != 0),
        num_heads_(info.node().GetInt("num_heads", 0)),
        rotary_dim_(info.node().GetInt("rotary_embedding_dim", 0)) {
    const Node& node = info.node();
    if (num_heads_ < 0 || rotary_dim_ < 0)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": num_heads and rotary_embedding_dim must be >= 0");
    if (contrib_ && node.GetFloat("scale", 1.0f) != 1.0f)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": attribute scale other than 1 is not supported");
    if (contrib_ && node.GetInt("is_packed_batching", 0) != 0)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": is_packed_batching = 1 is not supported");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& cos = ctx.Input(contrib_ ? 2 : 1);
    const Tensor& sin = ctx.Input(contrib_ ? 3 : 2);
    const Tensor* positions = contrib_ ? &ctx.Input(1) : ctx.OptionalInput(3);

    const size_t rank = x.shape().rank();
    if (rank != 3 && rank != 4)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X is ", x, ", expected rank 3 or 4");
    Layout l;
    l.batch = x.shape()[0];
    if (rank == 4) {
      l.heads = x.shape()[1];
      l.seq = x.shape()[2];
      l.head_size = x.shape()[3];
      l.head_stride = l.seq * l.head_size;
      l.token_stride = l.head_size;
      l.batch_stride = l.heads * l.seq * l.head_size;
    } else {
      l.seq = x.shape()[1];
      const int64_t hidden = x.shape()[2];
      // The contrib op infers heads from the cache width when num_heads is absent (full rotation).
      l.heads = num_heads_ > 0 ? num_heads_ : (contrib_ && cos.shape().rank() == 2 ? hidden / (2 * cos.shape()[1]) : 0);
      if (l.heads <= 0 || hidden % l.heads != 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X is ", x, "; a 3-D X needs attribute num_heads dividing ",
             hidden);
      l.head_size = hidden / l.heads;
      l.head_stride = l.head_size;
      l.token_stride = hidden;
      l.batch_stride = l.seq * hidden;
    }
    l.rot = rotary_dim_ > 0 ? rotary_dim_ : l.head_size;
    if (l.rot > l.head_size || l.rot % 2 != 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": rotary_embedding_dim ", l.rot,
           " must be even and at most the head size ", l.head_size);
    const int64_t half = l.rot / 2;
    if (cos.type() != x.type() || sin.type() != x.type() || cos.shape() != sin.shape())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cos_cache ", cos, " and sin_cache ", sin,
           " must match each other and have X's type ", DataTypeName(x.type()));
    if (cos.shape().rank() == 0 || cos.shape()[cos.shape().rank() - 1] != half)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cos_cache is ", cos, ", expected a last dim of ", half,
           " (rotary_embedding_dim / 2)");

    // Row of the caches for each (batch, token).
    std::vector<int64_t> rows(static_cast<size_t>(l.batch * l.seq));
    if (positions != nullptr) {
      if (cos.shape().rank() != 2)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": with position_ids, cos_cache is ", cos,
             ", expected [max_position, ", half, "]");
      const int64_t max_position = cos.shape()[0];
      auto position = [&](int64_t i) -> int64_t {
        return positions->type() == DataType::kInt32 ? positions->Data<int32_t>()[i] : positions->Data<int64_t>()[i];
      };
      if (positions->type() != DataType::kInt64 && positions->type() != DataType::kInt32)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position_ids is ", *positions, ", expected int64");
      const bool offset = contrib_ && positions->NumElements() == 1;
      if (!offset && (positions->shape().rank() != 2 || positions->shape()[0] != l.batch || positions->shape()[1] != l.seq))
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position_ids is ", *positions, ", expected [", l.batch,
             ", ", l.seq, "]");
      for (int64_t b = 0; b < l.batch; ++b)
        for (int64_t s = 0; s < l.seq; ++s) {
          const int64_t p = offset ? position(0) + s : position(b * l.seq + s);
          if (p < 0 || p >= max_position)
            Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position ", p, " (batch ", b, ", token ", s,
                 ") is outside the caches' ", max_position, " rows");
          rows[static_cast<size_t>(b * l.seq + s)] = p;
        }
    } else {
      if (cos.shape().rank() != 3 || cos.shape()[0] != l.batch || cos.shape()[1] != l.seq)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": without position_ids, cos_cache is ", cos, ", expected [",
             l.batch, ", ", l.seq, ", ", half, "]");
      for (int64_t i = 0; i < l.batch * l.seq; ++i) rows[static_cast<size_t>(i)] = i;
    }

    Tensor& y = ctx.Output(0, x.type(), x.shape());
    DispatchType(x.type(), TypeList<float, Float16, BFloat16>{}, node, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Rotate<T>(ctx, l, rows, x.Data<T>(), cos.Data<T>(), sin.Data<T>(), y.Data<T>());
    });
  }

 private:
  struct Layout {
    int64_t batch = 0, heads = 0, seq = 0, head_size = 0, rot = 0;
    int64_t batch_stride = 0, head_stride = 0, token_stride = 0;  // element strides of X
  };

  template <typename T>
  void Rotate(KernelContext& ctx, const Layout& l, const std::vector<int64_t>& rows, const T* x, const T* cos,
              const T* sin, T* y) const {
    const int64_t half = l.rot / 2;
    const int64_t count = l.batch * l.seq * l.heads;
    ctx.thread_pool().ParallelFor(count, std::max<int64_t>(1, 4096 / std::max<int64_t>(l.head_size, 1)),
                                  [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t h = i % l.heads, s = (i / l.heads) % l.seq, b = i / (l.heads * l.seq);
        const int64_t offset = b * l.batch_stride + h * l.head_stride + s * l.token_stride;
        const T* in = x + offset;
        T* out = y + offset;
        const int64_t row = rows[static_cast<size_t>(b * l.seq + s)] * half;
        for (int64_t j = 0; j < half; ++j) {
          const int64_t i1 = interleaved_ ? 2 * j : j, i2 = interleaved_ ? 2 * j + 1 : j + half;
          const float c = Load(cos[row + j]), sn = Load(sin[row + j]);
          const float x1 = Load(in[i1]), x2 = Load(in[i2]);
          out[i1] = Store<T>(c * x1 - sn * x2);
          out[i2] = Store<T>(sn * x1 + c * x2);
        }
        if (l.rot < l.head_size && out != in) std::memcpy(out + l.rot, in + l.rot, sizeof(T) * (l.head_size - l.rot));
      }
    });
  }

  bool contrib_, interleaved_;
  int64_t num_heads_, rotary_dim_;
};

KernelDef RotaryDef(const char* domain, int since) {
  KernelDef def;
  def.op_type = "RotaryEmbedding";
  def.domain = domain;
  def.since_version = since;
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  return def;
}

}  // namespace

void RegisterRotaryEmbeddingKernels(KernelRegistry& registry) {
  registry.Register<RotaryEmbedding>(RotaryDef("", 23));
  registry.Register<RotaryEmbedding>(RotaryDef("com.microsoft", 1));
}

}  // namespace tessera::cpu
