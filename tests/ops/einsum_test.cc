// Einsum: batched matmul against a naive triple loop, diagonals, implicit output, ellipsis broadcast.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }

TEST(EinsumOpTest, BatchMatMulMatchesNaive) {
  Tensor a = RandomTensor(DataType::kFloat, {2, 3, 4}, 1), b = RandomTensor(DataType::kFloat, {2, 4, 5}, 2);
  std::vector<float> expected;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 5; ++k) {
        double sum = 0;
        for (int64_t j = 0; j < 4; ++j) sum += a.Data<float>()[(n * 3 + i) * 4 + j] * b.Data<float>()[(n * 4 + j) * 5 + k];
        expected.push_back(static_cast<float>(sum));
      }
  OpTester("Einsum", 12)
      .Attr("equation", std::string("bij,bjk->bik"))
      .Input("a", a)
      .Input("b", b)
      .Output("y", F({2, 3, 5}, expected))
      .Tolerance(1e-5, 1e-5)
      .Run();
}

TEST(EinsumOpTest, DiagonalAndTrace) {
  Tensor x = F({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  OpTester("Einsum", 12).Attr("equation", std::string("ii->i")).Input("x", x).Output("y", F({3}, {1, 5, 9})).Run();
  OpTester("Einsum", 12).Attr("equation", std::string("ii")).Input("x", x).Output("y", F({}, {15})).Run();
}

TEST(EinsumOpTest, ImplicitOutputSortsLettersUsedOnce) {
  // "ji,jk" -> "ik": a transposed matmul.
  OpTester("Einsum", 12)
      .Attr("equation", std::string("ji,jk"))
      .Input("a", F({2, 2}, {1, 2, 3, 4}))
      .Input("b", F({2, 1}, {1, 10}))
      .Output("y", F({2, 1}, {31, 42}))
      .Run();
}

TEST(EinsumOpTest, EllipsisBroadcastsLeadingDims) {
  OpTester("Einsum", 12)
      .Attr("equation", std::string("...ij,...j->...i"))
      .Input("a", F({2, 1, 2}, {1, 2, 3, 4}))
      .Input("v", F({1, 2}, {1, -1}))
      .Output("y", F({2, 1}, {-1, -1}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
