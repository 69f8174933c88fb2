// MaxUnpool: scatter at MaxPool indices, default output shape and a larger output_shape.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }
Tensor I64(Shape s, const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(std::move(s), v); }

TEST(MaxUnpoolOpTest, DefaultAndGivenOutputShape) {
  Tensor x = F({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor i = I64({1, 1, 2, 2}, {5, 7, 13, 15});
  OpTester("MaxUnpool", 11)
      .Attr("kernel_shape", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2})
      .Input("x", x)
      .Input("i", i)
      .Output("y", F({1, 1, 4, 4}, {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}))
      .Run();
  OpTester("MaxUnpool", 11)
      .Attr("kernel_shape", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2})
      .Input("x", x)
      .Input("i", i)
      .Input("shape", I64({4}, {1, 1, 4, 5}))
      .Output("y", F({1, 1, 4, 5}, {0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
