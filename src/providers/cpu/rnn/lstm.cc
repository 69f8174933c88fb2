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
//
// com.microsoft DynamicQuantizeLSTM (onnxruntime.quantization's dynamic LSTM) is the same cell with 8-bit W
// [directions, input, 4h] and R [directions, hidden, 4h], scales and zero points per direction or per direction
// and column. Its products run as ONNX Runtime runs them: X (all steps at once) and, at every step, the state
// Ht-1 are quantized to uint8 by DynamicQuantizeLinear's rule, multiplied with the 8-bit weights in int32, and
// the sums scaled back by (activation scale * weight scale).
#include <algorithm>
#include <memory>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/quantization/integer_gemm.h"
#include "providers/cpu/quantization/quantize_common.h"
#include "providers/cpu/rnn/rnn_common.h"

namespace tessera::cpu {
namespace {

using namespace rnn;

// Per-direction constants of one run.
template <typename T>
struct LstmDirection {
  const T* x_proj;      // [rows of X, 4h]: Xt · W^T + Wb + Rb
  const T* peepholes;   // P of the direction [3h] (i, o, f), or nullptr
  const Activation* f;  // f, g, h
  bool reverse;
};

// The cell and the step loop both kernels share.
class LstmBase : public Kernel {
 protected:
  // Calls run(direction) for every direction. A bidirectional node runs its two directions at once, one per
  // thread: each step's product with R is a thin one (batch rows) that streams all of R, so two threads each
  // streaming their own direction's R beat two threads splitting one product. The work inside then runs on its
  // thread alone (nested pool and oneDNN calls run inline).
  template <typename Run>
  static void ForEachDirection(KernelContext& ctx, int64_t directions, const Run& run) {
    if (directions == 2 && ctx.thread_pool().num_threads() >= 2) {
      ctx.thread_pool().ParallelFor(2, 1, [&](int64_t begin, int64_t end) {
        for (int64_t d = begin; d < end; ++d) run(d);
      });
      return;
    }
    for (int64_t d = 0; d < directions; ++d) run(d);
  }

  explicit LstmBase(const KernelInfo& info)
      : attributes_(ParseRecurrentAttributes(info.node(), {"Sigmoid", "Tanh", "Tanh"})),
        input_forget_(info.node().GetInt("input_forget", 0) != 0) {}

  // Runs one direction: recurrent(hidden [batch, h], rec [batch, 4h]) writes Ht-1 · R^T for every entry.
  template <typename T, typename Recurrent>
  void RunSteps(KernelContext& ctx, const RecurrentShape& shape, const std::vector<int64_t>& lengths,
                int64_t direction, const T* x_proj, Recurrent&& recurrent, T* y, T* y_h, T* y_c) const {
    const int64_t h = shape.hidden, batch = shape.batch;
    const T* p = OptionalData<T>(ctx.OptionalInput(7));
    const LstmDirection<T> dir{x_proj, p ? p + direction * 3 * h : nullptr, attributes_.ActivationsOf(direction, 3),
                               attributes_.IsReverse(direction)};
    Tensor state = Scratch<T>(ctx, 2 * batch * h), rec_buffer = Scratch<T>(ctx, batch * 4 * h);
    T* hidden = state.Data<T>();
    T* cell = hidden + batch * h;
    T* rec = rec_buffer.Data<T>();
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(5)), direction, hidden);
    LoadState(shape, OptionalData<T>(ctx.OptionalInput(6)), direction, cell);
    const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
    for (int64_t step = 0; step < steps; ++step) {
      recurrent(static_cast<const T*>(hidden), rec);
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
};

class Lstm : public LstmBase {
 public:
  explicit Lstm(const KernelInfo& info) : LstmBase(info) {}

  void Compute(KernelContext& ctx) const override {
    VisitRecurrentType(ctx, [&]<typename T>() { ComputeTyped<T>(ctx); });
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
    const int64_t h = shape.hidden;
    ForEachDirection(ctx, shape.num_directions, [&](int64_t d) {
      const Tensor projected = ProjectInput<T>(ctx, gemm_, shape, d, 4);
      const T* r = ctx.Input(2).Data<T>() + d * 4 * h * h;
      RunSteps<T>(
          ctx, shape, lengths, d, projected.Data<T>(),
          [&](const T* hidden, T* rec) {
            gemm_.Run(ctx, hidden, shape.batch, h, r, 4 * h, static_cast<const T*>(nullptr), rec);
          },
          y, y_h, y_c);
    });
  }

  GateGemm gemm_;
};

// The 8-bit weights of one direction with their scales, ready to multiply.
struct QuantizedLstmWeights {
  std::unique_ptr<ConstantWeightIntegerGemm> gemm;
  std::vector<float> scales;  // one per column (4h)
};

class DynamicQuantizeLstm : public LstmBase {
 public:
  explicit DynamicQuantizeLstm(const KernelInfo& info) : LstmBase(info) {
    bool constant = true;
    for (size_t i : {1, 2, 8, 9, 10, 11}) constant = constant && info.ConstantInput(i) != nullptr;
    if (constant) {
      const auto input = [&](size_t i) { return info.ConstantInput(i); };
      weights_ = std::make_shared<std::vector<QuantizedLstmWeights>>(Prepare(info.node(), input));
    }
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    if (ctx.Input(0).type() != DataType::kFloat)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": X must be float, got ", DataTypeName(ctx.Input(0).type()));
    const RecurrentShape shape = ResolveRecurrentShape(ctx, attributes_, 4, /*quantized_weights=*/true);
    std::shared_ptr<const std::vector<QuantizedLstmWeights>> weights = weights_;
    if (!weights) {
      const auto input = [&](size_t i) { return ctx.OptionalInput(i); };
      weights = std::make_shared<std::vector<QuantizedLstmWeights>>(Prepare(node, input));
    }
    const int64_t h = shape.hidden, d_count = shape.num_directions;
    if (static_cast<int64_t>(weights->size()) != 2 * d_count)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": W and R hold ", weights->size() / 2,
           " directions, the node runs ", d_count);
    const std::vector<int64_t> lengths = SequenceLengths(ctx, shape);
    float* y = AllocateSequenceOutput<float>(ctx, shape, lengths);
    float* y_h = AllocateStateOutput<float>(ctx, 1, shape);
    float* y_c = AllocateStateOutput<float>(ctx, 2, shape);
    if (shape.batch == 0) return;

    // X quantized once for every step and both directions.
    const int64_t rows = shape.seq_length * shape.batch, cols = 4 * h;
    Tensor x_q = Tensor::Allocate(DataType::kUInt8, Shape{rows * shape.input_size}, ctx.allocator());
    const DynamicQuantization xq =
        DynamicQuantizeUint8(ctx.thread_pool(), ctx.Input(0).Data<float>(), rows * shape.input_size, x_q.Data<uint8_t>());
    const float* b = OptionalData<float>(ctx.OptionalInput(3));
    ForEachDirection(ctx, d_count, [&](int64_t d) {
      Tensor sums = Tensor::Allocate(DataType::kInt32, Shape{std::max(rows, shape.batch) * cols}, ctx.allocator());
      Tensor h_q = Tensor::Allocate(DataType::kUInt8, Shape{shape.batch * h}, ctx.allocator());
      const QuantizedLstmWeights& w = (*weights)[static_cast<size_t>(2 * d)];
      const QuantizedLstmWeights& r = (*weights)[static_cast<size_t>(2 * d + 1)];
      // Input projection of every step: float(sums) * (x_scale * w_scale[j]) + Wb + Rb.
      Tensor projected = Scratch<float>(ctx, rows * cols);
      w.gemm->Run(ctx, x_q.Data<uint8_t>(), rows, xq.zero_point, sums.Data<int32_t>());
      const std::vector<float> bias = InputBias(b ? b + d * 2 * cols : nullptr, 4, h, 4);
      Dequantize(ctx, sums.Data<int32_t>(), rows, cols, xq.scale, w.scales, bias.data(), projected.Data<float>());
      RunSteps<float>(
          ctx, shape, lengths, d, projected.Data<float>(),
          [&](const float* hidden, float* rec) {
            const DynamicQuantization hq =
                DynamicQuantizeUint8(ctx.thread_pool(), hidden, shape.batch * h, h_q.Data<uint8_t>());
            r.gemm->Run(ctx, h_q.Data<uint8_t>(), shape.batch, hq.zero_point, sums.Data<int32_t>());
            Dequantize(ctx, sums.Data<int32_t>(), shape.batch, cols, hq.scale, r.scales, nullptr, rec);
          },
          y, y_h, y_c);
    });
  }

 private:
  // out[i, j] = float(sums[i, j]) * (scale * column_scales[j]) (+ bias[j]).
  static void Dequantize(KernelContext& ctx, const int32_t* sums, int64_t rows, int64_t cols, float scale,
                         const std::vector<float>& column_scales, const float* bias, float* out) {
    std::vector<float> multiplier(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) multiplier[static_cast<size_t>(j)] = scale * column_scales[static_cast<size_t>(j)];
    ctx.thread_pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                                  [&](int64_t begin, int64_t end) {
                                    for (int64_t i = begin; i < end; ++i) {
                                      const int32_t* s = sums + i * cols;
                                      float* o = out + i * cols;
                                      if (bias)
                                        for (int64_t j = 0; j < cols; ++j)
                                          o[j] = static_cast<float>(s[j]) * multiplier[static_cast<size_t>(j)] + bias[j];
                                      else
                                        for (int64_t j = 0; j < cols; ++j)
                                          o[j] = static_cast<float>(s[j]) * multiplier[static_cast<size_t>(j)];
                                    }
                                  });
  }

  // W's and R's products per direction ([W0, R0, W1, R1, ...]) from inputs 1, 2 and their scales (8, 10) and
  // zero points (9, 11): per direction ([D]) or per direction and column ([D, 4h]).
  template <typename Input>
  static std::vector<QuantizedLstmWeights> Prepare(const Node& node, const Input& input) {
    std::vector<QuantizedLstmWeights> prepared;
    const Tensor* w = input(1);
    const Tensor* r = input(2);
    if (!w || !r || w->shape().rank() != 3 || r->shape().rank() != 3)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": W and R must be rank-3 8-bit tensors");
    const int64_t directions = w->shape()[0];
    for (const auto& [weights, scale_index, what] : {std::tuple{w, size_t{8}, "W"}, std::tuple{r, size_t{10}, "R"}}) {
      if (weights->type() != DataType::kInt8 && weights->type() != DataType::kUInt8)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " must be int8 or uint8, got ",
             DataTypeName(weights->type()));
      if (weights->shape()[0] != directions)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": W and R disagree on the number of directions");
    }
    prepared.resize(static_cast<size_t>(2 * directions));
    for (const auto& [weights, scale_index, slot] : {std::tuple{w, size_t{8}, 0}, std::tuple{r, size_t{10}, 1}}) {
      const int64_t k = weights->shape()[1], n = weights->shape()[2];
      const Tensor* scale = input(scale_index);
      const Tensor* zero = input(scale_index + 1);
      if (!scale) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", scale_index, " (scale) is required");
      const std::vector<float> scales = ReadScales(node, *scale, slot == 0 ? "W_scale" : "R_scale");
      const std::vector<int32_t> zeros = zero ? ReadZeroPoints(node, zero, slot == 0 ? "W_zero_point" : "R_zero_point")
                                              : std::vector<int32_t>(scales.size(), 0);
      const bool per_column = static_cast<int64_t>(scales.size()) == directions * n;
      if (!per_column && static_cast<int64_t>(scales.size()) != directions)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", slot == 0 ? "W_scale" : "R_scale", " has ",
             scales.size(), " values; expected ", directions, " or ", directions * n);
      if (zeros.size() != scales.size())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", slot == 0 ? "W" : "R",
             " zero points and scales differ in count (", zeros.size(), " and ", scales.size(), ")");
      if (zero && zero->type() != weights->type())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", slot == 0 ? "W" : "R", "'s zero point is ",
             DataTypeName(zero->type()), " but the weights are ", DataTypeName(weights->type()));
      for (int64_t d = 0; d < directions; ++d) {
        QuantizedLstmWeights& q = prepared[static_cast<size_t>(2 * d + slot)];
        const auto* bytes = static_cast<const uint8_t*>(weights->raw_data()) + d * k * n;
        std::vector<int32_t> column_zeros = per_column ? std::vector<int32_t>(zeros.begin() + d * n, zeros.begin() + (d + 1) * n)
                                                       : std::vector<int32_t>{zeros[static_cast<size_t>(d)]};
        q.gemm = std::make_unique<ConstantWeightIntegerGemm>(bytes, weights->type(), k, n, std::move(column_zeros));
        q.scales = per_column ? std::vector<float>(scales.begin() + d * n, scales.begin() + (d + 1) * n)
                              : std::vector<float>(static_cast<size_t>(n), scales[static_cast<size_t>(d)]);
      }
    }
    return prepared;
  }

  std::shared_ptr<const std::vector<QuantizedLstmWeights>> weights_;  // when W, R and their parameters are constant
};

}  // namespace

void RegisterLstmKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "LSTM";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Lstm>(std::move(def));

  const std::vector<DataType> q8{DataType::kInt8, DataType::kUInt8};
  KernelDef quantized;
  quantized.op_type = "DynamicQuantizeLSTM";
  quantized.domain = "com.microsoft";
  quantized.since_version = 1;
  quantized.input_types = {{0, {DataType::kFloat}}, {1, q8}, {2, q8}, {8, {DataType::kFloat}}, {9, q8},
                           {10, {DataType::kFloat}}, {11, q8}};
  registry.Register<DynamicQuantizeLstm>(std::move(quantized));
}

}  // namespace tessera::cpu
