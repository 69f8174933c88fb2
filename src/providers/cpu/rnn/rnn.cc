// RNN (opset 1, 7, 14; layout from 14): a simple recurrent layer, per direction
//   Ht = f(Xt · Wi^T + Ht-1 · Ri^T + Wbi + Rbi)        (default f = Tanh)
// The input projection of all steps is one product; each step then multiplies the state by R^T.
// Shared semantics (sequence_lens, clip, activations, layout): see rnn_common.h.
#include <algorithm>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/rnn/rnn_common.h"

namespace tessera::cpu {
namespace {

using namespace rnn;

class Rnn : public Kernel {
 public:
  explicit Rnn(const KernelInfo& info) : attributes_(ParseRecurrentAttributes(info.node(), {"Tanh"})) {}

  void Compute(KernelContext& ctx) const override {
    VisitRecurrentType(ctx, [&]<typename T>() { ComputeTyped<T>(ctx); });
  }

 private:
  template <typename T>
  void ComputeTyped(KernelContext& ctx) const {
    const RecurrentShape shape = ResolveRecurrentShape(ctx, attributes_, 1);
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
    const Tensor projected = ProjectInput<T>(ctx, gemm_, shape, direction, 1);
    Tensor state = Scratch<T>(ctx, batch * h), recurrent = Scratch<T>(ctx, batch * h);
    T* hidden = state.Data<T>();
    T* rec = recurrent.Data<T>();
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(5)), direction, hidden);
    const T* r = ctx.Input(2).Data<T>() + direction * h * h;
    const T* x_proj = projected.Data<T>();
    const Activation& f = attributes_.ActivationsOf(direction, 1)[0];
    const bool reverse = attributes_.IsReverse(direction);
    const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
    for (int64_t step = 0; step < steps; ++step) {
      gemm_.Run(ctx, hidden, batch, h, r, h, static_cast<const T*>(nullptr), rec);
      ForEachBatchEntry(ctx, batch, h, [&](int64_t b) {
        const int64_t t = TimeStep(step, lengths[b], reverse);
        if (t < 0) return;
        T* hb = hidden + b * h;
        ApplyActivationToSum(f, attributes_.clip, x_proj + shape.XRow(t, b) * h, rec + b * h, hb, h);
        if (y) std::copy_n(hb, h, y + shape.YOffset(t, direction, b));
      });
    }
    if (y_h) StoreState(shape, lengths, hidden, direction, y_h);
  }

  RecurrentAttributes attributes_;
  GateGemm gemm_;
};

}  // namespace

void RegisterRnnKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "RNN";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Rnn>(std::move(def));
}

}  // namespace tessera::cpu
