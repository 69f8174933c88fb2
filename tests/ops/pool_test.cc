// Pooling kernels against naive references on random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct PoolCase {
  PoolCase(Shape x_shape, std::vector<int64_t> kernel_shape) : x(std::move(x_shape)), kernel(std::move(kernel_shape)) {}
  Shape x;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begin..., end...
  bool ceil_mode = false, count_include_pad = false;
};

// 2-D only (the test reference stays simple); H and W windows resolved per the ONNX formulas.
struct Pooled {
  Tensor y, indices;
};

Pooled NaivePool2d(const PoolCase& c, const Tensor& x, bool max, bool column_major = false) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], w = c.x[3];
  std::vector<int64_t> st = c.strides.empty() ? std::vector<int64_t>{1, 1} : c.strides;
  std::vector<int64_t> dl = c.dilations.empty() ? std::vector<int64_t>{1, 1} : c.dilations;
  std::vector<int64_t> p = c.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : c.pads;
  int64_t out[2];
  const int64_t in[2] = {h, w};
  for (int d = 0; d < 2; ++d) {
    const double span = double(in[d] + p[d] + p[d + 2] - (c.kernel[d] - 1) * dl[d] - 1) / double(st[d]);
    out[d] = int64_t(c.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (c.ceil_mode && (out[d] - 1) * st[d] >= in[d] + p[d]) --out[d];
  }
  Pooled r{Tensor::Allocate(DataType::kFloat, {n, ch, out[0], out[1]}),
           Tensor::Allocate(DataType::kInt64, {n, ch, out[0], out[1]})};
  const float* xd = x.Data<float>();
  int64_t o = 0;
  for (int64_t plane = 0; plane < n * ch; ++plane)
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j, ++o) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t count = 0, padded = 0, best_index = 0;
        for (int64_t ki = 0; ki < c.kernel[0]; ++ki)
          for (int64_t kj = 0; kj < c.kernel[1]; ++kj) {
            const int64_t pi = i * st[0] - p[0] + ki * dl[0], pj = j * st[1] - p[1] + kj * dl[1];
            if (pi < h + p[2] && pj < w + p[3]) ++padded;
            if (pi < 0 || pi >= h || pj < 0 || pj >= w) continue;
            const double v = xd[plane * h * w + pi * w + pj];
            sum += v, ++count;
            if (v > best) best = v, best_index = plane * h * w + (column_major ? pj * h + pi : pi * w + pj);
          }
        r.y.Data<float>()[o] = float(max ? best : sum / double(c.count_include_pad ? padded : count));
        r.indices.Data<int64_t>()[o] = best_index;
      }
  return r;
}

void SetWindowAttrs(OpTester& t, const PoolCase& c) {
  t.Attr("kernel_shape", c.kernel);
  if (!c.strides.empty()) t.Attr("strides", c.strides);
  if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (c.ceil_mode) t.Attr("ceil_mode", int64_t{1});
}

void CheckMaxPool(const PoolCase& c, bool with_indices, bool column_major = false) {
  Tensor x = RandomTensor(DataType::kFloat, c.x, 5);
  Pooled expected = NaivePool2d(c, x, true, column_major);
  OpTester t("MaxPool", 12);
  SetWindowAttrs(t, c);
  if (column_major) t.Attr("storage_order", int64_t{1});
  t.Input("X", x).Output("Y", expected.y);
  if (with_indices) t.Output("Indices", expected.indices);
  t.Run();
}

void CheckAveragePool(const PoolCase& c) {
  Tensor x = RandomTensor(DataType::kFloat, c.x, 6);
  OpTester t("AveragePool", 11);
  SetWindowAttrs(t, c);
  if (c.count_include_pad) t.Attr("count_include_pad", int64_t{1});
  t.Input("X", x).Output("Y", NaivePool2d(c, x, false).y);
  t.Run();
}

TEST(PoolOpTest, MaxPoolResNetStem) {
  PoolCase c({2, 3, 12, 12}, {3, 3});
  c.strides = {2, 2}, c.pads = {1, 1, 1, 1};
  CheckMaxPool(c, false);
}

TEST(PoolOpTest, MaxPoolCeilDilationsIndices) {
  PoolCase c({1, 2, 9, 8}, {2, 3});
  c.strides = {2, 2}, c.dilations = {2, 1}, c.ceil_mode = true, c.pads = {0, 1, 1, 0};
  CheckMaxPool(c, true);
}

TEST(PoolOpTest, MaxPoolColumnMajorIndices) {
  PoolCase c({2, 2, 5, 7}, {2, 2});
  c.strides = {1, 2};
  CheckMaxPool(c, true, true);
}

TEST(PoolOpTest, AveragePoolExcludePadAsymmetric) {
  PoolCase c({2, 3, 7, 6}, {3, 2});
  c.strides = {2, 1}, c.pads = {1, 0, 2, 1};
  CheckAveragePool(c);
}

TEST(PoolOpTest, AveragePoolIncludePadCeil) {
  PoolCase c({1, 4, 6, 7}, {3, 3});
  c.strides = {2, 2}, c.pads = {1, 1, 1, 1}, c.ceil_mode = true, c.count_include_pad = true;
  CheckAveragePool(c);
}

TEST(PoolOpTest, MaxPool1dSameUpper) {
  Tensor x = Tensor::FromVector<float>({1, 1, 5}, {1, 5, 2, 4, 3});
  OpTester t("MaxPool", 12);
  t.Attr("kernel_shape", std::vector<int64_t>{2}).Attr("strides", std::vector<int64_t>{2}).Attr("auto_pad", std::string("SAME_UPPER"));
  t.Input("X", x).Output("Y", Tensor::FromVector<float>({1, 1, 3}, {5, 4, 3}));
  t.Run();
}

TEST(PoolOpTest, AveragePool3d) {
  Tensor x = RandomTensor(DataType::kFloat, {1, 2, 3, 4, 4}, 9);
  const float* xd = x.Data<float>();
  std::vector<float> expected;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        double sum = 0;
        for (int64_t d = 0; d < 3; ++d)
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t b = 0; b < 2; ++b) sum += xd[((c * 3 + d) * 4 + i * 2 + a) * 4 + j * 2 + b];
        expected.push_back(float(sum / 12));
      }
  OpTester t("AveragePool", 11);
  t.Attr("kernel_shape", std::vector<int64_t>{3, 2, 2}).Attr("strides", std::vector<int64_t>{1, 2, 2});
  t.Input("X", x).Output("Y", Tensor::FromVector<float>({1, 2, 1, 2, 2}, expected));
  t.Run();
}

void CheckGlobal(const char* op, bool max) {
  Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4, 5}, 3);
  std::vector<float> expected;
  for (int64_t p = 0; p < 6; ++p) {
    double acc = max ? -1e30 : 0;
    for (int64_t i = 0; i < 20; ++i) {
      const double v = x.Data<float>()[p * 20 + i];
      acc = max ? std::max(acc, v) : acc + v / 20;
    }
    expected.push_back(float(acc));
  }
  OpTester t(op, 17);
  t.Input("X", x).Output("Y", Tensor::FromVector<float>({2, 3, 1, 1}, expected));
  t.Run();
}

TEST(PoolOpTest, GlobalAveragePool) { CheckGlobal("GlobalAveragePool", false); }
TEST(PoolOpTest, GlobalMaxPool) { CheckGlobal("GlobalMaxPool", true); }

TEST(PoolOpTest, KernelShapeMismatchFails) {
  OpTester t("MaxPool", 12);
  t.Attr("kernel_shape", std::vector<int64_t>{2});
  t.Input("X", RandomTensor(DataType::kFloat, {1, 1, 4, 4}, 1)).OutputName("Y").ExpectFailure("kernel_shape");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
