// Normalization: BatchNormalization (inference only), LayerNormalization (opset 17) and
// InstanceNormalization. Statistics accumulate in double; the per-element work is a fused
// multiply-add over contiguous rows so the compiler vectorizes it.
#include <cmath>
#include <vector>

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

class BatchNormalization : public Kernel {
 public:
  explicit BatchNormalization(const KernelInfo& info)
      : epsilon_(info.node().GetFloat("epsilon", 1e-5f)), spatial_(info.node().GetInt("spatial", 1) != 0) {
    const Node& node = info.node();
    if (node.GetInt("training_mode", 0) != 0 || HasOutput(node, 1) || HasOutput(node, 2) || HasOutput(node, 3) ||
        HasOutput(node, 4))
      Fail(ErrorCode::kNotImplemented, node.Describe(),
           ": training mode (training_mode=1 or running/saved statistics outputs) is not supported; "
           "only inference is");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& xs = x.shape();
    if (xs.rank() < 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", xs.ToString(), " must be [N, C, ...]");
    const int64_t channels = xs[1], spatial = xs.SizeFrom(2);
    // spatial=0 (opset < 9) gives every element of a sample its own statistics.
    const int64_t params = spatial_ ? channels : channels * spatial;
    std::vector<double> scale, shift;
    for (size_t i = 1; i <= 4; ++i) {
      const Tensor& p = ctx.Input(i);
      if (p.NumElements() != params)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " has shape ", p.shape().ToString(),
             " but X ", xs.ToString(), " needs ", params, " values");
    }
    const std::vector<double> gamma = ToDoubles(ctx.Input(1)), beta = ToDoubles(ctx.Input(2)),
                              mean = ToDoubles(ctx.Input(3)), var = ToDoubles(ctx.Input(4));
    for (int64_t c = 0; c < params; ++c) {
      scale.push_back(gamma[c] / std::sqrt(var[c] + static_cast<double>(epsilon_)));
      shift.push_back(beta[c] - mean[c] * scale.back());
    }
    Tensor& y = ctx.Output(0, x.type(), xs);
    const int64_t rows = spatial_ ? xs[0] * channels : xs[0] * params, width = spatial_ ? spatial : 1;
    if (x.type() == DataType::kFloat)
      ScaleShiftRows(x.Data<float>(), y.Data<float>(), rows, width, scale, shift, ctx.thread_pool());
    else
      ScaleShiftRows(x.Data<double>(), y.Data<double>(), rows, width, scale, shift, ctx.thread_pool());
  }

 private:
  float epsilon_;
  bool spatial_;
};

// Mean and 1/sqrt(var + epsilon) of a contiguous run of `n` values.
template <typename T>
std::pair<double, double> MeanInvStd(const T* x, int64_t n, double epsilon) {
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    sum_sq += d * d;
  }
  const double var = n > 0 ? sum_sq / static_cast<double>(n) : 0.0;
  return {mean, 1.0 / std::sqrt(var + epsilon)};
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
        for (int64_t i = 0; i < r.width; ++i) yr[i] = (xr[i] - m) * s * scale[i] + shift[i];
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
