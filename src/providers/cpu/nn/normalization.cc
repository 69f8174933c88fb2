// Normalization: BatchNormalization (inference and training mode), LayerNormalization (opset 17) and
// InstanceNormalization. Statistics accumulate in double; the per-element work is a fused
// multiply-add over contiguous rows so the compiler vectorizes it.
#include <cmath>
#include <type_traits>
#include <vector>

#include "providers/cpu/common/row_statistics.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

bool HasOutput(const Node& node, size_t i) { return i < node.outputs.size() && !node.outputs[i].empty(); }

template <typename T>
std::vector<double> AsDoubles(const Tensor& t) {
  const T* d = t.Data<T>();
  return std::vector<double>(d, d + t.NumElements());
}

std::vector<double> ToDoubles(const Tensor& t) {
  return t.type() == DataType::kDouble ? AsDoubles<double>(t) : AsDoubles<float>(t);
}

// y = x * scale + shift over `rows` rows of `width` elements; row r uses scale[r % params].
template <typename T>
void ScaleShiftRows(const T* x, T* y, int64_t rows, int64_t width, const std::vector<double>& scale,
                    const std::vector<double>& shift, const ThreadPool& pool) {
  const int64_t params = static_cast<int64_t>(scale.size());
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T a = static_cast<T>(scale[r % params]), b = static_cast<T>(shift[r % params]);
      const T* xr = x + r * width;
      T* yr = y + r * width;
      for (int64_t i = 0; i < width; ++i) yr[i] = xr[i] * a + b;
    }
  });
}

// Per-parameter mean and population variance of X viewed as [batch, params, width], over batch and width.
template <typename T>
void BatchStatistics(const T* x, int64_t batch, int64_t params, int64_t width, std::vector<double>& mean,
                     std::vector<double>& var, const ThreadPool& pool) {
  mean.assign(params, 0.0);
  var.assign(params, 0.0);
  const double count = static_cast<double>(batch * width);
  if (count == 0) return;
  pool.ParallelFor(params, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = x + (n * params + p) * width;
        for (int64_t i = 0; i < width; ++i) sum += static_cast<double>(row[i]);
      }
      const double m = sum / count;
      double sum_sq = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = x + (n * params + p) * width;
        for (int64_t i = 0; i < width; ++i) {
          const double d = static_cast<double>(row[i]) - m;
          sum_sq += d * d;
        }
      }
      mean[p] = m;
      var[p] = sum_sq / count;
    }
  });
}

// Writes `values` to output `index` (when the node has it) as a [params] tensor of `type`.
void WriteStatistic(KernelContext& ctx, size_t index, DataType type, const std::vector<double>& values) {
  if (!HasOutput(ctx.node(), index)) return;
  Tensor& out = ctx.Output(index, type, Shape{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DataType::kDouble) out.Data<double>()[i] = values[i];
    else out.Data<float>()[i] = static_cast<float>(values[i]);
  }
}

// Inference normalizes with input_mean/input_var. Training mode (opset >= 14: training_mode=1; before:
// any statistics output requested) normalizes with the batch statistics over every axis but the channel
// and outputs running_mean = input_mean * momentum + batch_mean * (1 - momentum) (running_var likewise,
// population variance); opsets < 14 also output saved_mean and saved_var, the batch mean and variance.
class BatchNormalization : public Kernel {
 public:
  explicit BatchNormalization(const KernelInfo& info)
      : epsilon_(info.node().GetFloat("epsilon", 1e-5f)),
        momentum_(info.node().GetFloat("momentum", 0.9f)),
        spatial_(info.node().GetInt("spatial", 1) != 0) {
    const Node& node = info.node();
    bool any_statistics_output = false;
    for (size_t i = 1; i <= 4; ++i) any_statistics_output = any_statistics_output || HasOutput(node, i);
    training_ = node.opset >= 14 ? node.GetInt("training_mode", 0) != 0 : any_statistics_output;
    if (!training_ && any_statistics_output)
      Fail(ErrorCode::kInvalidModel, node.Describe(),
           ": running_mean/running_var outputs are only valid with training_mode=1");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& xs = x.shape();
    if (xs.rank() < 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", xs.ToString(), " must be [N, C, ...]");
    const int64_t channels = xs[1], spatial = xs.SizeFrom(2);
    // spatial=0 (opset < 9) gives every element of a sample its own statistics.
    const int64_t params = spatial_ ? channels : channels * spatial, width = spatial_ ? spatial : 1;
    for (size_t i = 1; i <= 4; ++i) {
      const Tensor& p = ctx.Input(i);
      if (p.NumElements() != params)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " has shape ", p.shape().ToString(),
             " but X ", xs.ToString(), " needs ", params, " values");
    }
    std::vector<double> mean, var;
    if (training_) {
      if (x.type() == DataType::kFloat)
        BatchStatistics(x.Data<float>(), xs[0], params, width, mean, var, ctx.thread_pool());
      else
        BatchStatistics(x.Data<double>(), xs[0], params, width, mean, var, ctx.thread_pool());
      WriteRunningStatistics(ctx, mean, var);
    } else {
      mean = ToDoubles(ctx.Input(3));
      var = ToDoubles(ctx.Input(4));
    }
    const std::vector<double> gamma = ToDoubles(ctx.Input(1)), beta = ToDoubles(ctx.Input(2));
    std::vector<double> scale, shift;
    for (int64_t c = 0; c < params; ++c) {
      scale.push_back(gamma[c] / std::sqrt(var[c] + static_cast<double>(epsilon_)));
      shift.push_back(beta[c] - mean[c] * scale.back());
    }
    Tensor& y = ctx.Output(0, x.type(), xs);
    const int64_t rows = xs[0] * params;
    if (x.type() == DataType::kFloat)
      ScaleShiftRows(x.Data<float>(), y.Data<float>(), rows, width, scale, shift, ctx.thread_pool());
    else
      ScaleShiftRows(x.Data<double>(), y.Data<double>(), rows, width, scale, shift, ctx.thread_pool());
  }

 private:
  void WriteRunningStatistics(KernelContext& ctx, const std::vector<double>& mean,
                              const std::vector<double>& var) const {
    const std::vector<double> input_mean = ToDoubles(ctx.Input(3)), input_var = ToDoubles(ctx.Input(4));
    const double momentum = momentum_;
    std::vector<double> running_mean(mean.size()), running_var(var.size());
    for (size_t c = 0; c < mean.size(); ++c) {
      running_mean[c] = input_mean[c] * momentum + mean[c] * (1 - momentum);
      running_var[c] = input_var[c] * momentum + var[c] * (1 - momentum);
    }
    WriteStatistic(ctx, 1, ctx.Input(3).type(), running_mean);
    WriteStatistic(ctx, 2, ctx.Input(4).type(), running_var);
    WriteStatistic(ctx, 3, ctx.Input(3).type(), mean);
    WriteStatistic(ctx, 4, ctx.Input(4).type(), var);
  }

  float epsilon_;
  float momentum_;
  bool spatial_;
  bool training_ = false;
};

// Mean and 1/sqrt(var + epsilon) of a contiguous run of `n` values.
template <typename T>
std::pair<double, double> MeanInvStd(const T* x, int64_t n, double epsilon) {
  const RowStatistics stats = MeanVariance(x, n);
  return {stats.mean, 1.0 / std::sqrt(stats.variance + epsilon)};
}

class InstanceNormalization : public Kernel {
 public:
  explicit InstanceNormalization(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& xs = x.shape();
    if (xs.rank() < 3)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", xs.ToString(), " must be [N, C, spatial...]");
    const int64_t channels = xs[1];
    for (size_t i = 1; i <= 2; ++i)
      if (ctx.Input(i).NumElements() != channels)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " has shape ",
             ctx.Input(i).shape().ToString(), " but X ", xs.ToString(), " has ", channels, " channels");
    Tensor& y = ctx.Output(0, x.type(), xs);
    if (x.type() == DataType::kFloat) Run<float>(ctx, x, y);
    else Run<double>(ctx, x, y);
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const Tensor& x, Tensor& y) const {
    const int64_t channels = x.shape()[1], planes = x.shape()[0] * channels, width = x.shape().SizeFrom(2);
    const std::vector<double> gamma = ToDoubles(ctx.Input(1)), beta = ToDoubles(ctx.Input(2));
    const T* xd = x.Data<T>();
    T* yd = y.Data<T>();
    ctx.thread_pool().ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const auto [mean, inv_std] = MeanInvStd(xd + p * width, width, epsilon_);
        const double scale = gamma[p % channels] * inv_std;
        const T a = static_cast<T>(scale), b = static_cast<T>(beta[p % channels] - mean * scale);
        for (int64_t i = 0; i < width; ++i) yd[p * width + i] = xd[p * width + i] * a + b;
      }
    });
  }

  float epsilon_;
};

// `t` broadcast (numpy, right-aligned) to `dims`, as doubles.
std::vector<double> BroadcastTo(const Tensor& t, const std::vector<int64_t>& dims, const Node& node, const char* what) {
  const std::vector<double> values = ToDoubles(t);
  const std::vector<int64_t>& td = t.shape().dims();
  if (td.size() > dims.size())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " ", t.shape().ToString(),
         " does not broadcast to normalized shape ", Shape(dims).ToString());
  std::vector<int64_t> strides(dims.size(), 0);
  for (size_t i = 0, stride = 1; i < td.size(); ++i) {
    const size_t t_axis = td.size() - 1 - i, d_axis = dims.size() - 1 - i;
    if (td[t_axis] != 1 && td[t_axis] != dims[d_axis])
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " ", t.shape().ToString(),
           " does not broadcast to normalized shape ", Shape(dims).ToString());
    strides[d_axis] = td[t_axis] == 1 ? 0 : static_cast<int64_t>(stride);
    stride *= static_cast<size_t>(td[t_axis]);
  }
  const int64_t count = Shape(dims).NumElements();
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int64_t r = i, d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      offset += (r % dims[d]) * strides[d];
      r /= dims[d];
    }
    out[i] = values[offset];
  }
  return out;
}

class LayerNormalization : public Kernel {
 public:
  explicit LayerNormalization(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", -1)), epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(x.shape().rank())));
    const std::vector<int64_t> normalized(x.shape().dims().begin() + axis, x.shape().dims().end());
    const std::vector<double> scale = BroadcastTo(ctx.Input(1), normalized, ctx.node(), "Scale");
    const Tensor* bias = ctx.OptionalInput(2);
    const std::vector<double> shift =
        bias ? BroadcastTo(*bias, normalized, ctx.node(), "B") : std::vector<double>(scale.size(), 0.0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    std::vector<int64_t> stat_dims(x.shape().dims().begin(), x.shape().dims().begin() + axis);
    stat_dims.resize(x.shape().rank(), 1);
    // Mean and InvStdDev use the stash type (float unless stash_type says otherwise, always float here).
    float* mean_out = HasOutput(ctx.node(), 1) ? ctx.Output(1, DataType::kFloat, Shape(stat_dims)).Data<float>() : nullptr;
    float* inv_std_out =
        HasOutput(ctx.node(), 2) ? ctx.Output(2, DataType::kFloat, Shape(stat_dims)).Data<float>() : nullptr;
    const int64_t rows = x.shape().SizeTo(axis), width = x.shape().SizeFrom(axis);
    Rows rows_spec{rows, width, &scale, &shift, mean_out, inv_std_out};
    if (x.type() == DataType::kFloat) Run(ctx, rows_spec, x.Data<float>(), y.Data<float>());
    else Run(ctx, rows_spec, x.Data<double>(), y.Data<double>());
  }

 private:
  struct Rows {
    int64_t count, width;
    const std::vector<double>* scale;
    const std::vector<double>* shift;
    float* mean_out;
    float* inv_std_out;
  };

  template <typename T>
  void Run(KernelContext& ctx, const Rows& r, const T* x, T* y) const {
    std::vector<T> scale(r.scale->begin(), r.scale->end()), shift(r.shift->begin(), r.shift->end());
    ctx.thread_pool().ParallelFor(r.count, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, r.width)),
                                  [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* xr = x + row * r.width;
        T* yr = y + row * r.width;
        const auto [mean, inv_std] = MeanInvStd(xr, r.width, epsilon_);
        const T m = static_cast<T>(mean), s = static_cast<T>(inv_std);
        if constexpr (std::is_same_v<T, float>) {
          NormalizeRow(xr, m, s, scale.data(), shift.data(), yr, r.width);
        } else {
          for (int64_t i = 0; i < r.width; ++i) yr[i] = (xr[i] - m) * s * scale[i] + shift[i];
        }
        if (r.mean_out) r.mean_out[row] = static_cast<float>(mean);
        if (r.inv_std_out) r.inv_std_out[row] = static_cast<float>(inv_std);
      }
    });
  }

  int64_t axis_;
  float epsilon_;
};

KernelDef FloatDef(const char* op, int since, int until = INT_MAX) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = until;
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  return def;
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  registry.Register<BatchNormalization>(FloatDef("BatchNormalization", 1));
  registry.Register<InstanceNormalization>(FloatDef("InstanceNormalization", 1));
  registry.Register<LayerNormalization>(FloatDef("LayerNormalization", 17));
}

}  // namespace tessera::cpu
