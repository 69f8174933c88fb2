// RMSNormalization (ai.onnx, opset 23) and ONNX Runtime's com.microsoft SimplifiedLayerNormalization, the same
// operation (and com.microsoft SkipSimplifiedLayerNormalization, the residual form, at the end of this file): over the trailing axes from `axis`, Y = X / sqrt(mean(X^2) + epsilon) * scale, with scale
// broadcasting to those axes. The statistics are computed in float32 (stash_type 1, the only value ONNX
// defines for it); SimplifiedLayerNormalization can also return 1 / sqrt(mean(X^2) + epsilon) per row
// (output 1, float32, X's shape with the normalized axes set to 1).
#include <cmath>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {

class RmsNormalization : public Kernel {
 public:
  explicit RmsNormalization(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", -1)), epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {
    if (info.node().GetInt("stash_type", 1) != 1)
      Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": stash_type ", info.node().GetInt("stash_type", 1),
           " is not supported (only 1, float32)");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& scale = ctx.Input(1);
    const int64_t rank = static_cast<int64_t>(x.shape().rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis_, " is out of range for X ", x);
    if (scale.type() != x.type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": scale is ", scale, ", expected X's type ",
           DataTypeName(x.type()));
    Shape inner_shape;
    inner_shape.dims().assign(x.shape().dims().begin() + axis, x.shape().dims().end());
    const int64_t inner = inner_shape.NumElements();
    const int64_t rows = inner == 0 ? 0 : x.NumElements() / inner;
    // The scale expanded to the normalized axes once per call (it broadcasts to them).
    std::vector<float> gamma(static_cast<size_t>(inner));
    DispatchType(x.type(), TypeList<float, double, Float16, BFloat16>{}, node, [&](auto tag) {
      using T = typename decltype(tag)::type;
      CheckUnidirectionalBroadcast(node, scale.shape(), inner_shape, "scale");
      const T* s = scale.Data<T>();
      const std::vector<int64_t>& sd = scale.shape().dims();
      const size_t pad = inner_shape.rank() - sd.size();
      for (int64_t j = 0; j < inner; ++j) {
        // Unravel j over the normalized axes and read the scale at the matching (broadcast) position.
        int64_t rest = j, offset = 0, stride = 1;
        for (size_t d = inner_shape.rank(); d-- > 0;) {
          const int64_t dim = inner_shape[d], coordinate = rest % dim;
          rest /= dim;
          if (d < pad) continue;
          const int64_t size = sd[d - pad];
          if (size != 1) offset += coordinate * stride;
          stride *= size;
        }
        gamma[static_cast<size_t>(j)] = static_cast<float>(Load(s[offset]));
      }

      Tensor& y = ctx.Output(0, x.type(), x.shape());
      float* inv_std = nullptr;
      if (ctx.NumOutputs() > 1) {
        std::vector<int64_t> dims = x.shape().dims();
        for (int64_t d = axis; d < rank; ++d) dims[static_cast<size_t>(d)] = 1;
        Shape stats_shape;
        stats_shape.dims() = std::move(dims);
        inv_std = ctx.Output(1, DataType::kFloat, stats_shape).Data<float>();
      }
      const T* in = x.Data<T>();
      T* out = y.Data<T>();
      ctx.thread_pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
                                    [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* row = in + r * inner;
          double sum = 0;
          for (int64_t j = 0; j < inner; ++j) {
            const double v = static_cast<double>(Load(row[j]));
            sum += v * v;
          }
          const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(inner) + epsilon_));
          if (inv_std != nullptr) inv_std[r] = inv;
          for (int64_t j = 0; j < inner; ++j)
            out[r * inner + j] = Store<T>(static_cast<float>(Load(row[j])) * inv * gamma[static_cast<size_t>(j)]);
        }
      });
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
};

// com.microsoft SkipSimplifiedLayerNormalization(input, skip, gamma, bias?): s = input + skip (+ bias), then
// output = s / sqrt(mean(s^2) + epsilon) * gamma over the last axis. input and skip have one shape ([B, S, H] or
// [tokens, H]); gamma and bias are [H]. Outputs 2 (inv_std_var, float32, the last dim set to 1) and 3
// (input_skip_bias_sum) when asked; output 1 (mean) has no meaning for this normalization and is refused.
class SkipRmsNormalization : public Kernel {
 public:
  explicit SkipRmsNormalization(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {
    const Node& node = info.node();
    if (node.outputs.size() > 1 && !node.outputs[1].empty())
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": output 1 (mean) is not defined for the RMS form");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor &x = ctx.Input(0), &skip = ctx.Input(1), &gamma = ctx.Input(2);
    const Tensor* bias = ctx.OptionalInput(3);
    const int64_t rank = static_cast<int64_t>(x.shape().rank());
    if (rank < 2 || skip.shape() != x.shape())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", x, " and skip ", skip,
           " must have one shape of rank 2 or 3");
    const int64_t hidden = x.shape()[rank - 1];
    for (const Tensor* t : {&gamma, bias})
      if (t && (t->type() != x.type() || t->shape() != Shape{hidden}))
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": gamma/bias is ", *t, ", expected ",
             DataTypeName(x.type()), " [", hidden, "]");
    const int64_t rows = hidden == 0 ? 0 : x.NumElements() / hidden;
    DispatchType(x.type(), TypeList<float, Float16, BFloat16>{}, node, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      float* inv_std = nullptr;
      if (ctx.NumOutputs() > 2 && !node.outputs[2].empty()) {
        std::vector<int64_t> dims = x.shape().dims();
        dims.back() = 1;
        inv_std = ctx.Output(2, DataType::kFloat, Shape(dims)).template Data<float>();
      }
      T* sum_out = ctx.NumOutputs() > 3 && !node.outputs[3].empty()
                       ? ctx.Output(3, x.type(), x.shape()).template Data<T>()
                       : nullptr;
      const T *in = x.Data<T>(), *sk = skip.Data<T>(), *g = gamma.Data<T>();
      const T* b = bias ? bias->Data<T>() : nullptr;
      T* out = y.Data<T>();
      ctx.thread_pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1)),
                                    [&](int64_t begin, int64_t end) {
        std::vector<float> s(static_cast<size_t>(hidden));
        for (int64_t r = begin; r < end; ++r) {
          double squares = 0;
          for (int64_t j = 0; j < hidden; ++j) {
            // Rounded to T like the unfused Adds, so that input_skip_bias_sum and the normalization agree.
            float v = Load(Store<T>(Load(in[r * hidden + j]) + Load(sk[r * hidden + j])));
            if (b) v = Load(Store<T>(v + Load(b[j])));
            s[static_cast<size_t>(j)] = v;
            if (sum_out) sum_out[r * hidden + j] = Store<T>(v);
            squares += static_cast<double>(v) * v;
          }
          const float inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(hidden) + epsilon_));
          if (inv_std) inv_std[r] = inv;
          for (int64_t j = 0; j < hidden; ++j)
            out[r * hidden + j] = Store<T>(s[static_cast<size_t>(j)] * inv * Load(g[j]));
        }
      });
    });
  }

 private:
  float epsilon_;
};

KernelDef RmsDef(const char* op, const char* domain, int since) {
  KernelDef def;
  def.op_type = op;
  def.domain = domain;
  def.since_version = since;
  def.input_types = {{0, DataTypesOf(TypeList<float, double, Float16, BFloat16>{})}};
  return def;
}

}  // namespace

void RegisterRmsNormalizationKernels(KernelRegistry& registry) {
  registry.Register<RmsNormalization>(RmsDef("RMSNormalization", "", 23));
  registry.Register<RmsNormalization>(RmsDef("SimplifiedLayerNormalization", "com.microsoft", 1));
  registry.Register<RmsNormalization>(RmsDef("SimplifiedLayerNormalization", "", 1));  // ORT writes it unprefixed
  KernelDef skip = RmsDef("SkipSimplifiedLayerNormalization", "com.microsoft", 1);
  skip.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  registry.Register<SkipRmsNormalization>(std::move(skip));
}

}  // namespace tessera::cpu
