// GRU (opset 1, 3, 7, 14; linear_before_reset from 3, layout from 14), per direction (default f = Sigmoid,
// g = Tanh; gate blocks in W, R and B are ordered z, r, h):
//   zt = f(Xt · Wz^T + Ht-1 · Rz^T + Wbz + Rbz)
//   rt = f(Xt · Wr^T + Ht-1 · Rr^T + Wbr + Rbr)
//   ht = g(Xt · Wh^T + (rt (.) Ht-1) · Rh^T + Rbh + Wbh)        linear_before_reset = 0
//   ht = g(Xt · Wh^T + rt (.) (Ht-1 · Rh^T + Rbh) + Wbh)        linear_before_reset != 0
//   Ht = (1 - zt) (.) ht + zt (.) Ht-1
// The input projection of all steps is one product. Each step multiplies the state by R^T: all three blocks at
// once with linear_before_reset, else z and r first and then (rt (.) Ht-1) by Rh^T.
// Shared semantics (sequence_lens, clip, activations, layout): see rnn_common.h.
#include <algorithm>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/rnn/rnn_common.h"

namespace tessera::cpu {
namespace {

using namespace rnn;

// Per-direction constants of one run.
template <typename T>
struct GruDirection {
  const T* x_proj;         // [rows of X, 3h]: Xt · W^T + folded biases
  const T* r;              // R of the direction [3h, h]
  std::vector<T> rh_bias;  // Rbh (zeros without B); used with linear_before_reset only
  const Activation* f;     // f, g
  bool reverse;
};

class Gru : public Kernel {
 public:
  explicit Gru(const KernelInfo& info)
      : attributes_(ParseRecurrentAttributes(info.node(), {"Sigmoid", "Tanh"})),
        linear_before_reset_(info.node().GetInt("linear_before_reset", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    VisitRecurrentType(ctx, [&]<typename T>() { ComputeTyped<T>(ctx); });
  }

 private:
  template <typename T>
  void ComputeTyped(KernelContext& ctx) const {
    const RecurrentShape shape = ResolveRecurrentShape(ctx, attributes_, 3);
    const std::vector<int64_t> lengths = SequenceLengths(ctx, shape);
    T* y = AllocateSequenceOutput<T>(ctx, shape, lengths);
    T* y_h = AllocateStateOutput<T>(ctx, 1, shape);
    if (shape.batch == 0) return;
    for (int64_t d = 0; d < shape.num_directions; ++d) RunDirection(ctx, shape, lengths, d, y, y_h);
  }

  template <typename T>
  void RunDirection(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                    int64_t direction, T* y, T* y_h) const {
    const int64_t h = shape.hidden, batch = shape.batch;
    // With linear_before_reset Rbh multiplies with rt, so it cannot join the projection's bias.
    const Tensor projected = ProjectInput<T>(ctx, gemm_, shape, direction, linear_before_reset_ ? 2 : 3);
    const T* b = OptionalData<T>(ctx.OptionalInput(3));
    GruDirection<T> dir{projected.Data<T>(), ctx.Input(2).Data<T>() + direction * 3 * h * h, std::vector<T>(h, T(0)),
                        attributes_.ActivationsOf(direction, 2), attributes_.IsReverse(direction)};
    if (b) std::copy_n(b + direction * 6 * h + 5 * h, h, dir.rh_bias.begin());
    Tensor state = Scratch<T>(ctx, batch * h);
    T* hidden = state.Data<T>();
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(5)), direction, hidden);
    Tensor scratch = Scratch<T>(ctx, batch * 6 * h);  // per entry: recurrent products [3h], z and r [2h], rt (.) Ht-1
    const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
    for (int64_t step = 0; step < steps; ++step) {
      if (linear_before_reset_) {
        StepLinearBeforeReset(ctx, shape, lengths, dir, step, hidden, scratch.Data<T>());
      } else {
        StepResetBeforeLinear(ctx, shape, lengths, dir, step, hidden, scratch.Data<T>());
      }
      if (y) CopyStepToY(ctx, shape, lengths, dir.reverse, step, direction, hidden, y);
    }
    if (y_h) StoreState(shape, lengths, hidden, direction, y_h);
  }

  // The reset and update gates of entry b into zr [2h]: f(x_proj[z r] + rec[z r]).
  template <typename T>
  void ResetAndUpdate(const GruDirection<T>& dir, const T* x_row, const T* rec_row, T* zr, int64_t h) const {
    ApplyActivationToSum(dir.f[0], attributes_.clip, x_row, rec_row, zr, 2 * h);
  }

  // Ht = (1 - z) (.) candidate + z (.) Ht-1, in place in `hidden`.
  template <typename T>
  static void Blend(const T* z, const T* candidate, T* hidden, int64_t h) {
    for (int64_t i = 0; i < h; ++i) hidden[i] = (T(1) - z[i]) * candidate[i] + z[i] * hidden[i];
  }

  template <typename T>
  void StepLinearBeforeReset(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                             const GruDirection<T>& dir, int64_t step, T* hidden, T* scratch) const {
    const int64_t h = shape.hidden, batch = shape.batch;
    T* rec = scratch;                    // [batch, 3h]
    T* gates = scratch + batch * 3 * h;  // [batch, 2h]
    gemm_.Run(ctx, hidden, batch, h, dir.r, 3 * h, static_cast<const T*>(nullptr), rec);
    ForEachBatchEntry(ctx, batch, 6 * h, [&](int64_t b) {
      const int64_t t = TimeStep(step, lengths[b], dir.reverse);
      if (t < 0) return;
      const T* x_row = dir.x_proj + shape.XRow(t, b) * 3 * h;
      T* rec_row = rec + b * 3 * h;
      T* zr = gates + b * 2 * h;
      ResetAndUpdate(dir, x_row, rec_row, zr, h);
      T* candidate = rec_row + 2 * h;
      const T* reset = zr + h;
      for (int64_t i = 0; i < h; ++i) candidate[i] = x_row[2 * h + i] + reset[i] * (candidate[i] + dir.rh_bias[i]);
      ApplyActivation(dir.f[1], attributes_.clip, candidate, h);
      Blend(zr, candidate, hidden + b * h, h);
    });
  }

  template <typename T>
  void StepResetBeforeLinear(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                             const GruDirection<T>& dir, int64_t step, T* hidden, T* scratch) const {
    const int64_t h = shape.hidden, batch = shape.batch;
    T* rec = scratch;                         // [batch, 2h]: Ht-1 · [Rz; Rr]^T
    T* gates = scratch + batch * 2 * h;       // [batch, 2h]: z, r
    T* reset_hidden = gates + batch * 2 * h;  // [batch, h]: rt (.) Ht-1
    T* candidate = reset_hidden + batch * h;  // [batch, h]
    gemm_.Run(ctx, hidden, batch, h, dir.r, 2 * h, static_cast<const T*>(nullptr), rec);
    ForEachBatchEntry(ctx, batch, 4 * h, [&](int64_t b) {
      const int64_t t = TimeStep(step, lengths[b], dir.reverse);
      T* rh = reset_hidden + b * h;
      if (t < 0) {
        std::fill_n(rh, h, T(0));  // finished entries still go through the next product: keep it finite
        return;
      }
      T* zr = gates + b * 2 * h;
      ResetAndUpdate(dir, dir.x_proj + shape.XRow(t, b) * 3 * h, rec + b * 2 * h, zr, h);
      const T* hb = hidden + b * h;
      for (int64_t i = 0; i < h; ++i) rh[i] = zr[h + i] * hb[i];
    });
    gemm_.Run(ctx, reset_hidden, batch, h, dir.r + 2 * h * h, h, static_cast<const T*>(nullptr), candidate);
    ForEachBatchEntry(ctx, batch, 3 * h, [&](int64_t b) {
      const int64_t t = TimeStep(step, lengths[b], dir.reverse);
      if (t < 0) return;
      T* cand = candidate + b * h;
      ApplyActivationToSum(dir.f[1], attributes_.clip, dir.x_proj + shape.XRow(t, b) * 3 * h + 2 * h, cand, cand, h);
      Blend(gates + b * 2 * h, cand, hidden + b * h, h);
    });
  }

  template <typename T>
  static void CopyStepToY(const KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                          bool reverse, int64_t step, int64_t direction, const T* hidden, T* y) {
    ForEachBatchEntry(ctx, shape.batch, shape.hidden, [&](int64_t b) {
      const int64_t t = TimeStep(step, lengths[b], reverse);
      if (t >= 0) std::copy_n(hidden + b * shape.hidden, shape.hidden, y + shape.YOffset(t, direction, b));
    });
  }

  RecurrentAttributes attributes_;
  bool linear_before_reset_;
  GateGemm gemm_;
};

}  // namespace

void RegisterGruKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "GRU";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Gru>(std::move(def));
}

}  // namespace tessera::cpu
