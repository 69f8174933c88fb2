// RoiAlign: on a linear ramp image bilinear sampling is exact, so every average equals the ramp at
// the bin centre (half_pixel mode) or shifted by half a pixel (output_half_pixel, opset 10).
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

TEST(RoiAlignOpTest, AveragesOnLinearRamp) {
  std::vector<float> ramp;  // value = x + 10 y on an 8x8 image
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) ramp.push_back(static_cast<float>(x + 10 * y));
  Tensor img = Tensor::FromVector<float>({1, 1, 8, 8}, ramp);
  Tensor rois = Tensor::FromVector<float>({1, 4}, {1, 2, 5, 6});  // x1, y1, x2, y2
  Tensor batch = Tensor::FromVector<int64_t>({1}, {0});
  // Bins of 2x2 pixels; centres at x = 2,4 and y = 3,5 minus 0.5 (half_pixel).
  OpTester("RoiAlign", 16)
      .Attr("output_height", int64_t{2})
      .Attr("output_width", int64_t{2})
      .Attr("sampling_ratio", int64_t{2})
      .Input("x", img).Input("rois", rois).Input("batch", batch)
      .Output("y", Tensor::FromVector<float>({1, 1, 2, 2}, {26.5f, 28.5f, 46.5f, 48.5f}))
      .Tolerance(1e-4, 1e-5)
      .Run();
  OpTester("RoiAlign", 10)
      .Attr("output_height", int64_t{2})
      .Attr("output_width", int64_t{2})
      .Attr("sampling_ratio", int64_t{2})
      .Input("x", img).Input("rois", rois).Input("batch", batch)
      .Output("y", Tensor::FromVector<float>({1, 1, 2, 2}, {32, 34, 52, 54}))
      .Tolerance(1e-4, 1e-5)
      .Run();
}

}  // namespace
}  // namespace tessera::test
