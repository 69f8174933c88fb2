// RotaryEmbedding: ai.onnx (opset 23) and ONNX Runtime's com.microsoft contrib op, semantics and checks in the EP
// SDK's tessera/ep/rotary_geometry.h. Position values are checked against the caches' rows here (the host reads
// them). Arithmetic in float32 for float16 and bfloat16.
#include <cstring>

#include "tessera/ep/rotary_geometry.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {

class RotaryEmbedding : public Kernel {
 public:
  explicit RotaryEmbedding(const KernelInfo& info) : attributes_(ReadRotaryAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const RotaryInputs in = RotaryInputIndices(attributes_);
    const Tensor& x = ctx.Input(0);
    const Tensor& cos = ctx.Input(in.cos);
    const Tensor& sin = ctx.Input(in.sin);
    const Tensor* positions = attributes_.contrib ? &ctx.Input(1) : ctx.OptionalInput(3);
    const RotaryGeometry l = MakeRotaryGeometry(node, attributes_, x, cos, sin, positions);

    // Row of the caches for each (batch, token).
    std::vector<int64_t> rows(static_cast<size_t>(l.batch * l.seq));
    if (positions != nullptr) {
      auto position = [&](int64_t i) -> int64_t {
        return positions->type() == DataType::kInt32 ? positions->Data<int32_t>()[i] : positions->Data<int64_t>()[i];
      };
      const bool offset = l.positions == RotaryPositions::kFirstOnly;
      for (int64_t b = 0; b < l.batch; ++b)
        for (int64_t s = 0; s < l.seq; ++s) {
          const int64_t p = offset ? position(0) + s : position(b * l.seq + s);
          if (p < 0 || p >= l.max_position)
            Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position ", p, " (batch ", b, ", token ", s,
                 ") is outside the caches' ", l.max_position, " rows");
          rows[static_cast<size_t>(b * l.seq + s)] = p;
        }
    } else {
      for (int64_t i = 0; i < l.batch * l.seq; ++i) rows[static_cast<size_t>(i)] = i;
    }

    Tensor& y = ctx.Output(0, x.type(), x.shape());
    DispatchType(x.type(), TypeList<float, Float16, BFloat16>{}, node, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Rotate<T>(ctx, l, rows, x.Data<T>(), cos.Data<T>(), sin.Data<T>(), y.Data<T>());
    });
  }

 private:
  template <typename T>
  void Rotate(KernelContext& ctx, const RotaryGeometry& l, const std::vector<int64_t>& rows, const T* x, const T* cos,
              const T* sin, T* y) const {
    const bool interleaved = attributes_.interleaved;
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
          const int64_t i1 = interleaved ? 2 * j : j, i2 = interleaved ? 2 * j + 1 : j + half;
          const float c = Load(cos[row + j]), sn = Load(sin[row + j]);
          const float x1 = Load(in[i1]), x2 = Load(in[i2]);
          out[i1] = Store<T>(c * x1 - sn * x2);
          out[i2] = Store<T>(sn * x1 + c * x2);
        }
        if (l.rot < l.head_size && out != in) std::memcpy(out + l.rot, in + l.rot, sizeof(T) * (l.head_size - l.rot));
      }
    });
  }

  RotaryAttributes attributes_;
};

}  // namespace

void RegisterRotaryEmbeddingKernels(KernelRegistry& registry) {
  registry.Register<RotaryEmbedding>(RotaryEmbeddingKernelDef(false));
  registry.Register<RotaryEmbedding>(RotaryEmbeddingKernelDef(true));
}

}  // namespace tessera::cpu
