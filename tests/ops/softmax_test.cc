// Softmax, LogSoftmax and Hardmax with the pre-13 (coerce to 2-D) and 13+ (single axis) semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

// Normalizes x viewed as [outer, n, inner] along n.
Tensor NaiveSoftmax(const Tensor& x, Kind kind, int64_t outer, int64_t n, int64_t inner) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const float* xd = x.Data<float>();
  float* yd = y.Data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return o * n * inner + i * inner + j; };
      double max = -1e300, sum = 0;
      int64_t arg = 0;
      for (int64_t i = 0; i < n; ++i)
        if (xd[at(i)] > max) max = xd[at(i)], arg = i;
      for (int64_t i = 0; i < n; ++i) sum += std::exp(xd[at(i)] - max);
      for (int64_t i = 0; i < n; ++i) {
        const double v = kind == Kind::kSoftmax      ? std::exp(xd[at(i)] - max) / sum
                         : kind == Kind::kLogSoftmax ? xd[at(i)] - max - std::log(sum)
                                                     : (i == arg ? 1.0 : 0.0);
        yd[at(i)] = float(v);
      }
    }
  return y;
}

const char* OpName(Kind kind) {
  return kind == Kind::kSoftmax ? "Softmax" : kind == Kind::kLogSoftmax ? "LogSoftmax" : "Hardmax";
}

void Check(Kind kind, int opset, int64_t axis, int64_t outer, int64_t n, int64_t inner, const Shape& shape) {
  Tensor x = RandomTensor(DataType::kFloat, shape, 4, -3, 3);
  OpTester t(OpName(kind), opset);
  t.Attr("axis", axis);
  t.Input("input", x).Output("output", NaiveSoftmax(x, kind, outer, n, inner));
  t.Run();
}

TEST(SoftmaxOpTest, Opset13SingleMiddleAxis) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax, Kind::kHardmax}) Check(k, 13, 1, 2, 5, 12, {2, 5, 3, 4});
}

TEST(SoftmaxOpTest, Opset13LastAxis) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax, Kind::kHardmax}) Check(k, 13, -1, 30, 4, 1, {2, 5, 3, 4});
}

TEST(SoftmaxOpTest, Opset11CoercesTo2d) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax, Kind::kHardmax}) Check(k, 11, 1, 2, 60, 1, {2, 5, 3, 4});
}

TEST(SoftmaxOpTest, Opset11DefaultAxisIsOne) {
  Tensor x = RandomTensor(DataType::kFloat, {3, 2, 4}, 8);
  OpTester t("Softmax", 11);
  t.Input("input", x).Output("output", NaiveSoftmax(x, Kind::kSoftmax, 3, 8, 1));
  t.Run();
}

TEST(SoftmaxOpTest, Opset13DefaultAxisIsLast) {
  Tensor x = RandomTensor(DataType::kFloat, {3, 2, 4}, 8);
  OpTester t("LogSoftmax", 13);
  t.Input("input", x).Output("output", NaiveSoftmax(x, Kind::kLogSoftmax, 6, 4, 1));
  t.Run();
}

// Long rows take the vectorized path: full 16-lane chunks plus a remainder (n = 37, 128), large magnitudes.
TEST(SoftmaxOpTest, LongRowsAlongLastAxis) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax}) {
    for (int64_t n : {37, 128}) {
      Tensor x = RandomTensor(DataType::kFloat, {3, n}, 9, -60, 60);
      x.Data<float>()[1] = -1e30f;  // exp underflows to 0 without disturbing the rest
      for (int64_t i = 0; i < n; ++i) x.Data<float>()[2 * n + i] = -1e30f;  // a whole row: LogSoftmax -log(n)
      OpTester t(OpName(k), 13);
      t.Input("input", x).Output("output", NaiveSoftmax(x, k, 3, n, 1));
      t.Run();
    }
  }
}

// Rows shorter than 8 take the short-row path (16 rows at a time, then the rest one by one): a detector's two-class
// scores over thousands of anchors, single-element rows, large magnitudes, a whole row at -1e30.
TEST(SoftmaxOpTest, ManyShortRows) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax}) {
    for (int64_t n : {1, 2, 3, 7}) {
      SCOPED_TRACE(std::string(OpName(k)) + " rows of " + std::to_string(n));
      const int64_t rows = 16 * 300 + 5;
      Tensor x = RandomTensor(DataType::kFloat, {rows, n}, 11, -60, 60);
      x.Data<float>()[3 * n] = -1e30f;
      for (int64_t i = 0; i < n; ++i) x.Data<float>()[5 * n + i] = -1e30f;
      OpTester t(OpName(k), 13);
      t.Input("input", x).Output("output", NaiveSoftmax(x, k, rows, n, 1));
      t.Run();
    }
  }
}

// A middle axis over many columns takes the column path: several runs of 256 columns and a remainder (inner 600),
// several outer blocks, large magnitudes (a detector's distribution head: 16 bins over thousands of anchors).
TEST(SoftmaxOpTest, MiddleAxisOverManyColumns) {
  for (Kind k : {Kind::kSoftmax, Kind::kLogSoftmax}) {
    Tensor x = RandomTensor(DataType::kFloat, {2, 16, 4, 150}, 10, -40, 40);
    x.Data<float>()[7] = -1e30f;
    for (int64_t i = 0; i < 16; ++i) x.Data<float>()[i * 600 + 9] = -1e30f;  // a whole column along the axis
    OpTester t(OpName(k), 13);
    t.Attr("axis", int64_t{1});
    t.Input("input", x).Output("output", NaiveSoftmax(x, k, 2, 16, 600));
    t.Run();
  }
}

TEST(SoftmaxOpTest, BadAxisFails) {
  OpTester t("Softmax", 13);
  t.Attr("axis", int64_t{3});
  t.Input("input", RandomTensor(DataType::kFloat, {2, 3}, 1)).OutputName("output").ExpectFailure("axis");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
