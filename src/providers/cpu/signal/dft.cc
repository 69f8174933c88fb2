// DFT (opset 17: axis attribute; opset 20: axis input, default -2) and STFT (opset 17).
//
// Signals are real ([..., 1]) or complex ([..., 2]) in the last dimension; outputs are complex. A line
// of length L is transformed as X[f] = sum_k x[k] exp(-+2 pi i f k / L) (inverse: + and scaled by 1/L),
// with the input zero-padded or truncated to L = dft_length. One-sided outputs keep L / 2 + 1 bins.
// Power-of-two lengths use an iterative radix-2 FFT; other lengths the direct sum with a twiddle table.
#include <algorithm>
#include <complex>
#include <numbers>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

using Complex = std::complex<double>;

// In-place transform of `line` (size L); `inverse` selects the sign, no scaling.
void Transform(std::vector<Complex>& line, bool inverse, std::vector<Complex>& scratch) {
  const size_t n = line.size();
  const double sign = inverse ? 1.0 : -1.0;
  if (n <= 1) return;
  if ((n & (n - 1)) == 0) {
    for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(line[i], line[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const Complex step = std::polar(1.0, sign * 2 * std::numbers::pi / static_cast<double>(len));
      for (size_t start = 0; start < n; start += len) {
        Complex w = 1;
        for (size_t k = 0; k < len / 2; ++k, w *= step) {
          const Complex a = line[start + k], b = line[start + k + len / 2] * w;
          line[start + k] = a + b;
          line[start + k + len / 2] = a - b;
        }
      }
    }
    return;
  }
  scratch.assign(n, Complex{});
  std::vector<Complex> twiddle(n);
  for (size_t k = 0; k < n; ++k)
    twiddle[k] = std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n));
  for (size_t f = 0; f < n; ++f) {
    Complex sum = 0;
    for (size_t k = 0; k < n; ++k) sum += line[k] * twiddle[(f * k) % n];
    scratch[f] = sum;
  }
  line.swap(scratch);
}

int64_t ReadScalarInt(const KernelContext& ctx, size_t i, const char* what) {
  const std::vector<int64_t> v = ReadIntParameter(ctx.node(), ctx.Input(i), what);
  if (v.size() != 1) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " must be a scalar");
  return v[0];
}

void CheckSignal(const KernelContext& ctx, const Tensor& x) {
  const Shape& s = x.shape();
  if (s.rank() < 2 || (s[s.rank() - 1] != 1 && s[s.rank() - 1] != 2))
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": signal must be [batch, ..., 1 or 2], got ",
         s.ToString());
  if (x.type() != DataType::kFloat && x.type() != DataType::kDouble)
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(x.type()));
}

template <typename Fn>
void VisitFloat(DataType type, Fn&& fn) {
  if (type == DataType::kFloat) fn.template operator()<float>();
  else fn.template operator()<double>();
}

class Dft : public Kernel {
 public:
  explicit Dft(const KernelInfo& info)
      : axis_is_input_(info.node().opset >= 20),
        axis_attribute_(info.node().GetInt("axis", 1)),
        inverse_(info.node().GetInt("inverse", 0) != 0),
        onesided_(info.node().GetInt("onesided", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    CheckSignal(ctx, x);
    const Shape& s = x.shape();
    const int64_t rank = static_cast<int64_t>(s.rank());
    int64_t axis = axis_attribute_;
    if (axis_is_input_) axis = ctx.OptionalInput(2) ? ReadScalarInt(ctx, 2, "axis") : -2;
    axis = NormalizeAxis(axis, rank);
    if (axis == 0 || axis == rank - 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", axis, " is not a signal axis of ",
           s.ToString());
    const auto a = static_cast<size_t>(axis);
    const int64_t n = s[a];
    const int64_t length = ctx.OptionalInput(1) && ctx.OptionalInput(1)->NumElements() > 0
                               ? ReadScalarInt(ctx, 1, "dft_length")
                               : n;
    if (length <= 0) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": dft_length must be > 0");
    const int64_t bins = onesided_ ? length / 2 + 1 : length;
    Shape out_shape = s;
    out_shape[a] = bins;
    out_shape[s.rank() - 1] = 2;
    Tensor& y = ctx.Output(0, x.type(), out_shape);
    const int64_t outer = s.SizeTo(a), inner = s.SizeFrom(a + 1) / s[s.rank() - 1];
    const int64_t components = s[s.rank() - 1];
    VisitFloat(x.type(), [&]<typename T>() {
      const T* xd = x.Data<T>();
      T* yd = y.Data<T>();
      ctx.thread_pool().ParallelFor(outer * inner, 1, [&](int64_t begin, int64_t end) {
        std::vector<Complex> line, scratch;
        for (int64_t row = begin; row < end; ++row) {
          const int64_t o = row / inner, j = row % inner;
          line.assign(static_cast<size_t>(length), Complex{});
          for (int64_t k = 0; k < std::min(n, length); ++k) {
            const T* e = xd + ((o * n + k) * inner + j) * components;
            line[static_cast<size_t>(k)] = Complex(e[0], components == 2 ? e[1] : 0);
          }
          Transform(line, inverse_, scratch);
          const double scale = inverse_ ? 1.0 / static_cast<double>(length) : 1.0;
          for (int64_t f = 0; f < bins; ++f) {
            T* out = yd + ((o * bins + f) * inner + j) * 2;
            out[0] = static_cast<T>(line[static_cast<size_t>(f)].real() * scale);
            out[1] = static_cast<T>(line[static_cast<size_t>(f)].imag() * scale);
          }
        }
      });
    });
  }

 private:
  bool axis_is_input_;
  int64_t axis_attribute_;
  bool inverse_;
  bool onesided_;
};

// STFT: frames of frame_length samples every frame_step samples, each multiplied by the window and
// transformed. Output [batch, frames, bins, 2].
class Stft : public Kernel {
 public:
  explicit Stft(const KernelInfo& info) : onesided_(info.node().GetInt("onesided", 1) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    CheckSignal(ctx, x);
    if (x.shape().rank() != 3)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": signal must be [batch, length, 1 or 2]");
    const int64_t batch = x.shape()[0], signal_length = x.shape()[1], components = x.shape()[2];
    const int64_t step = ReadScalarInt(ctx, 1, "frame_step");
    const Tensor* window = ctx.OptionalInput(2);
    const Tensor* frame_length_input = ctx.OptionalInput(3);
    const int64_t frame_length = frame_length_input ? ReadScalarInt(ctx, 3, "frame_length")
                                 : window           ? window->NumElements()
                                                    : 0;
    if (step <= 0 || frame_length <= 0 || frame_length > signal_length ||
        (window && window->NumElements() != frame_length))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": invalid frame_step ", step, " / frame_length ",
           frame_length, " for a signal of length ", signal_length);
    const int64_t frames = (signal_length - frame_length) / step + 1;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    Tensor& y = ctx.Output(0, x.type(), Shape{batch, frames, bins, 2});
    VisitFloat(x.type(), [&]<typename T>() {
      const T* xd = x.Data<T>();
      const T* wd = window ? window->Data<T>() : nullptr;
      T* yd = y.Data<T>();
      ctx.thread_pool().ParallelFor(batch * frames, 1, [&](int64_t begin, int64_t end) {
        std::vector<Complex> line, scratch;
        for (int64_t bf = begin; bf < end; ++bf) {
          const int64_t b = bf / frames, f = bf % frames;
          line.resize(static_cast<size_t>(frame_length));
          for (int64_t k = 0; k < frame_length; ++k) {
            const T* e = xd + (b * signal_length + f * step + k) * components;
            const double w = wd ? static_cast<double>(wd[k]) : 1.0;
            line[static_cast<size_t>(k)] = Complex(e[0] * w, components == 2 ? e[1] * w : 0);
          }
          Transform(line, false, scratch);
          T* out = yd + bf * bins * 2;
          for (int64_t i = 0; i < bins; ++i) {
            out[2 * i] = static_cast<T>(line[static_cast<size_t>(i)].real());
            out[2 * i + 1] = static_cast<T>(line[static_cast<size_t>(i)].imag());
          }
        }
      });
    });
  }

 private:
  bool onesided_;
};

}  // namespace

void RegisterDftKernels(KernelRegistry& registry) {
  KernelDef dft;
  dft.op_type = "DFT";
  dft.since_version = 17;
  dft.host_inputs = {1, 2};
  dft.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};  // 16-bit floats: the float-compute adapter
  registry.Register<Dft>(std::move(dft));

  KernelDef stft;
  stft.op_type = "STFT";
  stft.since_version = 17;
  stft.host_inputs = {1, 3};
  stft.input_types = {{0, {DataType::kFloat, DataType::kDouble}}, {2, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Stft>(std::move(stft));
}

}  // namespace tessera::cpu
