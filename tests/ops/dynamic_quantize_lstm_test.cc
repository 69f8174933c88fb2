// com.microsoft DynamicQuantizeLSTM against a reference written here from its definition as ONNX Runtime runs
// it: X (all steps) and, at every step, the hidden state quantized to uint8 by DynamicQuantizeLinear's rule, the
// int32 products with the 8-bit W [D, input, 4h] and R [D, hidden, 4h] scaled back by (activation scale *
// weight scale), then the LSTM cell (gates i, o, f, c; Sigmoid, Tanh, Tanh). The reference computes in float
// like the kernel, so both quantize the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct QuantizedLstmCase {
  int64_t seq = 3, batch = 2, input = 5, hidden = 4;
  bool bidirectional = true;
  DataType weight_type = DataType::kInt8;
  bool per_column = false;  // scales and zero points per direction and column ([D, 4h])
  bool initial_state = false;
};

// DynamicQuantizeLinear of v: (q, scale, zero point).
struct Quantized {
  std::vector<int32_t> q;
  float scale = 0;
  int32_t zero = 0;
};
Quantized Quantize(const std::vector<float>& v) {
  float lo = 0, hi = 0;
  for (float x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  Quantized r;
  r.scale = (hi - lo) / 255.0f;
  r.q.assign(v.size(), 0);
  if (r.scale == 0) return r;
  r.zero = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / r.scale), 0.0f, 255.0f));
  for (size_t i = 0; i < v.size(); ++i)
    r.q[i] = static_cast<int32_t>(std::clamp(std::nearbyint(v[i] / r.scale) + static_cast<float>(r.zero), 0.0f, 255.0f));
  return r;
}

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void RunCase(const QuantizedLstmCase& c) {
  const int64_t d_count = c.bidirectional ? 2 : 1, h = c.hidden, g = 4 * h;
  const Tensor x = RandomTensor(DataType::kFloat, {c.seq, c.batch, c.input}, 1, -1.0, 1.0);
  const bool u8 = c.weight_type == DataType::kUInt8;
  const Tensor w = RandomTensor(c.weight_type, {d_count, c.input, g}, 2, u8 ? 0 : -127, u8 ? 255 : 127);
  const Tensor r = RandomTensor(c.weight_type, {d_count, h, g}, 3, u8 ? 0 : -127, u8 ? 255 : 127);
  const Tensor b = RandomTensor(DataType::kFloat, {d_count, 2 * g}, 4, -0.5, 0.5);
  const Shape param_shape = c.per_column ? Shape{d_count, g} : Shape{d_count};
  const Tensor w_scale = RandomTensor(DataType::kFloat, param_shape, 5, 0.01, 0.03);
  const Tensor r_scale = RandomTensor(DataType::kFloat, param_shape, 6, 0.01, 0.03);
  const Tensor w_zero = u8 ? RandomTensor(DataType::kUInt8, param_shape, 7, 100, 150)
                           : Tensor::FromVector<int8_t>(param_shape, std::vector<int8_t>(param_shape.NumElements(), 0));
  const Tensor r_zero = u8 ? RandomTensor(DataType::kUInt8, param_shape, 8, 100, 150)
                           : Tensor::FromVector<int8_t>(param_shape, std::vector<int8_t>(param_shape.NumElements(), 0));
  const Tensor h0 = RandomTensor(DataType::kFloat, {d_count, c.batch, h}, 9, -0.5, 0.5);
  const Tensor c0 = RandomTensor(DataType::kFloat, {d_count, c.batch, h}, 10, -0.5, 0.5);

  auto weight = [&](const Tensor& t, int64_t i) -> int32_t {
    return u8 ? t.Data<uint8_t>()[i] : t.Data<int8_t>()[i];
  };
  auto param = [&](const Tensor& t, int64_t d, int64_t j) {
    return c.per_column ? d * g + j : d;
  };
  // out[rows x g] = float(sum (q - zero)(W_d - w_zero)) * (scale * w_scale[j]) (+ bias[j])
  auto product = [&](const Quantized& a, int64_t rows, int64_t k, const Tensor& weights, const Tensor& scales,
                     const Tensor& zeros, int64_t d, const float* bias) {
    std::vector<float> out(static_cast<size_t>(rows * g));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < g; ++j) {
        const int64_t p = param(scales, d, j);
        const int32_t zero = u8 ? zeros.Data<uint8_t>()[p] : zeros.Data<int8_t>()[p];
        int32_t sum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += (a.q[static_cast<size_t>(i * k + kk)] - a.zero) * (weight(weights, (d * k + kk) * g + j) - zero);
        float v = static_cast<float>(sum) * (a.scale * scales.Data<float>()[p]);
        if (bias) v = v + bias[j];
        out[static_cast<size_t>(i * g + j)] = v;
      }
    return out;
  };

  std::vector<float> y(static_cast<size_t>(c.seq * d_count * c.batch * h)), y_h(static_cast<size_t>(d_count * c.batch * h)),
      y_c(y_h.size());
  const Quantized xq = Quantize(x.ToVector<float>());
  for (int64_t d = 0; d < d_count; ++d) {
    std::vector<float> bias(static_cast<size_t>(g));
    for (int64_t j = 0; j < g; ++j) bias[j] = b.Data<float>()[d * 2 * g + j] + b.Data<float>()[d * 2 * g + g + j];
    const std::vector<float> proj = product(xq, c.seq * c.batch, c.input, w, w_scale, w_zero, d, bias.data());
    std::vector<float> hidden(static_cast<size_t>(c.batch * h), 0.0f), cell(hidden.size(), 0.0f);
    if (c.initial_state)
      for (size_t i = 0; i < hidden.size(); ++i) {
        hidden[i] = h0.Data<float>()[d * c.batch * h + static_cast<int64_t>(i)];
        cell[i] = c0.Data<float>()[d * c.batch * h + static_cast<int64_t>(i)];
      }
    for (int64_t step = 0; step < c.seq; ++step) {
      const int64_t t = d == 1 ? c.seq - 1 - step : step;
      const std::vector<float> rec = product(Quantize(hidden), c.batch, h, r, r_scale, r_zero, d, nullptr);
      for (int64_t bt = 0; bt < c.batch; ++bt) {
        std::vector<float> gates(static_cast<size_t>(g));
        for (int64_t j = 0; j < g; ++j)
          gates[j] = rec[static_cast<size_t>(bt * g + j)] + proj[static_cast<size_t>((t * c.batch + bt) * g + j)];
        for (int64_t i = 0; i < h; ++i) {
          const float in = Sigmoid(gates[i]), out = Sigmoid(gates[h + i]), forget = Sigmoid(gates[2 * h + i]);
          const float candidate = std::tanh(gates[3 * h + i]);
          float& cs = cell[static_cast<size_t>(bt * h + i)];
          cs = forget * cs + in * candidate;
          hidden[static_cast<size_t>(bt * h + i)] = out * std::tanh(cs);
        }
        for (int64_t i = 0; i < h; ++i)
          y[static_cast<size_t>(((t * d_count + d) * c.batch + bt) * h + i)] = hidden[static_cast<size_t>(bt * h + i)];
      }
    }
    std::copy(hidden.begin(), hidden.end(), y_h.begin() + d * c.batch * h);
    std::copy(cell.begin(), cell.end(), y_c.begin() + d * c.batch * h);
  }

  OpTester t("DynamicQuantizeLSTM", 1, "com.microsoft");
  t.Attr("hidden_size", h);
  if (c.bidirectional) t.Attr("direction", std::string("bidirectional"));
  t.Input("X", x).Input("W", w, true).Input("R", r, true).Input("B", b, true).OmittedInput();
  if (c.initial_state)
    t.Input("initial_h", h0).Input("initial_c", c0);
  else
    t.OmittedInput().OmittedInput();
  t.OmittedInput();
  t.Input("W_scale", w_scale, true).Input("W_zero_point", w_zero, true);
  t.Input("R_scale", r_scale, true).Input("R_zero_point", r_zero, true);
  t.Output("Y", Tensor::FromVector<float>({c.seq, d_count, c.batch, h}, y));
  t.Output("Y_h", Tensor::FromVector<float>({d_count, c.batch, h}, y_h));
  t.Output("Y_c", Tensor::FromVector<float>({d_count, c.batch, h}, y_c));
  t.Tolerance(1e-4, 1e-4).Run();
}

TEST(DynamicQuantizeLstmTest, BidirectionalInt8WeightsPerDirectionScales) { RunCase({}); }

TEST(DynamicQuantizeLstmTest, ForwardUint8WeightsWithZeroPointsPerColumnAndInitialState) {
  RunCase({.seq = 4, .batch = 3, .input = 6, .hidden = 5, .bidirectional = false,
           .weight_type = DataType::kUInt8, .per_column = true, .initial_state = true});
}

TEST(DynamicQuantizeLstmTest, WeightsInOnnxLstmLayoutAreRefusedNamingTheInput) {
  // ONNX LSTM's W layout [D, 4h, input] instead of [D, input, 4h].
  OpTester t("DynamicQuantizeLSTM", 1, "com.microsoft");
  t.Attr("hidden_size", int64_t{4});
  t.Input("X", RandomTensor(DataType::kFloat, {2, 1, 5}, 1));
  t.Input("W", RandomTensor(DataType::kInt8, {1, 16, 5}, 2), true).Input("R", RandomTensor(DataType::kInt8, {1, 4, 16}, 3), true);
  t.OmittedInput().OmittedInput().OmittedInput().OmittedInput().OmittedInput();
  t.Input("W_scale", Tensor::FromVector<float>({1}, {0.1f}), true)
      .Input("W_zero_point", Tensor::FromVector<int8_t>({1}, {0}), true);
  t.Input("R_scale", Tensor::FromVector<float>({1}, {0.1f}), true)
      .Input("R_zero_point", Tensor::FromVector<int8_t>({1}, {0}), true);
  t.Output("Y", Tensor::FromVector<float>({2, 1, 1, 4}, std::vector<float>(8))).ExpectFailure("input W has shape").Run();
}

}  // namespace
}  // namespace tessera::test
