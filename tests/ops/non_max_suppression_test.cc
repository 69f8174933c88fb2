// NonMaxSuppression: IoU suppression, score threshold, per-class limit, flipped corners.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }
Tensor I64(Shape s, const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(std::move(s), v); }

TEST(NonMaxSuppressionOpTest, SuppressesOverlapsAndLowScores) {
  // Box 1 overlaps box 0 heavily (IoU 0.81); box 2 is separate; box 3 scores below the threshold.
  // Box 0 is given with flipped corners.
  Tensor boxes = F({1, 4, 4}, {1, 1, 0, 0, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6, 0, 10, 1, 11});
  Tensor scores = F({1, 1, 4}, {0.9f, 0.95f, 0.5f, 0.1f});
  OpTester("NonMaxSuppression", 11)
      .Input("boxes", boxes)
      .Input("scores", scores)
      .Input("max", I64({1}, {10}))
      .Input("iou", F({1}, {0.5f}))
      .Input("score", F({1}, {0.2f}))
      .Output("selected", I64({2, 3}, {0, 0, 1, 0, 0, 2}))
      .Run();
  OpTester("NonMaxSuppression", 11)
      .Input("boxes", boxes)
      .Input("scores", scores)
      .Input("max", I64({1}, {1}))
      .Input("iou", F({1}, {0.5f}))
      .Output("selected", I64({1, 3}, {0, 0, 1}))
      .Run();
}

TEST(NonMaxSuppressionOpTest, CenterPointFormat) {
  OpTester("NonMaxSuppression", 11)
      .Attr("center_point_box", int64_t{1})
      .Input("boxes", F({1, 2, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1}))
      .Input("scores", F({1, 1, 2}, {0.7f, 0.8f}))
      .Input("max", I64({1}, {5}))
      .Input("iou", F({1}, {0.5f}))
      .Output("selected", I64({1, 3}, {0, 0, 1}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
