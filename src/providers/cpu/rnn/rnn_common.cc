#include "providers/cpu/rnn/rnn_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/vector_math.h"

namespace tessera::cpu::rnn {
namespace {

// Clamping through Select keeps the activation loops vectorizable and lets NaN through unchanged.
template <typename T>
inline T Clamp(T x, T bound) {
  x = Select(std::isless(x, -bound), -bound, x);
  return Select(std::isgreater(x, bound), bound, x);
}

// out[i] = f(clamp(a[i] (+ b[i]))), with the branch on b outside the loop.
template <typename T, typename F>
void Map(const T* a, const T* b, T* out, int64_t n, float clip, F f) {
  const T bound = clip > 0 ? static_cast<T>(clip) : std::numeric_limits<T>::infinity();
  if (b) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(Clamp(static_cast<T>(a[i] + b[i]), bound));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(Clamp(a[i], bound));
  }
}

template <typename T>
inline T Softplus(T x) {
  // log(1 + e^x) overflows through e^x for large x, where it equals x to working precision.
  return x > T(30) ? x : std::log1p(std::exp(x));
}

struct ActivationSpec {
  ActivationKind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

const ActivationSpec* FindActivation(const std::string& name) {
  // Defaults are those of the ONNX operators of the same name (Affine and ScaledTanh were ops in opset 1).
  static const std::map<std::string, ActivationSpec> kSpecs = {
      {"relu", {ActivationKind::kRelu, false, false, 0, 0}},
      {"tanh", {ActivationKind::kTanh, false, false, 0, 0}},
      {"sigmoid", {ActivationKind::kSigmoid, false, false, 0, 0}},
      {"affine", {ActivationKind::kAffine, true, true, 1.0f, 0.0f}},
      {"leakyrelu", {ActivationKind::kLeakyRelu, true, false, 0.01f, 0}},
      {"thresholdedrelu", {ActivationKind::kThresholdedRelu, true, false, 1.0f, 0}},
      {"scaledtanh", {ActivationKind::kScaledTanh, true, true, 1.0f, 1.0f}},
      {"hardsigmoid", {ActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f}},
      {"elu", {ActivationKind::kElu, true, false, 1.0f, 0}},
      {"softsign", {ActivationKind::kSoftsign, false, false, 0, 0}},
      {"softplus", {ActivationKind::kSoftplus, false, false, 0, 0}},
  };
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  auto it = kSpecs.find(lower);
  return it == kSpecs.end() ? nullptr : &it->second;
}

std::vector<Activation> ParseActivations(const Node& node, const std::vector<std::string>& default_names,
                                         int64_t num_directions) {
  const size_t per_direction = default_names.size();
  std::vector<std::string> names = node.GetStrings("activations", {});
  if (names.empty()) names = default_names;
  // One list may serve both directions; a unidirectional node may carry a bidirectional list (RNN's schema
  // default has two entries), of which it uses the first half.
  if (names.size() == per_direction && num_directions == 2) {
    const std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != per_direction * num_directions && names.size() != per_direction * 2)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": 'activations' has ", names.size(), " entries, expected ",
         per_direction * num_directions);
  const std::vector<float> alphas = node.GetFloats("activation_alpha", {});
  const std::vector<float> betas = node.GetFloats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> activations;
  for (const std::string& name : names) {
    const ActivationSpec* spec = FindActivation(name);
    if (!spec) Fail(ErrorCode::kNotImplemented, node.Describe(), ": unsupported activation '", name, "'");
    Activation a{spec->kind, spec->default_alpha, spec->default_beta};
    if (spec->takes_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->takes_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    activations.push_back(a);
  }
  activations.resize(per_direction * num_directions);
  return activations;
}

void ExpectShape(const KernelContext& ctx, const char* input, const Shape& actual, const Shape& expected) {
  if (actual != expected)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", input, " has shape ", actual.ToString(),
         ", expected ", expected.ToString());
}

}  // namespace

template <typename T>
void ApplyActivationToSum(const Activation& f, float clip, const T* a, const T* b, T* out, int64_t n) {
  const T alpha = static_cast<T>(f.alpha), beta = static_cast<T>(f.beta);
  switch (f.kind) {
    case ActivationKind::kRelu:
      return Map(a, b, out, n, clip, [](T x) { return Select(x > T(0), x, T(0)); });
    case ActivationKind::kTanh:
      return Map(a, b, out, n, clip, [](T x) { return Tanh(x); });
    case ActivationKind::kSigmoid:
      return Map(a, b, out, n, clip, [](T x) { return T(1) / (T(1) + Exp(-x)); });
    case ActivationKind::kAffine:
      return Map(a, b, out, n, clip, [=](T x) { return alpha * x + beta; });
    case ActivationKind::kLeakyRelu:
      return Map(a, b, out, n, clip, [=](T x) { return Select(x >= T(0), x, alpha * x); });
    case ActivationKind::kThresholdedRelu:
      return Map(a, b, out, n, clip, [=](T x) { return Select(x >= alpha, x, T(0)); });
    case ActivationKind::kScaledTanh:
      return Map(a, b, out, n, clip, [=](T x) { return alpha * Tanh(beta * x); });
    case ActivationKind::kHardSigmoid:
      return Map(a, b, out, n, clip, [=](T x) {
        const T y = alpha * x + beta;
        return Select(y > T(1), T(1), Select(y < T(0), T(0), y));
      });
    case ActivationKind::kElu:
      return Map(a, b, out, n, clip, [=](T x) { return Select(x >= T(0), x, alpha * (Exp(x) - T(1))); });
    case ActivationKind::kSoftsign:
      return Map(a, b, out, n, clip, [](T x) { return x / (T(1) + std::fabs(x)); });
    case ActivationKind::kSoftplus:
      return Map(a, b, out, n, clip, [](T x) { return Softplus(x); });
  }
}

template <typename T>
void ApplyActivation(const Activation& f, float clip, T* values, int64_t n) {
  ApplyActivationToSum<T>(f, clip, values, nullptr, values, n);
}

RecurrentAttributes ParseRecurrentAttributes(const Node& node, const std::vector<std::string>& default_activations) {
  RecurrentAttributes a;
  const std::string direction = node.GetString("direction", "forward");
  if (direction == "bidirectional") {
    a.num_directions = 2;
  } else if (direction == "reverse") {
    a.reverse = true;
  } else if (direction != "forward") {
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": direction must be forward, reverse or bidirectional, got '",
         direction, "'");
  }
  a.hidden_size = node.GetInt("hidden_size", -1);
  if (node.HasAttribute("hidden_size") && a.hidden_size <= 0)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": hidden_size must be > 0, got ", a.hidden_size);
  a.clip = node.GetFloat("clip", 0.0f);
  if (node.HasAttribute("clip") && !(a.clip > 0))
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": clip must be > 0, got ", a.clip);
  a.layout = node.GetInt("layout", 0);
  if (a.layout != 0 && a.layout != 1)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": layout must be 0 or 1, got ", a.layout);
  a.activations = ParseActivations(node, default_activations, a.num_directions);
  return a;
}

Shape RecurrentShape::YShape() const {
  return layout == 0 ? Shape{seq_length, num_directions, batch, hidden}
                     : Shape{batch, seq_length, num_directions, hidden};
}

Shape RecurrentShape::StateShape() const {
  return layout == 0 ? Shape{num_directions, batch, hidden} : Shape{batch, num_directions, hidden};
}

RecurrentShape ResolveRecurrentShape(const KernelContext& ctx, const RecurrentAttributes& attributes, int64_t gates,
                                     bool quantized_weights) {
  const Tensor& x = ctx.Input(0);
  const Tensor& w = ctx.Input(1);
  const Tensor& r = ctx.Input(2);
  if (x.shape().rank() != 3 || w.shape().rank() != 3 || r.shape().rank() != 3)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X, W and R must have rank 3, got X ",
         x.shape().ToString(), ", W ", w.shape().ToString(), ", R ", r.shape().ToString());
  if (!quantized_weights && (w.type() != x.type() || r.type() != x.type()))
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X, W and R must have the same element type");
  RecurrentShape s;
  s.layout = attributes.layout;
  s.seq_length = x.shape()[s.layout == 0 ? 0 : 1];
  s.batch = x.shape()[s.layout == 0 ? 1 : 0];
  s.input_size = x.shape()[2];
  s.num_directions = attributes.num_directions;
  s.gates = gates;
  s.hidden = attributes.hidden_size >= 0 ? attributes.hidden_size : r.shape()[quantized_weights ? 1 : 2];
  const int64_t d = s.num_directions, h = s.hidden;
  ExpectShape(ctx, "W", w.shape(), quantized_weights ? Shape{d, s.input_size, gates * h} : Shape{d, gates * h, s.input_size});
  ExpectShape(ctx, "R", r.shape(), quantized_weights ? Shape{d, h, gates * h} : Shape{d, gates * h, h});
  if (const Tensor* b = ctx.OptionalInput(3)) ExpectShape(ctx, "B", b->shape(), Shape{d, 2 * gates * h});
  if (const Tensor* lens = ctx.OptionalInput(4)) ExpectShape(ctx, "sequence_lens", lens->shape(), Shape{s.batch});
  if (const Tensor* h0 = ctx.OptionalInput(5)) ExpectShape(ctx, "initial_h", h0->shape(), s.StateShape());
  if (const Tensor* c0 = ctx.OptionalInput(6)) ExpectShape(ctx, "initial_c", c0->shape(), s.StateShape());
  if (const Tensor* p = ctx.OptionalInput(7)) ExpectShape(ctx, "P", p->shape(), Shape{d, 3 * h});
  for (size_t i : {3, 5, 6, 7})
    if (const Tensor* t = ctx.OptionalInput(i); t && t->type() != x.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " must have X's element type ",
           DataTypeName(x.type()), ", got ", DataTypeName(t->type()));
  return s;
}

std::vector<int64_t> SequenceLengths(const KernelContext& ctx, const RecurrentShape& shape) {
  std::vector<int64_t> lengths(static_cast<size_t>(shape.batch), shape.seq_length);
  const Tensor* lens = ctx.OptionalInput(4);
  if (!lens) return lengths;
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (lens->type() == DataType::kInt32) {
      lengths[b] = lens->Data<int32_t>()[b];
    } else if (lens->type() == DataType::kInt64) {
      lengths[b] = lens->Data<int64_t>()[b];
    } else {
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": sequence_lens must be int32, got ",
           DataTypeName(lens->type()));
    }
    if (lengths[b] < 0 || lengths[b] > shape.seq_length)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": sequence_lens[", b, "] = ", lengths[b],
           " is outside [0, ", shape.seq_length, "]");
  }
  return lengths;
}

bool WantsOutput(const KernelContext& ctx, size_t i) {
  const Node& node = ctx.node();
  return i < ctx.NumOutputs() && i < node.outputs.size() && !node.outputs[i].empty();
}

template <typename T>
std::vector<T> InputBias(const T* b, int64_t gates, int64_t hidden, int64_t foldable_gates) {
  std::vector<T> bias(static_cast<size_t>(gates * hidden), T(0));
  if (!b) return bias;
  for (int64_t i = 0; i < gates * hidden; ++i) bias[i] = b[i];
  for (int64_t i = 0; i < foldable_gates * hidden; ++i) bias[i] += b[gates * hidden + i];
  return bias;
}

template <typename T>
void LoadState(const RecurrentShape& shape, const T* state_tensor, int64_t direction, T* dense) {
  for (int64_t b = 0; b < shape.batch; ++b) {
    T* row = dense + b * shape.hidden;
    if (state_tensor) {
      std::copy_n(state_tensor + shape.StateOffset(direction, b), shape.hidden, row);
    } else {
      std::fill_n(row, shape.hidden, T(0));
    }
  }
}

template <typename T>
void StoreState(const RecurrentShape& shape, const std::vector<int64_t>& lengths, const T* dense, int64_t direction,
                T* state_tensor) {
  for (int64_t b = 0; b < shape.batch; ++b) {
    T* row = state_tensor + shape.StateOffset(direction, b);
    if (lengths[b] == 0) {
      std::fill_n(row, shape.hidden, T(0));
    } else {
      std::copy_n(dense + b * shape.hidden, shape.hidden, row);
    }
  }
}

namespace {

// out = a · w^T (+ bias) by dot products: rows * cols independent sums over `depth`, four partial sums each so
// the additions pipeline. Parallel over output elements (the per-step products have few rows).
template <typename T>
void ReferenceGateGemm(const ThreadPool& pool, const T* a, int64_t rows, int64_t depth, const T* w, int64_t cols,
                       const T* bias, T* out) {
  pool.ParallelFor(rows * cols, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, depth)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t index = begin; index < end; ++index) {
                       const int64_t i = index / cols, j = index % cols;
                       const T* a_row = a + i * depth;
                       const T* w_row = w + j * depth;
                       T partial[4] = {T(0), T(0), T(0), T(0)};
                       int64_t k = 0;
                       for (; k + 4 <= depth; k += 4)
                         for (int q = 0; q < 4; ++q) partial[q] += a_row[k + q] * w_row[k + q];
                       for (; k < depth; ++k) partial[0] += a_row[k] * w_row[k];
                       out[index] = (partial[0] + partial[1]) + (partial[2] + partial[3]) + (bias ? bias[j] : T(0));
                     }
                   });
}

// out[index] for index in [begin, end) of the float product: 16 independent partial sums per dot product so that
// the loop vectorizes, built per instruction set. For thin products (a step's state times R^T with a batch of a
// few rows), which stream all of W once per step: oneDNN's matmul reads the transposed-strided W no faster and
// costs its dispatch on top.
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void ThinGateGemm(const float* a, int64_t depth, const float* w, int64_t cols, const float* bias, float* out,
                  int64_t begin, int64_t end) {
  constexpr int kLanes = 16;
  for (int64_t index = begin; index < end; ++index) {
    const int64_t i = index / cols, j = index % cols;
    const float* a_row = a + i * depth;
    const float* w_row = w + j * depth;
    float partial[kLanes] = {};
    int64_t k = 0;
    for (; k + kLanes <= depth; k += kLanes)
      for (int q = 0; q < kLanes; ++q) partial[q] += a_row[k + q] * w_row[k + q];
    for (; k < depth; ++k) partial[0] += a_row[k] * w_row[k];
    float sum = 0.0f;
    for (int q = 0; q < kLanes; ++q) sum += partial[q];
    out[index] = sum + (bias ? bias[j] : 0.0f);
  }
}

}  // namespace

template <>
void GateGemm::Run<double>(KernelContext& ctx, const double* a, int64_t rows, int64_t depth, const double* w,
                           int64_t cols, const double* bias, double* out) const {
  ReferenceGateGemm(ctx.thread_pool(), a, rows, depth, w, cols, bias, out);
}

// W [cols, depth] row-major read as the [depth, cols] weights of a matmul through strides: no transposed copy.
template <>
void GateGemm::Run<float>(KernelContext& ctx, const float* a, int64_t rows, int64_t depth, const float* w, int64_t cols,
                          const float* bias, float* out) const {
  if (rows == 0 || cols == 0) return;
  // Small products (one step of a small state: 64 x 256 per step in silero VAD) cost oneDNN's dispatch more than
  // their arithmetic (35 us per LSTM step there): the loop takes them.
  constexpr int64_t kSmallProduct = 1 << 16;
  constexpr int64_t kThinRows = 4;
  if (depth == 0 || rows * cols * depth <= kSmallProduct || rows <= kThinRows) {
    ctx.thread_pool().ParallelFor(rows * cols, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, depth)),
                                  [&](int64_t begin, int64_t end) { ThinGateGemm(a, depth, w, cols, bias, out, begin, end); });
    return;
  }
  std::shared_ptr<const Primitive> p = primitives_.Get(ctx, {rows, depth, cols, bias ? 1 : 0}, [&] {
    Primitive made;
    made.src = PlainF32Desc({rows, depth});
    made.weights = dnnl::memory::desc({depth, cols}, dnnl::memory::data_type::f32, dnnl::memory::dims{1, depth});
    made.bias = bias ? PlainF32Desc({1, cols}) : dnnl::memory::desc();
    made.dst = PlainF32Desc({rows, cols});
    try {
      dnnl::matmul::desc desc(made.src, made.weights, made.bias, made.dst);
      made.pd = dnnl::matmul::primitive_desc(desc, DnnlAttr(), DnnlEngine());
      made.primitive = dnnl::matmul(made.pd);
    } catch (const dnnl::error&) {
      made.primitive = {};  // oneDNN rejected the problem: the reference loop takes over
    }
    return made;
  });
  if (!p->primitive) return ReferenceGateGemm(ctx.thread_pool(), a, rows, depth, w, cols, bias, out);
  const dnnl::engine& engine = DnnlEngine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(p->src, engine, const_cast<float*>(a))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(p->weights, engine, const_cast<float*>(w))},
      {DNNL_ARG_DST, dnnl::memory(p->dst, engine, out)}};
  if (bias) args[DNNL_ARG_BIAS] = dnnl::memory(p->bias, engine, const_cast<float*>(bias));
  ExecuteDnnl(ctx, p->primitive, p->pd, std::move(args));
}

template <typename T>
T* AllocateSequenceOutput(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths) {
  if (!WantsOutput(ctx, 0)) return nullptr;
  Tensor& y = ctx.Output(0, DataTypeOf<T>(), shape.YShape());
  if (std::any_of(lengths.begin(), lengths.end(), [&](int64_t len) { return len < shape.seq_length; }))
    std::fill_n(y.Data<T>(), y.NumElements(), T(0));
  return y.Data<T>();
}

template <typename T>
T* AllocateStateOutput(KernelContext& ctx, size_t index, const RecurrentShape& shape) {
  if (!WantsOutput(ctx, index)) return nullptr;
  Tensor& state = ctx.Output(index, DataTypeOf<T>(), shape.StateShape());
  return state.Data<T>();
}

template <typename T>
Tensor ProjectInput(KernelContext& ctx, const GateGemm& gemm, const RecurrentShape& shape, int64_t direction,
                    int64_t foldable_gates) {
  const int64_t rows = shape.seq_length * shape.batch, cols = shape.gates * shape.hidden;
  const T* b = OptionalData<T>(ctx.OptionalInput(3));
  const std::vector<T> bias =
      InputBias(b ? b + direction * 2 * cols : nullptr, shape.gates, shape.hidden, foldable_gates);
  Tensor projected = Scratch<T>(ctx, rows * cols);
  const T* w = ctx.Input(1).Data<T>() + direction * cols * shape.input_size;
  gemm.Run(ctx, ctx.Input(0).Data<T>(), rows, shape.input_size, w, cols, bias.data(), projected.Data<T>());
  return projected;
}

#define TESSERA_RNN_INSTANTIATE(T)                                                                           \
  template void ApplyActivation<T>(const Activation&, float, T*, int64_t);                                   \
  template void ApplyActivationToSum<T>(const Activation&, float, const T*, const T*, T*, int64_t);          \
  template std::vector<T> InputBias<T>(const T*, int64_t, int64_t, int64_t);                                 \
  template void LoadState<T>(const RecurrentShape&, const T*, int64_t, T*);                                  \
  template void StoreState<T>(const RecurrentShape&, const std::vector<int64_t>&, const T*, int64_t, T*);    \
  template T* AllocateSequenceOutput<T>(KernelContext&, const RecurrentShape&, const std::vector<int64_t>&); \
  template T* AllocateStateOutput<T>(KernelContext&, size_t, const RecurrentShape&);                         \
  template Tensor ProjectInput<T>(KernelContext&, const GateGemm&, const RecurrentShape&, int64_t, int64_t);
TESSERA_RNN_INSTANTIATE(float)
TESSERA_RNN_INSTANTIATE(double)
#undef TESSERA_RNN_INSTANTIATE

}  // namespace tessera::cpu::rnn
