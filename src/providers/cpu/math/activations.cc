// Activation functions. Attribute defaults follow the ONNX specs.
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/vector_math.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

struct ReluOp {
  template <typename C>
  C operator()(C x) const { return x > C(0) ? x : C(0); }
};

class LeakyReluOp {
 public:
  explicit LeakyReluOp(const Node& node) : alpha_(node.GetFloat("alpha", 0.01f)) {}
  template <typename C>
  C operator()(C x) const { return Select(x >= C(0), x, static_cast<C>(alpha_) * x); }

 private:
  float alpha_;
};

// For very negative x, exp(-x) overflows to inf and the result correctly becomes 0.
struct SigmoidOp {
  template <typename C>
  C operator()(C x) const { return C(1) / (C(1) + Exp(-x)); }
};

// com.microsoft QuickGelu: x * sigmoid(alpha * x), alpha 1.702 by default (CLIP-style exports); ONNX Swish (opset
// 24) is the same function with alpha 1 by default.
float QuickGeluAlpha(const Node& node) { return node.GetFloat("alpha", node.op_type == "Swish" ? 1.0f : 1.702f); }

class QuickGeluOp {
 public:
  explicit QuickGeluOp(const Node& node) : alpha_(QuickGeluAlpha(node)) {}
  template <typename C>
  C operator()(C x) const { return x * (C(1) / (C(1) + Exp(-static_cast<C>(alpha_) * x))); }

 private:
  float alpha_;
};

class HardSigmoidOp {
 public:
  explicit HardSigmoidOp(const Node& node) : alpha_(node.GetFloat("alpha", 0.2f)), beta_(node.GetFloat("beta", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    const C y = static_cast<C>(alpha_) * x + static_cast<C>(beta_);
    return Select(y < C(0), C(0), Select(y > C(1), C(1), y));
  }

 private:
  float alpha_, beta_;
};

struct TanhOp {
  template <typename C>
  C operator()(C x) const { return Tanh(x); }
};

class EluOp {
 public:
  explicit EluOp(const Node& node) : alpha_(node.GetFloat("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const { return x >= C(0) ? x : static_cast<C>(alpha_) * std::expm1(x); }

 private:
  float alpha_;
};

// Opset 1 had rounded defaults (1.6732, 1.0507); opset 6 gave them in full.
class SeluOp {
 public:
  explicit SeluOp(const Node& node)
      : alpha_(node.GetFloat("alpha", node.opset < 6 ? 1.6732f : 1.67326319217681884765625f)),
        gamma_(node.GetFloat("gamma", node.opset < 6 ? 1.0507f : 1.05070102214813232421875f)) {}
  template <typename C>
  C operator()(C x) const {
    const C g = static_cast<C>(gamma_);
    return x > C(0) ? g * x : g * static_cast<C>(alpha_) * std::expm1(x);
  }

 private:
  float alpha_, gamma_;
};

// log(1 + exp(x)) without overflow for large x.
struct SoftplusOp {
  template <typename C>
  C operator()(C x) const { return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
};

struct SoftsignOp {
  template <typename C>
  C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
};

struct HardSwishOp {
  template <typename C>
  C operator()(C x) const {
    const C y = x / C(6) + C(0.5);
    return x * Select(y < C(0), C(0), Select(y > C(1), C(1), y));
  }
};

// approximate = "none": x * Phi(x) with the exact normal CDF; "tanh": the tanh approximation.
struct GeluErfOp {
  template <typename C>
  C operator()(C x) const {
    return C(0.5) * x * (C(1) + Erf(x * static_cast<C>(1 / std::numbers::sqrt2)));
  }
};

struct GeluTanhOp {
  template <typename C>
  C operator()(C x) const {
    const C k = static_cast<C>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
    return C(0.5) * x * (C(1) + Tanh(k * (x + C(0.044715) * x * x * x)));
  }
};

// Float Gelu over a span, built per instruction set: the generic element loop compiles for the baseline
// ISA, where erf's polynomial and exp run four lanes wide at best (Gelu is a transformer's widest activation).
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void GeluErfSpan(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = GeluErfOp{}(x[i]);
}
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void GeluTanhSpan(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = GeluTanhOp{}(x[i]);
}

// y = op(x) elementwise: float through `float_span(in, out, count)` (a loop built per instruction set, below),
// split over the pool when large; other types through the generic element loop.
template <typename T, typename Op, typename FloatSpan>
void SpanMap(const ThreadPool& pool, const T* in, T* out, int64_t n, const Op& op, const FloatSpan& float_span) {
  if constexpr (std::is_same_v<T, float>) {
    if (n <= kElementwiseParallelThreshold) return float_span(in, out, n);
    pool.ParallelFor(n, kElementwiseGrain,
                     [&](int64_t begin, int64_t end) { float_span(in + begin, out + begin, end - begin); });
  } else {
    UnaryMap(pool, in, out, n, LiftUnary<T>(op));
  }
}

// y = Gelu(x) elementwise, by the form's per-ISA span for float.
template <typename T, typename Op>
void GeluMap(const ThreadPool& pool, const T* in, T* out, int64_t n, Op op) {
  SpanMap(pool, in, out, n, op, std::is_same_v<Op, GeluTanhOp> ? GeluTanhSpan : GeluErfSpan);
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void SigmoidSpan(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = SigmoidOp{}(x[i]);
}
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void TanhSpan(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = TanhOp{}(x[i]);
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void QuickGeluSpan(const float* x, float* y, int64_t n, float alpha) {
  // x times sigmoid(alpha x), rounded as Sigmoid then Mul round it: silu_fusion leaves results unchanged.
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (1.0f / (1.0f + Exp(-alpha * x[i])));
}

// com.microsoft QuickGelu (also what silu_fusion writes, alpha 1) and ONNX Swish: the float loop per instruction set.
class QuickGeluKernel : public Kernel {
 public:
  explicit QuickGeluKernel(const KernelInfo& info) : op_(info.node()), alpha_(QuickGeluAlpha(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    DispatchType(x.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      SpanMap(ctx.thread_pool(), x.Data<T>(), y.Data<T>(), x.NumElements(), op_,
              [this](const float* in, float* out, int64_t n) { QuickGeluSpan(in, out, n, alpha_); });
    });
  }

 private:
  QuickGeluOp op_;
  float alpha_;
};

// ONNX SwiGLU (opset 28): Y = Swish_alpha(A) * B, A the gate and B the value, of one shape (no broadcasting). Float
// runs the QuickGelu loop of the instruction set, then the product; float16 and bfloat16 compute in float per block.
class SwiGluKernel : public Kernel {
 public:
  explicit SwiGluKernel(const KernelInfo& info) : alpha_(info.node().GetFloat("alpha", 1.0f)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type() || a.shape() != b.shape())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A and B must have one type and shape (SwiGLU does ",
           "not broadcast), got ", a.Describe(), " and ", b.Describe());
    Tensor& y = ctx.Output(0, a.type(), a.shape());
    constexpr int64_t kBlock = 2048;
    DispatchType(a.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.Data<T>();
      const T* pb = b.Data<T>();
      T* py = y.Data<T>();
      ctx.thread_pool().ParallelFor((a.NumElements() + kBlock - 1) / kBlock, 1, [&](int64_t first, int64_t last) {
        float gate[kBlock];
        for (int64_t block = first; block < last; ++block) {
          const int64_t begin = block * kBlock, n = std::min(kBlock, a.NumElements() - begin);
          if constexpr (std::is_same_v<T, float>) {
            QuickGeluSpan(pa + begin, py + begin, n, alpha_);
            for (int64_t i = 0; i < n; ++i) py[begin + i] *= pb[begin + i];
          } else if constexpr (std::is_same_v<T, double>) {
            for (int64_t i = begin; i < begin + n; ++i)
              py[i] = pa[i] / (1.0 + std::exp(-static_cast<double>(alpha_) * pa[i])) * pb[i];
          } else {
            for (int64_t i = 0; i < n; ++i) gate[i] = ToFloat(pa[begin + i]);
            QuickGeluSpan(gate, gate, n, alpha_);
            for (int64_t i = 0; i < n; ++i) {
              const float v = gate[i] * ToFloat(pb[begin + i]);
              if constexpr (std::is_same_v<T, Float16>) py[begin + i] = ToFloat16(v);
              else py[begin + i] = ToBFloat16(v);
            }
          }
        }
      });
    });
  }

 private:
  float alpha_;
};

// An attribute-free activation whose float loop is `span` (built per instruction set, as above); other types take
// the generic element loop.
template <typename Op, void (*kSpan)(const float*, float*, int64_t)>
class SpanActivationKernel : public Kernel {
 public:
  explicit SpanActivationKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    DispatchType(x.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      SpanMap(ctx.thread_pool(), x.Data<T>(), y.Data<T>(), x.NumElements(), Op{}, kSpan);
    });
  }
};

template <typename Op, void (*kSpan)(const float*, float*, int64_t)>
void RegisterSpanActivation(KernelRegistry& registry, const std::string& op_type) {
  KernelDef def;
  def.op_type = op_type;
  def.since_version = 1;
  def.until_version = kLatestOpset;
  def.input_types[0] = DataTypesOf(FloatTypes{});
  registry.Register<SpanActivationKernel<Op, kSpan>>(std::move(def));
}

// Gelu picks its formula once per kernel: a branch on `approximate` inside the element loop would keep the
// loop scalar.
class GeluKernel : public Kernel {
 public:
  explicit GeluKernel(const KernelInfo& info) : tanh_(IsTanh(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    DispatchType(x.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      if (tanh_) GeluMap(ctx.thread_pool(), x.Data<T>(), y.Data<T>(), x.NumElements(), GeluTanhOp{});
      else GeluMap(ctx.thread_pool(), x.Data<T>(), y.Data<T>(), x.NumElements(), GeluErfOp{});
    });
  }

 private:
  static bool IsTanh(const Node& node) {
    const std::string approximate = node.GetString("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute approximate must be 'none' or 'tanh', not '",
           approximate, "'");
    }
    return approximate == "tanh";
  }

  bool tanh_;
};

// ONNX Runtime's com.microsoft Gelu family, found in exported transformer models: Gelu (exact, no bias),
// BiasGelu (exact, bias required) and FastGelu (tanh approximation, bias optional). The bias is a 1-D tensor
// of the last dim's size, added before the activation.
class ContribGeluKernel : public Kernel {
 public:
  enum class Form { kGelu, kBiasGelu, kFastGelu };
  ContribGeluKernel(const KernelInfo&, Form form) : form_(form) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor* bias = form_ == Form::kGelu ? nullptr : ctx.OptionalInput(1);
    if (form_ == Form::kBiasGelu && bias == nullptr)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": BiasGelu needs its bias input");
    const int64_t width = x.shape().rank() == 0 ? 1 : x.shape()[x.shape().rank() - 1];
    if (bias != nullptr && (bias->type() != x.type() || bias->NumElements() != width || bias->shape().rank() != 1))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the bias is ", *bias, ", expected ",
           DataTypeName(x.type()), " [", width, "] (the last dim of X ", x, ")");
    DispatchType(x.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      if (form_ == Form::kFastGelu) Run<T>(ctx, x, bias, y, width, GeluTanhOp{});
      else Run<T>(ctx, x, bias, y, width, GeluErfOp{});
    });
  }

 private:
  template <typename T, typename Op>
  static void Run(KernelContext& ctx, const Tensor& x, const Tensor* bias, Tensor& y, int64_t width, Op op) {
    const T* in = x.Data<T>();
    T* out = y.Data<T>();
    if (bias == nullptr) return GeluMap(ctx.thread_pool(), in, out, x.NumElements(), op);
    const T* b = bias->Data<T>();
    const int64_t rows = width == 0 ? 0 : x.NumElements() / width;
    ctx.thread_pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)),
                                  [&](int64_t begin, int64_t end) {
                                    for (int64_t r = begin; r < end; ++r)
                                      for (int64_t j = 0; j < width; ++j)
                                        out[r * width + j] =
                                            StoreResult<T>(op(Load(in[r * width + j]) + Load(b[j])));
                                  });
  }

  Form form_;
};

class ThresholdedReluOp {
 public:
  explicit ThresholdedReluOp(const Node& node) : alpha_(node.GetFloat("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const { return x > static_cast<C>(alpha_) ? x : C(0); }

 private:
  float alpha_;
};

class CeluOp {
 public:
  explicit CeluOp(const Node& node) : alpha_(node.GetFloat("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha_);
    return x > C(0) ? x : a * std::expm1(x / a);
  }

 private:
  float alpha_;
};

// x * tanh(softplus(x))
struct MishOp {
  template <typename C>
  C operator()(C x) const { return x * std::tanh(SoftplusOp{}(x)); }
};

// Before opset 7 a one-dimensional slope of x's channel count applies per channel (dimension 1); since
// then the slope broadcasts numpy-style, aligned at the last dimension.
Shape SlopeShape(const Node& node, const Shape& slope, const Shape& x) {
  if (node.opset >= 7 || slope.rank() != 1 || x.rank() < 2 || slope[0] != x[1]) return slope;
  std::vector<int64_t> dims(x.rank() - 1, 1);
  dims[0] = slope[0];
  return Shape(std::move(dims));
}

// PRelu: y = x < 0 ? slope * x : x, with slope broadcast to x's shape.
class PReluKernel : public Kernel {
 public:
  explicit PReluKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& slope = ctx.Input(1);
    if (slope.type() != x.type()) {
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": slope has type ", DataTypeName(slope.type()),
           " but X has type ", DataTypeName(x.type()));
    }
    const Shape slope_shape = SlopeShape(ctx.node(), slope.shape(), x.shape());
    CheckUnidirectionalBroadcast(ctx.node(), slope_shape, x.shape(), "slope");
    DispatchType(x.type(), SignedNumericTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      const auto op = LiftBinary<T>([](auto v, auto s) {
        using C = decltype(v);
        return Select(v < C(0), static_cast<C>(s * v), v);
      });
      BinaryBroadcast(ctx.thread_pool(), x.Data<T>(), x.shape(), slope.Data<T>(), slope_shape, y.Data<T>(), x.shape(),
                      op);
    });
  }
};

// Clip: limits from attributes (opset < 11) or from optional scalar inputs 1 and 2 (opset >= 11);
// an absent limit is the type's lowest / highest value.
class ClipKernel : public Kernel {
 public:
  explicit ClipKernel(const KernelInfo& info)
      : attribute_min_(info.node().GetFloat("min", std::numeric_limits<float>::lowest())),
        attribute_max_(info.node().GetFloat("max", std::numeric_limits<float>::max())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    DispatchType(x.type(), AllNumericTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if (ctx.node().opset < 11) {
        lo = static_cast<C>(attribute_min_);
        hi = static_cast<C>(attribute_max_);
      } else {
        ReadLimit<T>(ctx, 1, "min", lo);
        ReadLimit<T>(ctx, 2, "max", hi);
      }
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      // Applied as min(max(x, lo), hi): when lo > hi every element becomes hi, as the spec says.
      UnaryMap(ctx.thread_pool(), x.Data<T>(), y.Data<T>(), x.NumElements(), [lo, hi](T v) {
        const C c = Load(v);
        const C above = c < lo ? lo : c;
        return Store<T>(above > hi ? hi : above);
      });
    });
  }

 private:
  template <typename T>
  static void ReadLimit(KernelContext& ctx, size_t index, const char* name, ComputeType<T>& limit) {
    const Tensor* t = ctx.OptionalInput(index);
    if (t == nullptr) return;
    if (t->NumElements() != 1 || t->type() != DataTypeOf<T>()) {
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input '", name, "' must be a scalar of type ",
           DataTypeName(DataTypeOf<T>()), ", got ", t->Describe());
    }
    limit = Load(t->Data<T>()[0]);
  }

  float attribute_min_, attribute_max_;
};

}  // namespace

// Registrations start at each op's first opset: the opset 1 forms differ only by attribute
// consumed_inputs (memory-reuse hints, ignored), Selu's defaults and PRelu's slope layout (handled above).
void RegisterActivationKernels(KernelRegistry& registry) {
  RegisterUnary<ReluOp, SignedNumericTypes>(registry, "Relu", 1, kLatestOpset);
  RegisterUnary<LeakyReluOp, FloatTypes>(registry, "LeakyRelu", 1, kLatestOpset);
  RegisterSpanActivation<SigmoidOp, SigmoidSpan>(registry, "Sigmoid");
  RegisterUnary<HardSigmoidOp, FloatTypes>(registry, "HardSigmoid", 1, kLatestOpset);
  RegisterSpanActivation<TanhOp, TanhSpan>(registry, "Tanh");
  RegisterUnary<EluOp, FloatTypes>(registry, "Elu", 1, kLatestOpset);
  RegisterUnary<SeluOp, FloatTypes>(registry, "Selu", 1, kLatestOpset);
  RegisterUnary<SoftplusOp, FloatTypes>(registry, "Softplus", 1, kLatestOpset);
  RegisterUnary<SoftsignOp, FloatTypes>(registry, "Softsign", 1, kLatestOpset);
  RegisterUnary<HardSwishOp, FloatTypes>(registry, "HardSwish", 14, kLatestOpset);
  KernelDef gelu;
  gelu.op_type = "Gelu";
  gelu.since_version = 20;
  gelu.until_version = kLatestOpset;
  gelu.input_types[0] = DataTypesOf(FloatTypes{});
  registry.Register<GeluKernel>(std::move(gelu));
  KernelDef quick_gelu;
  quick_gelu.op_type = "QuickGelu";
  quick_gelu.domain = "com.microsoft";
  quick_gelu.input_types[0] = DataTypesOf(FloatTypes{});
  registry.Register<QuickGeluKernel>(std::move(quick_gelu));
  KernelDef swish;
  swish.op_type = "Swish";
  swish.since_version = 24;
  swish.until_version = kLatestOpset;
  swish.input_types[0] = DataTypesOf(FloatTypes{});
  registry.Register<QuickGeluKernel>(std::move(swish));
  KernelDef swiglu;
  swiglu.op_type = "SwiGLU";
  swiglu.since_version = 28;
  swiglu.until_version = kLatestOpset;
  swiglu.input_types = {{0, DataTypesOf(FloatTypes{})}, {1, DataTypesOf(FloatTypes{})}};
  registry.Register<SwiGluKernel>(std::move(swiglu));
  for (const auto& [name, form] : {std::pair{"Gelu", ContribGeluKernel::Form::kGelu},
                                    std::pair{"BiasGelu", ContribGeluKernel::Form::kBiasGelu},
                                    std::pair{"FastGelu", ContribGeluKernel::Form::kFastGelu}}) {
    KernelDef contrib;
    contrib.op_type = name;
    contrib.domain = "com.microsoft";
    contrib.input_types[0] = DataTypesOf(FloatTypes{});
    registry.Register(std::move(contrib), [form = form](const KernelInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ContribGeluKernel>(info, form);
    });
  }
  RegisterUnary<ThresholdedReluOp, FloatTypes>(registry, "ThresholdedRelu", 10, kLatestOpset);
  RegisterUnary<CeluOp, FloatTypes>(registry, "Celu", 12, kLatestOpset);
  RegisterUnary<MishOp, FloatTypes>(registry, "Mish", 18, kLatestOpset);

  const std::vector<DataType> prelu_types = DataTypesOf(SignedNumericTypes{});
  KernelDef prelu;
  prelu.op_type = "PRelu";
  prelu.since_version = 1;
  prelu.until_version = kLatestOpset;
  prelu.input_types = {{0, prelu_types}, {1, prelu_types}};
  registry.Register<PReluKernel>(std::move(prelu));

  const std::vector<DataType> clip_types = DataTypesOf(AllNumericTypes{});
  KernelDef clip;
  clip.op_type = "Clip";
  clip.since_version = 1;
  clip.until_version = kLatestOpset;
  clip.input_types = {{0, clip_types}, {1, clip_types}, {2, clip_types}};
  clip.host_inputs = {1, 2};
  registry.Register<ClipKernel>(std::move(clip));
}

}  // namespace tessera::cpu
