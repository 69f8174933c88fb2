// Signal windows (opset 17): HannWindow, HammingWindow and BlackmanWindow are generalized cosine
// windows sum_k (-1)^k a_k cos(2 pi k n / D), with D = size (periodic) or size - 1 (symmetric).
// MelWeightMatrix builds triangular mel filter banks over the bins of a one-sided DFT.
#include <cmath>
#include <numbers>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

// Writes `values` into a new output 0 of the node's `output_datatype` (default float).
void WriteAs(KernelContext& ctx, const Shape& shape, const std::vector<double>& values) {
  const auto type = static_cast<DataType>(ctx.node().GetInt("output_datatype", 1));
  if (!IsKnownDataType(static_cast<int32_t>(type)) || type == DataType::kString || type == DataType::kBool)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": unsupported output_datatype ",
         static_cast<int>(type));
  Tensor& out = ctx.Output(0, type, shape);
  VisitNumericType(ctx.node(), type, [&]<typename T>() {
    T* data = static_cast<T*>(out.raw_data());
    for (size_t i = 0; i < values.size(); ++i) data[i] = Narrow<T>(values[i]);
  });
}

int64_t ReadScalarInt(const KernelContext& ctx, size_t input, const char* what) {
  const std::vector<int64_t> v = ReadIntParameter(ctx.node(), ctx.Input(input), what);
  if (v.size() != 1) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " must be a scalar");
  return v[0];
}

class CosineWindow : public Kernel {
 public:
  CosineWindow(const KernelInfo& info, std::vector<double> coefficients)
      : coefficients_(std::move(coefficients)), periodic_(info.node().GetInt("periodic", 1) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const int64_t size = ReadScalarInt(ctx, 0, "size");
    if (size < 0) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": size must be >= 0, got ", size);
    const double denominator = static_cast<double>(periodic_ ? size : size - 1);
    std::vector<double> values(static_cast<size_t>(size));
    for (int64_t n = 0; n < size; ++n) {
      double v = 0, sign = 1;
      for (size_t k = 0; k < coefficients_.size(); ++k, sign = -sign)
        v += sign * coefficients_[k] *
             (denominator > 0 ? std::cos(2 * std::numbers::pi * static_cast<double>(k) * static_cast<double>(n) / denominator) : 1.0);
      values[static_cast<size_t>(n)] = v;
    }
    WriteAs(ctx, Shape{size}, values);
  }

 private:
  std::vector<double> coefficients_;
  bool periodic_;
};

double HertzToMel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double MelToHertz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// Output [dft_length / 2 + 1, num_mel_bins]. Filter i rises linearly from bin edge[i] to edge[i+1] and
// falls to edge[i+2]; the edges are equally spaced on the mel scale (num_mel_bins + 2 steps between the
// lower and upper edge) and mapped to DFT bins by floor((dft_length + 1) * hz / sample_rate).
class MelWeightMatrix : public Kernel {
 public:
  explicit MelWeightMatrix(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const int64_t mel_bins = ReadScalarInt(ctx, 0, "num_mel_bins");
    const int64_t dft_length = ReadScalarInt(ctx, 1, "dft_length");
    const int64_t sample_rate = ReadScalarInt(ctx, 2, "sample_rate");
    const double lower_mel = HertzToMel(ReadScalarAsDouble(ctx.node(), ctx.Input(3), "lower_edge_hertz"));
    const double upper_mel = HertzToMel(ReadScalarAsDouble(ctx.node(), ctx.Input(4), "upper_edge_hertz"));
    if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": num_mel_bins, dft_length and sample_rate must be > 0");
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    const double mel_step = (upper_mel - lower_mel) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
    for (size_t i = 0; i < edge.size(); ++i) {
      const double hz = MelToHertz(lower_mel + mel_step * static_cast<double>(i));
      edge[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    }
    std::vector<double> w(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
    auto at = [&](int64_t bin, int64_t mel) -> double* {
      if (bin < 0 || bin >= spectrogram_bins)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": mel edge maps to DFT bin ", bin,
             " outside [0, ", spectrogram_bins, ")");
      return &w[static_cast<size_t>(bin * mel_bins + mel)];
    };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)];
      const int64_t right = edge[static_cast<size_t>(i + 2)];
      if (center == left) *at(center, i) = 1.0;
      else
        for (int64_t j = left; j <= center; ++j) *at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      for (int64_t j = center; j < right; ++j) *at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
    WriteAs(ctx, Shape{spectrogram_bins, mel_bins}, w);
  }
};

void RegisterWindow(KernelRegistry& registry, const char* op, std::vector<double> coefficients) {
  KernelDef def;
  def.op_type = op;
  def.since_version = 17;
  def.host_inputs = {0};
  registry.Register(std::move(def), [coefficients](const KernelInfo& info) {
    return std::make_unique<CosineWindow>(info, coefficients);
  });
}

}  // namespace

void RegisterWindowKernels(KernelRegistry& registry) {
  RegisterWindow(registry, "HannWindow", {0.5, 0.5});
  RegisterWindow(registry, "HammingWindow", {25.0 / 46.0, 21.0 / 46.0});
  RegisterWindow(registry, "BlackmanWindow", {0.42, 0.5, 0.08});
  KernelDef mel;
  mel.op_type = "MelWeightMatrix";
  mel.since_version = 17;
  mel.host_inputs = {0, 1, 2, 3, 4};
  registry.Register<MelWeightMatrix>(std::move(mel));
}

}  // namespace tessera::cpu
