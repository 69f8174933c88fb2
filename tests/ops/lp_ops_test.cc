// LpNormalization (p = 1, 2) and LpPool / GlobalLpPool (p = 3, padding, opset-1 float p) against naive sums.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }

TEST(LpOpsTest, LpNormalizationAlongAxis) {
  OpTester("LpNormalization", 1)
      .Attr("axis", int64_t{0})
      .Input("x", F({2, 2}, {3, 1, -4, 0}))
      .Output("y", F({2, 2}, {0.6f, 1, -0.8f, 0}))
      .Run();
  OpTester("LpNormalization", 1)
      .Attr("p", int64_t{1})
      .Input("x", F({1, 3}, {1, -2, 1}))
      .Output("y", F({1, 3}, {0.25f, -0.5f, 0.25f}))
      .Run();
}

TEST(LpOpsTest, LpPoolWithPaddingMatchesNaive) {
  Tensor x = RandomTensor(DataType::kFloat, {1, 2, 3, 4}, 31);
  std::vector<float> expected;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t oy = 0; oy < 2; ++oy)
      for (int64_t ox = 0; ox < 3; ++ox) {  // kernel 2x2, stride 2, pads 1 on each side
        double sum = 0;
        for (int64_t ky = 0; ky < 2; ++ky)
          for (int64_t kx = 0; kx < 2; ++kx) {
            const int64_t y = oy * 2 - 1 + ky, xx = ox * 2 - 1 + kx;
            if (y >= 0 && y < 3 && xx >= 0 && xx < 4) sum += std::pow(std::fabs(x.Data<float>()[(c * 3 + y) * 4 + xx]), 3);
          }
        expected.push_back(static_cast<float>(std::cbrt(sum)));
      }
  OpTester("LpPool", 11)
      .Attr("p", int64_t{3})
      .Attr("kernel_shape", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2})
      .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .Input("x", x)
      .Output("y", F({1, 2, 2, 3}, expected))
      .Tolerance(1e-5, 1e-5)
      .Run();
}

TEST(LpOpsTest, GlobalLpPoolOpset1FloatP) {
  OpTester("GlobalLpPool", 1)
      .Attr("p", 2.0f)
      .Input("x", F({1, 2, 1, 2}, {3, 4, 6, 8}))
      .Output("y", F({1, 2, 1, 1}, {5, 10}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
