// LRN against the naive window sum over channels (even size, so the window is asymmetric).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

TEST(LrnOpTest, MatchesNaiveWindowSum) {
  const int64_t n = 2, c = 5, hw = 6, size = 4;
  const float alpha = 0.02f, beta = 0.6f, bias = 1.5f;
  Tensor x = RandomTensor(DataType::kFloat, {n, c, 2, 3}, 5, -2, 2);
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const float* xd = x.Data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < hw; ++s) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, ch - 1); k <= std::min<int64_t>(c - 1, ch + 2); ++k)
          sq += xd[(b * c + k) * hw + s] * xd[(b * c + k) * hw + s];
        y.Data<float>()[(b * c + ch) * hw + s] =
            static_cast<float>(xd[(b * c + ch) * hw + s] / std::pow(bias + alpha / size * sq, beta));
      }
  OpTester("LRN", 13)
      .Attr("alpha", alpha)
      .Attr("beta", beta)
      .Attr("bias", bias)
      .Attr("size", size)
      .Input("x", x)
      .Output("y", y)
      .Tolerance(1e-5, 1e-5)
      .Run();
}

}  // namespace
}  // namespace tessera::test
