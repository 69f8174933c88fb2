// Pieces shared by the recurrent kernels (RNN, GRU, LSTM): attribute parsing (direction, activations with
// their alpha/beta, clip, layout), input validation and the layout-dependent addressing of X, Y and the
// state tensors, sequence-length scheduling, and the gate products out = A · W^T with W in ONNX's gate
// layout ([gates * hidden, K] row-major).
//
// Semantics every kernel follows (the spec leaves some of them open):
// - Batch entry b runs len_b = sequence_lens[b] steps; the reverse direction starts at t = len_b - 1.
//   Y is zero for t >= len_b; Y_h (and Y_c) hold the state after the last step run, zero when len_b == 0.
// - clip bounds the input of every activation, including h(Ct) in LSTM; the stored cell state is not clipped.
// - activation_alpha / activation_beta are consumed in activation order by the functions that take them;
//   functions without a value left use the defaults of the matching ONNX operator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/common/dnnl_utils.h"
#include "tessera/ep/kernel.h"

namespace tessera::cpu::rnn {

enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct Activation {
  ActivationKind kind = ActivationKind::kTanh;
  float alpha = 0;
  float beta = 0;
};

// values[i] = f(clamp(values[i], -clip, clip)) for i < n; clip <= 0 means no clipping.
template <typename T>
void ApplyActivation(const Activation& f, float clip, T* values, int64_t n);

// values[i] = f(clamp(a[i] + b[i], -clip, clip)): the usual "sum the two gate halves, then activate".
template <typename T>
void ApplyActivationToSum(const Activation& f, float clip, const T* a, const T* b, T* values, int64_t n);

struct RecurrentAttributes {
  bool reverse = false;  // for the single direction of a unidirectional node
  int64_t num_directions = 1;  // 2 when bidirectional
  int64_t hidden_size = -1;  // -1 when the attribute is absent (taken from R's shape)
  float clip = 0;            // <= 0: no clipping
  int64_t layout = 0;
  // per_direction activations for direction 0, then for direction 1 when bidirectional.
  std::vector<Activation> activations;

  bool IsReverse(int64_t direction) const { return direction == 1 || reverse; }
  const Activation* ActivationsOf(int64_t direction, size_t per_direction) const {
    return activations.data() + direction * per_direction;
  }
};

RecurrentAttributes ParseRecurrentAttributes(const Node& node, const std::vector<std::string>& default_activations);

// Problem sizes and the layout-dependent addressing of X (and its projection), Y and the state tensors
// (initial_h, initial_c, Y_h, Y_c).
struct RecurrentShape {
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0, num_directions = 1, gates = 1, layout = 0;

  // Row of X [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1) for step t of entry b.
  int64_t XRow(int64_t t, int64_t b) const { return layout == 0 ? t * batch + b : b * seq_length + t; }
  int64_t YOffset(int64_t t, int64_t direction, int64_t b) const {
    return (layout == 0 ? (t * num_directions + direction) * batch + b
                        : (b * seq_length + t) * num_directions + direction) *
           hidden;
  }
  int64_t StateOffset(int64_t direction, int64_t b) const {
    return (layout == 0 ? direction * batch + b : b * num_directions + direction) * hidden;
  }
  Shape YShape() const;
  Shape StateShape() const;
};

// Validates X, W, R, B, sequence_lens and initial_h and, when present (LSTM), initial_c (input 6) and P (input 7).
// `gates` is the number of gate blocks stacked in W and R (RNN 1, GRU 3, LSTM 4). With `quantized_weights`
// (com.microsoft DynamicQuantizeLSTM) W is [directions, input, gates * hidden] and R [directions, hidden,
// gates * hidden], 8-bit, instead of ONNX's [directions, gates * hidden, input / hidden] in X's type.
RecurrentShape ResolveRecurrentShape(const KernelContext& ctx, const RecurrentAttributes& attributes, int64_t gates,
                                     bool quantized_weights = false);

// Per batch entry, the number of steps to run (sequence_lens, or seq_length for all when absent).
std::vector<int64_t> SequenceLengths(const KernelContext& ctx, const RecurrentShape& shape);

// Which time step entry b processes at iteration `step` of a direction: -1 once its sequence has ended.
inline int64_t TimeStep(int64_t step, int64_t length, bool reverse) {
  if (step >= length) return -1;
  return reverse ? length - 1 - step : step;
}

bool WantsOutput(const KernelContext& ctx, size_t i);

// out[m, n] = a[m, :] · w[n, :] (+ bias[n]) for m < rows, n < cols: a product with the transpose of ONNX gate
// weights. float runs on oneDNN matmul (primitives cached per problem size); double on a reference loop.
// Kernels hold one GateGemm; Run is safe from many threads at once.
class GateGemm {
 public:
  template <typename T>
  void Run(KernelContext& ctx, const T* a, int64_t rows, int64_t depth, const T* w, int64_t cols, const T* bias,
           T* out) const;

 private:
  struct Primitive {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul primitive;
    dnnl::memory::desc src, weights, bias, dst;
  };
  ShapeCache<Primitive> primitives_;
};
template <>
void GateGemm::Run<float>(KernelContext&, const float*, int64_t, int64_t, const float*, int64_t, const float*,
                          float*) const;
template <>
void GateGemm::Run<double>(KernelContext&, const double*, int64_t, int64_t, const double*, int64_t, const double*,
                           double*) const;

// Calls fn.template operator()<T>() for X's element type (float or double); throws kNotImplemented naming the node
// for others.
template <typename Fn>
void VisitRecurrentType(const KernelContext& ctx, Fn&& fn) {
  switch (ctx.Input(0).type()) {
    case DataType::kFloat:
      return fn.template operator()<float>();
    case DataType::kDouble:
      return fn.template operator()<double>();
    default:
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(ctx.Input(0).type()));
  }
}

// Helpers for the kernels' per-direction work.
template <typename T>
const T* OptionalData(const Tensor* t) {
  return t ? t->Data<T>() : nullptr;
}

// Uninitialized scratch of n elements from the kernel's allocator (the arena reuses it across runs).
template <typename T>
Tensor Scratch(KernelContext& ctx, int64_t n) {
  return Tensor::Allocate(DataTypeOf<T>(), Shape{n}, ctx.allocator());
}

// Y's data when the node wants Y (zero where an entry's sequence is shorter than seq_length), else nullptr.
template <typename T>
T* AllocateSequenceOutput(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths);
// Y_h's / Y_c's data when the node wants output `index`, else nullptr.
template <typename T>
T* AllocateStateOutput(KernelContext& ctx, size_t index, const RecurrentShape& shape);

// The input projection of one direction for every step at once: X · W_d^T + InputBias(...), one row of
// gates * hidden values per row of X (in X's own order, see RecurrentShape::XRow).
template <typename T>
Tensor ProjectInput(KernelContext& ctx, const GateGemm& gemm, const RecurrentShape& shape, int64_t direction,
                    int64_t foldable_gates);

// Calls fn(b) for every batch entry, in parallel when the per-entry `work` (elements touched) adds up.
template <typename Fn>
void ForEachBatchEntry(const KernelContext& ctx, int64_t batch, int64_t work, const Fn& fn) {
  ctx.thread_pool().ParallelFor(batch, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)),
                                [&](int64_t begin, int64_t end) {
                                  for (int64_t b = begin; b < end; ++b) fn(b);
                                });
}

// The bias added to the projected input of one direction: Wb + Rb per gate for gates whose recurrent bias
// can be folded (all but, for GRU with linear_before_reset, the last), Wb alone for the others; zeros
// without B. `b` points at the direction's [2 * gates * hidden] bias row or is nullptr.
template <typename T>
std::vector<T> InputBias(const T* b, int64_t gates, int64_t hidden, int64_t foldable_gates);

// Copies state rows of one direction: from a state tensor (initial_h / initial_c, layout-dependent) into a
// dense [batch, hidden] buffer, or zeros when the tensor is absent.
template <typename T>
void LoadState(const RecurrentShape& shape, const T* state_tensor, int64_t direction, T* dense);
// Writes a dense [batch, hidden] state into Y_h / Y_c, zero for entries that ran no step.
template <typename T>
void StoreState(const RecurrentShape& shape, const std::vector<int64_t>& lengths, const T* dense, int64_t direction,
                T* state_tensor);

}  // namespace tessera::cpu::rnn
