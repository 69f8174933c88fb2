// Resize and Upsample: the ONNX backend cases (model + expected outputs from the ONNX reference), hand-
// computed cases for what those do not cover (axes, keep_aspect_ratio_policy, antialias, extrapolation,
// integer types, opset 7-10), and the multi-axis fast paths against naive loops on random data.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ops/op_tester.h"
#include "test_env.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// ---- ONNX backend cases ---------------------------------------------------------------------------

fs::path BackendNodeCases() {
  const char* root = std::getenv("TESSERA_ONNX_TESTDATA");
  return fs::path(root ? root : "/usr/share/libonnx-testdata/data") / "node";
}

template <typename T, typename Field>
void CopyField(const Field& field, Tensor& t) {
  T* out = t.Data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

Tensor ReadTensorProto(const fs::path& file) {
  onnx::TensorProto proto;
  std::ifstream in(file, std::ios::binary);
  if (!proto.ParseFromIstream(&in)) ADD_FAILURE() << "cannot parse " << file;
  const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  Tensor t = Tensor::Allocate(static_cast<DataType>(proto.data_type()), Shape(dims));
  if (proto.has_raw_data()) {
    EXPECT_EQ(proto.raw_data().size(), t.SizeInBytes()) << file;
    std::memcpy(t.raw_data(), proto.raw_data().data(), std::min(proto.raw_data().size(), t.SizeInBytes()));
  } else if (t.type() == DataType::kFloat) {
    CopyField<float>(proto.float_data(), t);
  } else if (t.type() == DataType::kInt64) {
    CopyField<int64_t>(proto.int64_data(), t);
  } else if (t.type() == DataType::kDouble) {
    CopyField<double>(proto.double_data(), t);
  } else if (t.type() == DataType::kInt32) {
    CopyField<int32_t>(proto.int32_data(), t);
  } else {
    ADD_FAILURE() << file << ": unhandled element type " << DataTypeName(t.type());
  }
  return t;
}

// Runs every test_data_set_* of the backend case in `dir` on the CPU EP; returns "" when all match.
std::string RunBackendCase(const fs::path& dir) {
  try {
    Session session(TestEnv(), dir / "model.onnx", OptionsFor("cpu"));
    for (const fs::directory_entry& set : fs::directory_iterator(dir)) {
      if (set.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
      Session::NamedValues feeds;
      for (size_t i = 0; i < session.inputs().size(); ++i)
        feeds.emplace_back(session.inputs()[i].name,
                           ReadTensorProto(set.path() / ("input_" + std::to_string(i) + ".pb")));
      const std::vector<Value> outputs = session.Run(feeds);
      for (size_t i = 0; i < outputs.size(); ++i) {
        const Tensor expected = ReadTensorProto(set.path() / ("output_" + std::to_string(i) + ".pb"));
        const std::string diff = CompareTensors(expected, outputs[i].tensor(), 1e-5, 1e-3);
        if (!diff.empty()) return set.path().filename().string() + " output " + std::to_string(i) + ": " + diff;
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ResizeOpTest, OnnxBackendCases) {
  const fs::path root = BackendNodeCases();
  if (!fs::is_directory(root)) GTEST_SKIP() << "no ONNX backend test data at " << root;
  int passed = 0, total = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("test_resize_", 0) != 0 && name.rfind("test_upsample_", 0) != 0) continue;
    ++total;
    const std::string failure = RunBackendCase(entry.path());
    EXPECT_EQ(failure, "") << name;
    passed += failure.empty();
  }
  EXPECT_GT(total, 0);
  std::printf("[ Resize  ] %d of %d ONNX backend cases pass\n", passed, total);
}

// ---- hand-computed cases ----------------------------------------------------------------------------

Tensor Floats(Shape shape, std::vector<float> values) { return Tensor::FromVector<float>(std::move(shape), values); }
Tensor Int64s(std::vector<int64_t> values) {
  return Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(values.size())}, values);
}
Tensor EmptyFloats() { return Tensor::FromVector<float>(Shape{0}, {}); }

// The default model's Resize: nearest, asymmetric, floor, scales [1, 1, 2, 2] (opset 11: roi present but empty).
TEST(ResizeOpTest, NearestAsymmetricFloorUpsample2x) {
  OpTester t("Resize", 11);
  t.Attr("mode", std::string("nearest")).Attr("coordinate_transformation_mode", std::string("asymmetric"));
  t.Attr("nearest_mode", std::string("floor"));
  t.Input("X", Floats({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}));
  t.Input("roi", EmptyFloats(), true).Input("scales", Floats({4}, {1, 1, 2, 2}), true);
  t.Output("Y", Floats({1, 1, 4, 6}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}));
  t.Run();
}

TEST(ResizeOpTest, LinearHalfPixelClampsAtEdges) {
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("linear"));
  t.Input("X", Floats({1, 1, 1, 2}, {1, 3})).OmittedInput().Input("scales", Floats({4}, {1, 1, 1, 2}), true);
  t.Output("Y", Floats({1, 1, 1, 4}, {1, 1.5f, 2.5f, 3}));
  t.Run();
}

// Float32 2-D linear resizes compute each output in one pass as the sum of its four neighbours weighted by
// products of the axis weights, in this order (ONNX Runtime's arithmetic, which quantized models depend on: a
// one-ulp difference moves values across quantization steps). Compared bit for bit, on the CPU EP.
TEST(ResizeOpTest, BilinearIsOneWeightedSumBitForBit) {
  const int64_t in_h = 5, in_w = 7;
  const float scale_h = 2.0f, scale_w = 1.5f;
  const int64_t out_h = 10, out_w = 10;
  const Tensor x = RandomTensor(DataType::kFloat, {1, 2, in_h, in_w}, 77, -4, 4);
  struct Taps {
    int64_t lo, hi;
    float w_lo, w_hi;
  };
  auto taps = [](int64_t o, int64_t in, float scale) {
    float c = (static_cast<float>(o) + 0.5f) / scale - 0.5f;
    c = std::max(c, 0.0f);
    Taps t;
    t.lo = std::min(static_cast<int64_t>(c), in - 1);
    t.hi = std::min(t.lo + 1, in - 1);
    t.w_hi = c - static_cast<float>(t.lo);
    t.w_lo = 1.0f - t.w_hi;
    if (t.lo == t.hi) t.w_lo = t.w_hi = 0.5f;
    return t;
  };
  Tensor y = Tensor::Allocate(DataType::kFloat, {1, 2, out_h, out_w});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t oy = 0; oy < out_h; ++oy)
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const Taps r = taps(oy, in_h, scale_h), k = taps(ox, in_w, scale_w);
        const float* plane = x.Data<float>() + c * in_h * in_w;
        y.Data<float>()[(c * out_h + oy) * out_w + ox] =
            k.w_lo * r.w_lo * plane[r.lo * in_w + k.lo] + k.w_hi * r.w_lo * plane[r.lo * in_w + k.hi] +
            k.w_lo * r.w_hi * plane[r.hi * in_w + k.lo] + k.w_hi * r.w_hi * plane[r.hi * in_w + k.hi];
      }
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("linear"));
  t.Input("X", x).OmittedInput().Input("scales", Floats({4}, {1, 1, scale_h, scale_w}), true);
  t.Output("Y", y).Tolerance(0, 0);
  t.Run({"cpu"});
}

// Sizes [3, 3] for a 2x4 image keep the aspect ratio: scale min(3/2, 3/4) = 0.75 gives 2x3.
TEST(ResizeOpTest, AxesWithKeepAspectRatioNotLarger) {
  OpTester t("Resize", 18);
  t.Attr("axes", std::vector<int64_t>{2, -1}).Attr("keep_aspect_ratio_policy", std::string("not_larger"));
  t.Input("X", Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})).OmittedInput().OmittedInput();
  t.Input("sizes", Int64s({3, 3}), true);
  t.Output("Y", Floats({1, 1, 2, 3}, {1, 2, 4, 5, 6, 8}));
  t.Run();
}

TEST(ResizeOpTest, KeepAspectRatioNotSmaller) {
  OpTester t("Resize", 18);
  t.Attr("keep_aspect_ratio_policy", std::string("not_smaller")).Attr("axes", std::vector<int64_t>{2, 3});
  t.Input("X", Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})).OmittedInput().OmittedInput();
  t.Input("sizes", Int64s({1, 1}), true);
  // One scale, max(1/2, 1/4) = 0.5, gives 1x2; half_pixel samples row 0.5 and columns 0.5, 2.5, which
  // round_prefer_floor takes to 0 and 0, 2.
  t.Output("Y", Floats({1, 1, 1, 2}, {1, 3}));
  t.Run();
}

// roi crops columns [1.5, 4.5] of 0..3; 4.5 lies outside and takes extrapolation_value.
TEST(ResizeOpTest, TfCropAndResizeExtrapolates) {
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("linear")).Attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  t.Attr("extrapolation_value", 7.0f);
  t.Input("X", Floats({1, 4}, {0, 10, 20, 30})).Input("roi", Floats({4}, {0, 0.5f, 1, 1.5f}), true);
  t.OmittedInput().Input("sizes", Int64s({1, 3}), true);
  t.Output("Y", Floats({1, 3}, {15, 30, 7}));
  t.Run();
}

// Antialiased linear at scale 0.5 is a 4-tap triangle filter: weights 1/8, 3/8, 3/8, 1/8, edges clamped.
TEST(ResizeOpTest, LinearAntialiasDownsample) {
  OpTester t("Resize", 18);
  t.Attr("mode", std::string("linear")).Attr("antialias", int64_t{1});
  t.Input("X", Floats({1, 4}, {0, 1, 2, 3})).OmittedInput().Input("scales", Floats({2}, {1, 0.5f}), true);
  t.Output("Y", Floats({1, 2}, {0.625f, 2.375f}));
  t.Run();
}

TEST(ResizeOpTest, CubicUpsampleAlignCorners) {
  // align_corners samples 0, 0.5, ..., 3. Cubic convolution (a = -0.75, taps -0.09375, 0.59375, 0.59375,
  // -0.09375 at half positions) reproduces the ramp except at 0.5 and 2.5, whose outer taps are clamped.
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("cubic")).Attr("coordinate_transformation_mode", std::string("align_corners"));
  t.Input("X", Floats({1, 4}, {0, 1, 2, 3})).OmittedInput().OmittedInput().Input("sizes", Int64s({1, 7}), true);
  t.Output("Y", Floats({1, 7}, {0, 0.40625f, 1, 1.5f, 2, 2.59375f, 3}));
  t.Run();
}

TEST(ResizeOpTest, NearestInt8RoundPreferCeilDownsample) {
  OpTester t("Resize", 13);
  t.Attr("nearest_mode", std::string("round_prefer_ceil"));
  t.Input("X", Tensor::FromVector<int8_t>({1, 6}, {-6, -4, -2, 0, 2, 4})).OmittedInput();
  t.Input("scales", Floats({2}, {1, 0.5f}), true);
  // half_pixel: (o + 0.5) * 2 - 0.5 = 0.5, 2.5, 4.5 -> ceil on ties -> 1, 3, 5
  t.Output("Y", Tensor::FromVector<int8_t>({1, 3}, {-4, 0, 4}));
  t.Run();
}

TEST(ResizeOpTest, LinearUInt8RoundsAndSaturates) {
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("linear")).Attr("coordinate_transformation_mode", std::string("align_corners"));
  t.Input("X", Tensor::FromVector<uint8_t>({1, 2}, {0, 255})).OmittedInput().OmittedInput();
  t.Input("sizes", Int64s({1, 4}), true);
  t.Output("Y", Tensor::FromVector<uint8_t>({1, 4}, {0, 85, 170, 255}));
  t.Run();
}

TEST(ResizeOpTest, Upsample7AttributeScalesInt32) {
  OpTester t("Upsample", 7);
  t.Attr("scales", std::vector<float>{1, 2, 3});
  t.Input("X", Tensor::FromVector<int32_t>({1, 1, 2}, {4, 9}));
  t.Output("Y", Tensor::FromVector<int32_t>({1, 2, 6}, {4, 4, 4, 9, 9, 9, 4, 4, 4, 9, 9, 9}));
  t.Run();
}

TEST(ResizeOpTest, Resize10LinearIsAsymmetric) {
  OpTester t("Resize", 10);
  t.Attr("mode", std::string("linear"));
  t.Input("X", Floats({1, 2}, {0, 4})).Input("scales", Floats({2}, {1, 2}), true);
  t.Output("Y", Floats({1, 4}, {0, 2, 4, 4}));
  t.Run();
}

TEST(ResizeOpTest, ScalesAndSizesTogetherFail) {
  OpTester t("Resize", 13);
  t.Input("X", Floats({1, 2}, {0, 4})).OmittedInput().Input("scales", Floats({2}, {1, 2}), true);
  t.Input("sizes", Int64s({1, 4}), true).OutputName("Y").ExpectFailure("exactly one of 'scales' and 'sizes'");
  t.Run({"cpu"});
}

TEST(ResizeOpTest, UnknownModeFails) {
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("lanczos"));
  t.Input("X", Floats({1, 2}, {0, 4})).OmittedInput().Input("scales", Floats({2}, {1, 2}), true);
  t.OutputName("Y").ExpectFailure("unsupported mode 'lanczos'");
  t.Run({"cpu"});
}

// ---- multi-axis paths against naive loops -------------------------------------------------------------

// Bilinear, half_pixel, over the two trailing axes of an NCHW tensor, straight from the definition.
Tensor NaiveBilinear(const Tensor& x, int64_t out_h, int64_t out_w) {
  const Shape& s = x.shape();
  const int64_t planes = s[0] * s[1], in_h = s[2], in_w = s[3];
  Tensor y = Tensor::Allocate(DataType::kFloat, Shape{s[0], s[1], out_h, out_w});
  auto sample = [](int64_t o, int64_t in, int64_t out, int64_t& lo, int64_t& hi, double& frac) {
    const double c = (o + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
    const double f = std::floor(c);
    lo = std::clamp<int64_t>(static_cast<int64_t>(f), 0, in - 1);
    hi = std::clamp<int64_t>(static_cast<int64_t>(f) + 1, 0, in - 1);
    frac = c - f;
  };
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < out_h; ++i)
      for (int64_t j = 0; j < out_w; ++j) {
        int64_t r0, r1, c0, c1;
        double fr, fc;
        sample(i, in_h, out_h, r0, r1, fr);
        sample(j, in_w, out_w, c0, c1, fc);
        const float* plane = x.Data<float>() + p * in_h * in_w;
        const double top = plane[r0 * in_w + c0] * (1 - fc) + plane[r0 * in_w + c1] * fc;
        const double bottom = plane[r1 * in_w + c0] * (1 - fc) + plane[r1 * in_w + c1] * fc;
        y.Data<float>()[(p * out_h + i) * out_w + j] = static_cast<float>(top * (1 - fr) + bottom * fr);
      }
  return y;
}

TEST(ResizeOpTest, BilinearMixedUpAndDownMatchesNaive) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 17, 23}, 5);
  OpTester t("Resize", 13);
  t.Attr("mode", std::string("linear"));
  t.Input("X", x).OmittedInput().OmittedInput().Input("sizes", Int64s({2, 3, 40, 11}), true);
  t.Output("Y", NaiveBilinear(x, 40, 11)).Tolerance(1e-5, 1e-4);
  t.Run();
}

// Nearest 2x (the default model's geometry) on a tensor big enough to spread over threads.
TEST(ResizeOpTest, NearestUpsampleLargeMatchesNaive) {
  const Tensor x = RandomTensor(DataType::kFloat, {1, 16, 40, 56}, 9);
  Tensor expected = Tensor::Allocate(DataType::kFloat, Shape{1, 16, 80, 112});
  for (int64_t c = 0; c < 16; ++c)
    for (int64_t i = 0; i < 80; ++i)
      for (int64_t j = 0; j < 112; ++j)
        expected.Data<float>()[(c * 80 + i) * 112 + j] = x.Data<float>()[(c * 40 + i / 2) * 56 + j / 2];
  OpTester t("Resize", 11);
  t.Attr("coordinate_transformation_mode", std::string("asymmetric")).Attr("nearest_mode", std::string("floor"));
  t.Input("X", x).Input("roi", EmptyFloats(), true).Input("scales", Floats({4}, {1, 1, 2, 2}), true);
  t.Output("Y", expected).Tolerance(0, 0);
  t.Run();
}

}  // namespace
}  // namespace tessera::test
