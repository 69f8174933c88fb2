// Compress (with and without axis, short condition) and ReverseSequence (batch-major and time-major).
#include <gtest/gtest.h>

#include <string>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }
Tensor B(Shape s, const std::vector<bool>& v) { return Tensor::FromVector<bool>(std::move(s), v); }
Tensor I64(Shape s, const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(std::move(s), v); }

TEST(SelectionOpsTest, CompressAlongAxisWithShortCondition) {
  OpTester("Compress", 11)
      .Attr("axis", int64_t{1})
      .Input("x", F({2, 3}, {1, 2, 3, 4, 5, 6}))
      .Input("condition", B({2}, {false, true}))
      .Output("y", F({2, 1}, {2, 5}))
      .Run();
}

TEST(SelectionOpsTest, CompressFlattensWithoutAxis) {
  OpTester("Compress", 11)
      .Input("x", Tensor::FromVector<std::string>({2, 2}, {"a", "b", "c", "d"}))
      .Input("condition", B({4}, {true, false, false, true}))
      .Output("y", Tensor::FromVector<std::string>({2}, {"a", "d"}))
      .Run({"cpu"});
}

TEST(SelectionOpsTest, ReverseSequenceTimeMajor) {
  // [time 3, batch 2, 1]: batch 0 reverses 3 steps, batch 1 reverses 2.
  OpTester("ReverseSequence", 10)
      .Input("x", F({3, 2, 1}, {0, 1, 2, 3, 4, 5}))
      .Input("lens", I64({2}, {3, 2}))
      .Output("y", F({3, 2, 1}, {4, 3, 2, 1, 0, 5}))
      .Run();
}

TEST(SelectionOpsTest, ReverseSequenceBatchMajor) {
  OpTester("ReverseSequence", 10)
      .Attr("batch_axis", int64_t{0})
      .Attr("time_axis", int64_t{1})
      .Input("x", F({2, 3}, {0, 1, 2, 3, 4, 5}))
      .Input("lens", I64({2}, {1, 3}))
      .Output("y", F({2, 3}, {0, 1, 2, 5, 4, 3}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
