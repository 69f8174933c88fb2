// CumSum: every exclusive/reverse combination along a middle axis against a naive running sum.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor NaiveCumSum(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const float* xd = x.Data<float>();
  float* yd = y.Data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j)
      for (int64_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          const bool in_range = reverse ? (exclusive ? k > i : k >= i) : (exclusive ? k < i : k <= i);
          if (in_range) sum += xd[(o * n + k) * inner + j];
        }
        yd[(o * n + i) * inner + j] = static_cast<float>(sum);
      }
  return y;
}

TEST(CumSumOpTest, ExclusiveAndReverseAlongMiddleAxis) {
  Tensor x = RandomTensor(DataType::kFloat, {3, 5, 4}, 11);
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      OpTester("CumSum", 14)
          .Attr("exclusive", int64_t{exclusive})
          .Attr("reverse", int64_t{reverse})
          .Input("x", x)
          .Input("axis", Tensor::FromVector<int32_t>({}, {-2}))
          .Output("y", NaiveCumSum(x, 3, 5, 4, exclusive, reverse))
          .Tolerance(1e-5, 1e-5)
          .Run();
}

TEST(CumSumOpTest, Int64FirstAxis) {
  OpTester("CumSum", 11)
      .Input("x", Tensor::FromVector<int64_t>({3, 2}, {1, 2, 3, 4, 5, 6}))
      .Input("axis", Tensor::FromVector<int64_t>({}, {0}))
      .Output("y", Tensor::FromVector<int64_t>({3, 2}, {1, 2, 4, 6, 9, 12}))
      .Run();
}

// CumProd (opset 26): the spec's example in every mode, a middle axis in float, wrapping int32 products.
TEST(CumSumOpTest, CumProdModes) {
  const Tensor x = Tensor::FromVector<float>({3}, {1, 2, 3});
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<float>>> cases = {
      {{0, 0}, {1, 2, 6}}, {{1, 0}, {1, 1, 2}}, {{0, 1}, {6, 6, 3}}, {{1, 1}, {6, 3, 1}}};
  for (const auto& [modes, expected] : cases)
    OpTester("CumProd", 26)
        .Attr("exclusive", modes.first)
        .Attr("reverse", modes.second)
        .Input("x", x)
        .Input("axis", Tensor::FromVector<int64_t>({}, {0}))
        .Output("y", Tensor::FromVector<float>({3}, expected))
        .Run();
  OpTester("CumProd", 26)
      .Input("x", Tensor::FromVector<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, 2, 0.5f, 4, 2, 0}))
      .Input("axis", Tensor::FromVector<int32_t>({}, {1}))
      .Output("y", Tensor::FromVector<float>({2, 3, 2}, {1, 2, 3, 8, 15, 48, -1, 2, -0.5f, 8, -1, 0}))
      .Run();
  OpTester("CumProd", 26)
      .Input("x", Tensor::FromVector<int32_t>({3}, {65536, 65536, 3}))
      .Input("axis", Tensor::FromVector<int64_t>({}, {0}))
      .Output("y", Tensor::FromVector<int32_t>({3}, {65536, 0, 0}))  // 2^32 wraps to 0
      .Run();
  OpTester before("CumProd", 25);  // not an op before opset 26
  before.Input("x", x).Input("axis", Tensor::FromVector<int64_t>({}, {0})).OutputName("y").ExpectFailure("CumProd");
  before.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
