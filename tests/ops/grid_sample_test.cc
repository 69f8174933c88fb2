// GridSample: bilinear with zeros padding against a naive reference, nearest and border padding on
// hand-computed points.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }

float NaiveBilinearZeros(const float* img, int64_t h, int64_t w, float gx, float gy) {
  const float x = ((gx + 1) * w - 1) / 2, y = ((gy + 1) * h - 1) / 2;
  const float x0 = std::floor(x), y0 = std::floor(y);
  auto at = [&](float yy, float xx) {
    return (yy < 0 || yy >= h || xx < 0 || xx >= w) ? 0.0f : img[static_cast<int64_t>(yy) * w + static_cast<int64_t>(xx)];
  };
  const float tx = x - x0, ty = y - y0;
  return (1 - ty) * (1 - tx) * at(y0, x0) + (1 - ty) * tx * at(y0, x0 + 1) + ty * (1 - tx) * at(y0 + 1, x0) +
         ty * tx * at(y0 + 1, x0 + 1);
}

TEST(GridSampleOpTest, BilinearZerosMatchesNaive) {
  Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4, 5}, 8);
  Tensor grid = RandomTensor(DataType::kFloat, {2, 3, 6, 2}, 9, -1.3, 1.3);
  Tensor y = Tensor::Allocate(DataType::kFloat, {2, 3, 3, 6});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 18; ++i) {
        const float* g = grid.Data<float>() + (n * 18 + i) * 2;
        y.Data<float>()[(n * 3 + c) * 18 + i] = NaiveBilinearZeros(x.Data<float>() + (n * 3 + c) * 20, 4, 5, g[0], g[1]);
      }
  OpTester("GridSample", 16).Input("x", x).Input("grid", grid).Output("y", y).Tolerance(1e-5, 1e-5).Run();
}

TEST(GridSampleOpTest, NearestAlignCornersAndBorder) {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  OpTester("GridSample", 16)
      .Attr("mode", std::string("nearest"))
      .Attr("align_corners", int64_t{1})
      .Input("x", x)
      .Input("grid", F({1, 1, 2, 2}, {-1, -1, 0.6f, 1}))
      .Output("y", F({1, 1, 1, 2}, {1, 4}))
      .Run();
  // Far outside: border clamps to the corner pixel, zeros gives 0.
  OpTester("GridSample", 16)
      .Attr("padding_mode", std::string("border"))
      .Input("x", x)
      .Input("grid", F({1, 1, 1, 2}, {5, 5}))
      .Output("y", F({1, 1, 1, 1}, {4}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
