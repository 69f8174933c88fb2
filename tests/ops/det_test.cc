// Det on a batch of 2x2 and 3x3 matrices (pivoting needed for the second one).
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

TEST(DetOpTest, BatchOfMatrices) {
  OpTester("Det", 11)
      .Input("x", Tensor::FromVector<float>({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}))
      .Output("y", Tensor::FromVector<float>({2}, {-2, -1}))
      .Run();
  OpTester("Det", 11)
      .Input("x", Tensor::FromVector<double>({3, 3}, {0, 2, 1, 1, 1, 1, 2, 0, 3}))
      .Output("y", Tensor::FromVector<double>({}, {-4}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
