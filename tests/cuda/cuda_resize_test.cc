// Resize and Upsample on the CUDA EP against the CPU EP: every interpolation mode, the coordinate transformations,
// nearest modes, scales and sizes, `axes`, antialiasing, tf_crop_and_resize's extrapolation, float16, the 5-D
// blocked form the nchwc_layout pass writes, and one session resizing several input shapes (a taps table per
// shape). Each case also checks that the node runs on the CUDA EP.
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaResizeTest = CudaTest;

struct ResizeCase {
  std::string name;
  int opset;
  Shape x;
  std::vector<float> scales;    // empty: sizes
  std::vector<int64_t> sizes;   // empty: scales
  std::vector<float> roi;       // tf_crop_and_resize only
  std::vector<int64_t> axes;    // opset 18+; empty: all
  std::string mode, coordinates, nearest;
  int64_t antialias = 0, exclude_outside = 0;
  float extrapolation = 0.0f;
};

void Build(OpTester& t, const ResizeCase& c, const Tensor& x) {
  t.Attr("mode", c.mode).Attr("coordinate_transformation_mode", c.coordinates);
  if (!c.nearest.empty()) t.Attr("nearest_mode", c.nearest);
  if (c.antialias) t.Attr("antialias", c.antialias);
  if (c.exclude_outside) t.Attr("exclude_outside", c.exclude_outside);
  if (c.coordinates == "tf_crop_and_resize") t.Attr("extrapolation_value", c.extrapolation);
  if (!c.axes.empty()) t.Attr("axes", c.axes);
  t.Input("X", x);
  if (c.roi.empty())
    t.OmittedInput();
  else
    t.Input("roi", Tensor::FromVector<float>({static_cast<int64_t>(c.roi.size())}, c.roi), true);
  if (!c.scales.empty()) {
    t.Input("scales", Tensor::FromVector<float>({static_cast<int64_t>(c.scales.size())}, c.scales), true);
  } else {
    t.OmittedInput();
    t.Input("sizes", Int64s(c.sizes), true);
  }
}

TEST_F(CudaResizeTest, EveryModeMatchesTheCpu) {
  const std::vector<ResizeCase> cases = {
      {"nearest 2x (YOLO upsampling)", 13, {1, 3, 5, 7}, {1, 1, 2, 2}, {}, {}, {}, "nearest", "asymmetric", "floor"},
      {"nearest down, round_prefer_ceil", 13, {2, 3, 9, 8}, {}, {2, 3, 4, 5}, {}, {}, "nearest", "half_pixel",
       "round_prefer_ceil"},
      {"nearest fractional, round_prefer_floor", 13, {1, 2, 6, 7}, {1, 1, 1.7f, 0.6f}, {}, {}, {}, "nearest",
       "tf_half_pixel_for_nn", "round_prefer_floor"},
      {"linear half_pixel", 13, {1, 4, 6, 9}, {1, 1, 1.7f, 0.6f}, {}, {}, {}, "linear", "half_pixel", ""},
      {"linear align_corners sizes", 13, {1, 2, 5, 5}, {}, {1, 2, 8, 3}, {}, {}, "linear", "align_corners", ""},
      {"linear pytorch_half_pixel to one row", 13, {1, 2, 5, 6}, {}, {1, 2, 1, 9}, {}, {}, "linear",
       "pytorch_half_pixel", ""},
      {"cubic exclude_outside", 13, {1, 2, 7, 6}, {1, 1, 1.5f, 2.25f}, {}, {}, {}, "cubic", "half_pixel", "", 0, 1},
      {"linear antialias down", 18, {1, 2, 16, 20}, {1, 1, 0.3f, 0.45f}, {}, {}, {}, "linear", "half_pixel", "", 1},
      {"cubic antialias down", 18, {1, 1, 12, 12}, {1, 1, 0.5f, 0.4f}, {}, {}, {}, "cubic", "half_pixel", "", 1},
      {"linear 3-D", 13, {2, 5, 8}, {1, 2.5f, 0.5f}, {}, {}, {}, "linear", "asymmetric", ""},
      {"tf_crop_and_resize extrapolates", 13, {1, 1, 6, 6}, {}, {1, 1, 5, 4}, {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f},
       {}, "linear", "tf_crop_and_resize", "", 0, 0, 3.5f},
      {"axes over H and W", 18, {1, 3, 4, 6}, {2.0f, 0.5f}, {}, {}, {2, 3}, "nearest", "half_pixel",
       "round_prefer_floor"},
      {"5-D blocked NHWC (nchwc_layout)", 13, {1, 1, 4, 5, 24}, {1, 1, 2, 2, 1}, {}, {}, {}, "nearest", "asymmetric",
       "floor"},
      {"5-D blocked linear", 13, {1, 2, 3, 4, 16}, {1, 1, 2, 2, 1}, {}, {}, {}, "linear", "half_pixel", ""},
  };
  for (const ResizeCase& c : cases) {
    SCOPED_TRACE(c.name);
    OpTester t("Resize", c.opset);
    Build(t, c, RandomTensor(kF32, c.x, 7, -2, 2));
    t.OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "Resize", c.opset, {RandomTensor(kF16, c.x, 8, -2, 2)},
        [&](OpTester& o, const std::vector<Tensor>& in) { Build(o, c, in[0]); }, 3e-3, 3e-3);
  }
}

TEST_F(CudaResizeTest, UpsampleOpset9AndResizeOpset10) {
  for (const char* op : {"Upsample", "Resize"}) {
    SCOPED_TRACE(op);
    OpTester t(op, std::string(op) == "Upsample" ? 9 : 10);
    t.Attr("mode", std::string("nearest"));
    t.Input("X", RandomTensor(kF32, {1, 2, 3, 5}, 9)).Input("scales", Tensor::FromVector<float>({4}, {1, 1, 2, 3}), true);
    t.OutputName("Y");
    CompareOnCuda(t);
  }
}

// One session, input shapes A, B, A: the kernel keeps a taps table per shape and must pick the right one.
TEST_F(CudaResizeTest, OneSessionResizesSeveralShapes) {
  GraphBuilder b(13);
  b.Input("x", {1, 2, -1, -1}).Output("y");
  b.FloatInitializer("scales", {4}, {1, 1, 1.5f, 2});
  b.Node("Resize", {"x", "", "scales"}, {"y"}).StringAttribute("mode", "linear");
  const std::string model = b.Serialize();
  ExpectAllOnCuda(model);
  SessionOptions cuda;
  cuda.AddProvider(kCudaEpName, {});
  Session on_cuda(TestEnv(), model.data(), model.size(), cuda);
  Session on_cpu(TestEnv(), model.data(), model.size(), SessionOptions{});
  unsigned seed = 20;
  for (const Shape& shape : {Shape{1, 2, 4, 6}, Shape{1, 2, 7, 3}, Shape{1, 2, 4, 6}}) {
    SCOPED_TRACE(shape.ToString());
    const Session::NamedValues feeds = {{"x", Value(RandomTensor(kF32, shape, seed++))}};
    const Tensor got = ToHost(on_cuda.Run(feeds)[0].tensor());
    const Tensor want = on_cpu.Run(feeds)[0].tensor();
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.NumElements(); ++i) EXPECT_NEAR(got.Data<float>()[i], want.Data<float>()[i], 1e-5);
  }
}

}  // namespace
}  // namespace tessera::test
