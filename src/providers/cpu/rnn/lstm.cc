// LSTM (opset 1, 7, 14; layout from 14), per direction (default f = Sigmoid, g = Tanh, h = Tanh; gate blocks
// in W, R and B are ordered i, o, f, c and peepholes P as i, o, f):
//   it = f(Xt · Wi^T + Ht-1 · Ri^T + Pi (.) Ct-1 + Wbi + Rbi)
//   ft = f(Xt · Wf^T + Ht-1 · Rf^T + Pf (.) Ct-1 + Wbf + Rbf)      ft = 1 - it with input_forget
//   ct = g(Xt · Wc^T + Ht-1 · Rc^T + Wbc + Rbc)
//   Ct = ft (.) Ct-1 + it (.) ct
//   ot = f(Xt · Wo^T + Ht-1 · Ro^T + Po (.) Ct + Wbo + Rbo)
//   Ht = ot (.) h(Ct)
// The input projection of all steps is one product; each step multiplies the state by R^T (all four blocks).
// Shared semantics (sequence_lens, clip, activations, layout): see rnn_common.h.
#include <algorithm>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/rnn/rnn_common.h"

namespace tessera::cpu {
namespace {

using namespace rnn;

// Per-direction constants of one run.
template <typename T>
struct LstmDirection {
  const T* x_proj;      // [rows of X, 4h]: Xt · W^T + Wb + Rb
  const T* r;           // R of the direction [4h, h]
  const T* peepholes;   // P of the direction [3h] (i, o, f), or nullptr
  const Activation* f;  // f, g, h
  bool reverse;
};

class Lstm : public Kernel {
 public:
  explicit Lstm(const KernelInfo& info)
      : attributes_(ParseRecurrentAttributes(info.node(), {"Sigmoid", "Tanh", "Tanh"})),
        input_forget_(info.node().GetInt("input_forget", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    switch (ctx.Input(0).type()) {
      case DataType::kFloat:
        return ComputeTyped<float>(ctx);
      case DataType::kDouble:
        return ComputeTyped<double>(ctx);
      default:
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(ctx.Input(0).type()));
    }
  }

 private:
  template <typename T>
  void ComputeTyped(KernelContext& ctx) const {
    const RecurrentShape shape = ResolveRecurrentShape(ctx, attributes_, 4);
    const std::vector<int64_t> lengths = SequenceLengths(ctx, shape);
    T* y = AllocateSequenceOutput<T>(ctx, shape, lengths);
    T* y_h = AllocateStateOutput<T>(ctx, 1, shape);
    T* y_c = AllocateStateOutput<T>(ctx, 2, shape);
    if (shape.batch == 0) return;
    for (int64_t d = 0; d < shape.num_directions; ++d) RunDirection(ctx, shape, lengths, d, y, y_h, y_c);
  }

  template <typename T>
  void RunDirection(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                    int64_t direction, T* y, T* y_h, T* y_c) const {
    const int64_t h = shape.hidden, batch = shape.batch;
    const Tensor projected = ProjectInput<T>(ctx, gemm_, shape, direction, 4);
    const T* p = OptionalData<T>(ctx.OptionalInput(7));
    const LstmDirection<T> dir{projected.Data<T>(), ctx.Input(2).Data<T>() + direction * 4 * h * h,
                               p ? p + direction * 3 * h : nullptr, attributes_.ActivationsOf(direction, 3),
                               attributes_.IsReverse(direction)};
    Tensor state = Scratch<T>(ctx, 2 * batch * h), recurrent = Scratch<T>(ctx, batch * 4 * h);
    T* hidden = state.Data<T>();
    T* cell = hidden + batch * h;
    T* rec = recurrent.Data<T>();
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(5)), direction, hidden);
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(6)), direction, cell);
    const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
    for (int64_t step = 0; step < steps; ++step) {
      gemm_.Run(ctx, hidden, batch, h, dir.r, 4 * h, static_cast<const T*>(nullptr), rec);
      ForEachBatchEntry(ctx, batch, 6 * h, [&](int64_t b) {
        const int64_t t = TimeStep(step, lengths[b], dir.reverse);
        if (t < 0) return;
        UpdateEntry(dir, dir.x_proj + shape.XRow(t, b) * 4 * h, rec + b * 4 * h, hidden + b * h, cell + b * h, h);
        if (y) std::copy_n(hidden + b * h, h, y + shape.YOffset(t, direction, b));
      });
    }
    if (y_h) StoreState(shape, lengths, hidden, direction, y_h);
    if (y_c) StoreState(shape, lengths, cell, direction, y_c);
  }

  // One step of one entry: `gates` [4h] holds Ht-1 · R^T on entry and is used as scratch; hidden and cell
  // [h] are updated in place.
  template <typename T>
  void UpdateEntry(const LstmDirection<T>& dir, const T* x_row, T* gates, T* hidden, T* cell, int64_t h) const {
    T* in = gates;
    T* out = gates + h;
    T* forget = gates + 2 * h;
    T* candidate = gates + 3 * h;
    for (int64_t i = 0; i < 4 * h; ++i) gates[i] += x_row[i];
    if (dir.peepholes) {
      const T* p_in = dir.peepholes;
      const T* p_forget = dir.peepholes + 2 * h;
      for (int64_t i = 0; i < h; ++i) {
        in[i] += p_in[i] * cell[i];
        forget[i] += p_forget[i] * cell[i];
      }
    }
    const float clip = attributes_.clip;
    ApplyActivation(dir.f[0], clip, in, h);
    if (input_forget_) {
      for (int64_t i = 0; i < h; ++i) forget[i] = T(1) - in[i];
    } else {
      ApplyActivation(dir.f[0], clip, forget, h);
    }
    ApplyActivation(dir.f[1], clip, candidate, h);
    for (int64_t i = 0; i < h; ++i) cell[i] = forget[i] * cell[i] + in[i] * candidate[i];
    if (dir.peepholes) {
      const T* p_out = dir.peepholes + h;
      for (int64_t i = 0; i < h; ++i) out[i] += p_out[i] * cell[i];
    }
    ApplyActivation(dir.f[0], clip, out, h);
    std::copy_n(cell, h, candidate);  // h(Ct) without touching the cell state
    ApplyActivation(dir.f[2], clip, candidate, h);
    for (int64_t i = 0; i < h; ++i) hidden[i] = out[i] * candidate[i];
  }

  RecurrentAttributes attributes_;
  bool input_forget_;
  GateGemm gemm_;
};

}  // namespace

void RegisterLstmKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "LSTM";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Lstm>(std::move(def));
}

}  // namespace tessera::cpu
