// SkipLayerNormalization (opset 1) in domains ai.tessera (made by graph/passes/skip_layer_norm_fusion) and
// com.microsoft (ONNX Runtime's contrib op, found in models ONNX Runtime optimized):
//
//   sum = (input + bias) + skip               output = (sum - mean) / sqrt(var + epsilon) * gamma + beta
//
// over the last axis. Inputs (input, skip, gamma, beta?, bias?), attribute epsilon (default 1e-12 as in
// ONNX Runtime; the fusion always sets it), outputs (output, mean, inv_std_var, input_skip_bias_sum?):
// output 3 is the sum; mean and inv_std_var are not produced (a node naming them fails). input and skip
// broadcast against each other as Add's operands do; gamma, beta and bias hold one value per feature (the
// last dimension of the broadcast shape). All of one type, float32 or float16.
//
// The result is the unfused Add(s) + LayerNormalization of this EP: every addition is rounded to the
// element type in the unfused order, statistics accumulate in double and float rows are normalized with
// LayerNormalization's float expression. Float rows are summed into the output (or the sum output) and
// normalized in place, so no scratch memory is needed; float16 rows go through a float row per task.
//
// ai.tessera::MatMulSkipLayerNormalization (opset 1; graph/passes/matmul_skip_layer_norm_fusion, which fuses for the
// CUDA EP only): the same with its input the product A x B, inputs (A [..., K], B [K, N], skip, gamma, beta?, bias?),
// output 0 only, skip of the product's shape or broadcasting to it. This kernel lets a graph holding the op (an
// optimized model saved by a CUDA session) run on the CPU: the product accumulates in float32 over blocks of rows
// against B widened to float once (at creation when B is an initializer), and the sum (product + bias) + skip stays
// in float32 before the statistics, as the CUDA kernel computes it. The CPU EP itself keeps MatMul and
// SkipLayerNormalization (its oneDNN product is faster than this loop).
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/float_width.h"
#include "providers/cpu/common/row_statistics.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/cpu_kernels.h"
#include "tessera/ep/matmul_skip_layer_norm_geometry.h"

namespace tessera::cpu {
namespace {

// `v` rounded to T, as the unfused Add's result would be.
template <typename T>
float Round(float v) {
  return Widen(Narrow<T>(v));
}

// Where each row of the output (viewed as [rows, hidden]) starts in an operand broadcast to it.
struct RowMap {
  std::vector<int64_t> dims;     // the output's dims except the last
  std::vector<int64_t> strides;  // the operand's element stride along each of them (0 where broadcast)
  int64_t step = 1;              // element stride along a row: 1, or 0 when the operand's last dim is 1
  int64_t row_size = 0;          // hidden, when the operand has the output's shape (offset = row * hidden)

  int64_t Offset(int64_t row) const {
    if (row_size > 0) return row * row_size;
    int64_t offset = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      offset += (row % dims[d]) * strides[d];
      row /= dims[d];
    }
    return offset;
  }
};

RowMap MapRows(const Shape& operand, const Shape& out) {
  const size_t rank = out.rank(), lead = rank - operand.rank();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = rank; d-- > lead;) {
    const int64_t size = operand[d - lead];
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  RowMap map;
  map.step = strides.back();
  map.dims.assign(out.dims().begin(), out.dims().end() - 1);
  map.strides.assign(strides.begin(), strides.end() - 1);
  if (operand == out) map.row_size = out[rank - 1];
  return map;
}

template <typename T>
struct RowOperands {
  const T* input;
  const T* skip;
  const T* gamma;
  const T* beta;  // nullptr when absent
  const T* bias;  // nullptr when absent
  RowMap input_rows, skip_rows;
  int64_t hidden;
};

// s = (a + bias) + b for float rows (bias may be null), in the template's order of additions, built per instruction
// set (the templates below are compiled for the baseline only).
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void SumFloatRow(const float* a, const float* bias, const float* b, float* s, int64_t n) {
  if (bias != nullptr) {
    for (int64_t i = 0; i < n; ++i) s[i] = (a[i] + bias[i]) + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) s[i] = a[i] + b[i];
  }
}

// s = (input + bias) + skip for one row, each addition rounded to T.
template <typename T>
void SumRow(const RowOperands<T>& op, int64_t row, float* s) {
  const T* a = op.input + op.input_rows.Offset(row);
  const T* b = op.skip + op.skip_rows.Offset(row);
  const T* bias = op.bias;
  const int64_t n = op.hidden, sa = op.input_rows.step, sb = op.skip_rows.step;
  if constexpr (std::is_same_v<T, float>) {
    if (sa == 1 && sb == 1) return SumFloatRow(a, bias, b, s, n);
  }
  if (sa == 1 && sb == 1) {
    if (bias != nullptr) {
      for (int64_t i = 0; i < n; ++i) s[i] = Round<T>(Round<T>(Widen(a[i]) + Widen(bias[i])) + Widen(b[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) s[i] = Round<T>(Widen(a[i]) + Widen(b[i]));
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float x = bias != nullptr ? Round<T>(Widen(a[i * sa]) + Widen(bias[i])) : Widen(a[i * sa]);
    s[i] = Round<T>(x + Widen(b[i * sb]));
  }
}

// y = (s - mean) * inv_std * gamma + beta with LayerNormalization's statistics (double accumulation).
template <typename T>
void NormalizeRow(const RowOperands<T>& op, const float* s, T* y, double epsilon) {
  const int64_t n = op.hidden;
  const RowStatistics stats = MeanVariance(s, n);  // LayerNormalization's (row_statistics.h)
  const float m = static_cast<float>(stats.mean);
  const float inv_std = static_cast<float>(1.0 / std::sqrt(stats.variance + epsilon));
  const T* gamma = op.gamma;
  const T* beta = op.beta;
  if constexpr (std::is_same_v<T, float>) return cpu::NormalizeRow(s, m, inv_std, gamma, beta, y, n);
  if (beta != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = Narrow<T>((s[i] - m) * inv_std * Widen(gamma[i]) + Widen(beta[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = Narrow<T>((s[i] - m) * inv_std * Widen(gamma[i]));
  }
}

template <typename T>
void RunRows(const ThreadPool& pool, const RowOperands<T>& op, int64_t rows, T* y, T* sum, double epsilon) {
  const int64_t n = op.hidden;
  pool.ParallelFor(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(std::is_same_v<T, float> ? 0 : static_cast<size_t>(n));
    for (int64_t row = begin; row < end; ++row) {
      T* y_row = y + row * n;
      T* sum_row = sum != nullptr ? sum + row * n : nullptr;
      if constexpr (std::is_same_v<T, float>) {
        float* s = sum_row != nullptr ? sum_row : y_row;
        SumRow(op, row, s);
        NormalizeRow(op, s, y_row, epsilon);
      } else {
        SumRow(op, row, scratch.data());
        if (sum_row != nullptr)
          for (int64_t i = 0; i < n; ++i) sum_row[i] = Narrow<T>(scratch[i]);
        NormalizeRow(op, scratch.data(), y_row, epsilon);
      }
    }
  });
}

bool NamesOutput(const Node& node, size_t i) { return i < node.outputs.size() && !node.outputs[i].empty(); }

class SkipLayerNormalization : public Kernel {
 public:
  explicit SkipLayerNormalization(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-12f)) {
    if (NamesOutput(info.node(), 1) || NamesOutput(info.node(), 2))
      Fail(ErrorCode::kNotImplemented, info.node().Describe(),
           ": the mean and inv_std_var outputs (1, 2) are not produced; only output and input_skip_bias_sum");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const Tensor& skip = ctx.Input(1);
    const Tensor& gamma = ctx.Input(2);
    const Tensor* beta = ctx.OptionalInput(3);
    const Tensor* bias = ctx.OptionalInput(4);
    std::vector<Shape> shapes = {input.shape(), skip.shape()};
    if (bias != nullptr) shapes.push_back(Shape{bias->NumElements()});
    const Shape out = BroadcastShapes(ctx.node(), shapes);
    if (out.rank() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input and skip are scalars; need a hidden axis");
    const int64_t hidden = out[out.rank() - 1];
    CheckParameter(ctx, skip, "skip", -1);
    CheckParameter(ctx, gamma, "gamma", hidden);
    if (beta != nullptr) CheckParameter(ctx, *beta, "beta", hidden);
    if (bias != nullptr) CheckParameter(ctx, *bias, "bias", hidden);
    Tensor& y = ctx.Output(0, input.type(), out);
    Tensor* sum = NamesOutput(ctx.node(), 3) ? &ctx.Output(3, input.type(), out) : nullptr;
    if (out.NumElements() == 0) return;
    if (input.type() == DataType::kFloat) Run<float>(ctx, out, sum, y);
    else Run<Float16>(ctx, out, sum, y);
  }

 private:
  // Same type as input and, when `length` >= 0, that many values.
  static void CheckParameter(const KernelContext& ctx, const Tensor& t, const char* what, int64_t length) {
    const DataType type = ctx.Input(0).type();
    if (t.type() != type || (length >= 0 && t.NumElements() != length))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " is ", t.Describe(), ", expected ",
           DataTypeName(type), length >= 0 ? " with one value per feature (" + std::to_string(length) + ")" : "");
  }

  template <typename T>
  void Run(KernelContext& ctx, const Shape& out, Tensor* sum, Tensor& y) const {
    const Tensor* beta = ctx.OptionalInput(3);
    const Tensor* bias = ctx.OptionalInput(4);
    const int64_t hidden = out[out.rank() - 1];
    const RowOperands<T> op{ctx.Input(0).Data<T>(),
                            ctx.Input(1).Data<T>(),
                            ctx.Input(2).Data<T>(),
                            beta ? beta->Data<T>() : nullptr,
                            bias ? bias->Data<T>() : nullptr,
                            MapRows(ctx.Input(0).shape(), out),
                            MapRows(ctx.Input(1).shape(), out),
                            hidden};
    RunRows(ctx.thread_pool(), op, out.NumElements() / hidden, y.Data<T>(), sum ? sum->Data<T>() : nullptr,
            static_cast<double>(epsilon_));
  }

  float epsilon_;
};

// acc[r][0..n) += sum over j < k of a[r][j] * b[j][0..n) for `rows` (<= kProductRows) rows of a (`a_stride` apart)
// and acc (`n` apart), built per instruction set.
constexpr int64_t kProductRows = 8;
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void AccumulateProductRows(const float* a, int64_t a_stride, const float* b, float* acc, int64_t rows, int64_t k,
                           int64_t n) {
  for (int64_t j = 0; j < k; ++j) {
    const float* b_row = b + j * n;
    for (int64_t r = 0; r < rows; ++r) {
      const float x = a[r * a_stride + j];
      float* acc_row = acc + r * n;
      for (int64_t i = 0; i < n; ++i) acc_row[i] += x * b_row[i];
    }
  }
}

template <typename T>
std::vector<float> WidenAll(const T* x, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = Widen(x[i]);
  return out;
}

class MatMulSkipLayerNormalization : public Kernel {
 public:
  explicit MatMulSkipLayerNormalization(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-12f)) {
    for (size_t i = 1; i < info.node().outputs.size(); ++i)
      if (NamesOutput(info.node(), i))
        Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": only output 0 is produced");
    if (const Tensor* b = info.ConstantInput(1); b != nullptr && b->type() == DataType::kFloat16)
      constant_b_ = WidenAll(b->Data<Float16>(), b->NumElements());
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor& skip = ctx.Input(2);
    const Tensor* beta = ctx.OptionalInput(4);
    const Tensor* bias = ctx.OptionalInput(5);
    const DataType type = a.type();
    const Shape out = MatMulSkipLayerNormOutput(ctx.node(), a, b, skip, ctx.Input(3), beta, bias);
    const int64_t k = b.shape()[0], n = b.shape()[1];
    Tensor& y = ctx.Output(0, type, out);
    if (out.NumElements() == 0) return;
    if (type == DataType::kFloat) Run<float>(ctx, out, n, k, y);
    else Run<Float16>(ctx, out, n, k, y);
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const Shape& out, int64_t n, int64_t k, Tensor& y) const {
    const Tensor* beta = ctx.OptionalInput(4);
    const Tensor* bias = ctx.OptionalInput(5);
    const T* a = ctx.Input(0).Data<T>();
    std::vector<float> widened_b;
    const float* b = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      b = ctx.Input(1).Data<float>();
    } else {
      if (constant_b_.empty()) widened_b = WidenAll(ctx.Input(1).Data<T>(), k * n);
      b = constant_b_.empty() ? widened_b.data() : constant_b_.data();
    }
    const T* skip = ctx.Input(2).Data<T>();
    const RowMap skip_rows = MapRows(ctx.Input(2).shape(), out);
    const T* gamma = ctx.Input(3).Data<T>();
    const T* beta_data = beta != nullptr ? beta->Data<T>() : nullptr;
    const T* bias_data = bias != nullptr ? bias->Data<T>() : nullptr;
    T* y_data = y.Data<T>();
    const int64_t rows = out.NumElements() / n;
    const int64_t blocks = (rows + kProductRows - 1) / kProductRows;
    ctx.thread_pool().ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> acc(static_cast<size_t>(kProductRows * n)), a_rows(static_cast<size_t>(kProductRows * k));
      for (int64_t block = begin; block < end; ++block) {
        const int64_t first = block * kProductRows, count = std::min(kProductRows, rows - first);
        for (int64_t i = 0; i < count * k; ++i) a_rows[i] = Widen(a[first * k + i]);
        std::fill(acc.begin(), acc.end(), 0.0f);
        AccumulateProductRows(a_rows.data(), k, b, acc.data(), count, k, n);
        for (int64_t r = 0; r < count; ++r) {
          float* s = acc.data() + r * n;
          const T* skip_row = skip + skip_rows.Offset(first + r);
          for (int64_t i = 0; i < n; ++i)
            s[i] = (s[i] + (bias_data != nullptr ? Widen(bias_data[i]) : 0.0f)) + Widen(skip_row[i * skip_rows.step]);
          const RowStatistics stats = MeanVariance(s, n);
          const float mean = static_cast<float>(stats.mean);
          const float inv_std = static_cast<float>(1.0 / std::sqrt(stats.variance + static_cast<double>(epsilon_)));
          T* y_row = y_data + (first + r) * n;
          for (int64_t i = 0; i < n; ++i)
            y_row[i] = Narrow<T>((s[i] - mean) * inv_std * Widen(gamma[i]) +
                                 (beta_data != nullptr ? Widen(beta_data[i]) : 0.0f));
        }
      }
    });
  }

  float epsilon_;
  std::vector<float> constant_b_;  // a float16 initializer B widened
};

KernelDef SkipLayerNormDef(const char* domain) {
  KernelDef def;
  def.op_type = "SkipLayerNormalization";
  def.domain = domain;
  def.since_version = 1;
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16}}};
  return def;
}

}  // namespace

void RegisterSkipLayerNormKernels(KernelRegistry& registry) {
  registry.Register<SkipLayerNormalization>(SkipLayerNormDef("ai.tessera"));
  registry.Register<SkipLayerNormalization>(SkipLayerNormDef("com.microsoft"));
  KernelDef fused = SkipLayerNormDef("ai.tessera");
  fused.op_type = "MatMulSkipLayerNormalization";
  registry.Register<MatMulSkipLayerNormalization>(fused);
}

}  // namespace tessera::cpu
