// ConvTranspose against a naive scatter-form reference on random inputs over many geometries (oneDNN
// and the direct loop), and against the ONNX backend cases.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ops/op_tester.h"
#include "test_env.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

struct ConvTransposeCase {
  ConvTransposeCase(Shape x_shape, Shape w_shape) : x(std::move(x_shape)), w(std::move(w_shape)) {}
  Shape x, w;  // W is [C_in, C_out / group, kernel...]
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, output_padding, output_shape;  // empty = attribute absent
  std::string auto_pad;                                                        // empty = attribute absent
  bool bias = true;
  bool constant_w = false;
};

// Per spatial axis, straight from the ONNX spec.
struct AxisGeometry {
  int64_t in, kernel, stride, dilation, pad_begin, out;
};

std::vector<AxisGeometry> SpecGeometry(const ConvTransposeCase& c) {
  const size_t rank = c.x.rank() - 2;
  std::vector<AxisGeometry> axes;
  for (size_t d = 0; d < rank; ++d) {
    AxisGeometry a{c.x[d + 2], c.w[d + 2], c.strides.empty() ? 1 : c.strides[d],
                   c.dilations.empty() ? 1 : c.dilations[d], 0, 0};
    const int64_t output_padding = c.output_padding.empty() ? 0 : c.output_padding[d];
    const int64_t natural = a.stride * (a.in - 1) + output_padding + (a.kernel - 1) * a.dilation + 1;
    const bool same = c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER";
    if (!c.output_shape.empty() || same) {
      a.out = !c.output_shape.empty() ? c.output_shape[d] : a.in * a.stride;
      const int64_t total = natural - a.out;  // negative: the output extends past the natural end
      a.pad_begin = total < 0 ? 0 : c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      a.pad_begin = c.pads.empty() ? 0 : c.pads[d];
      a.out = natural - a.pad_begin - (c.pads.empty() ? 0 : c.pads[d + rank]);
    }
    axes.push_back(a);
  }
  return axes;
}

// Scatter form: every (input position, kernel tap) adds x * w to the output position it reaches.
template <typename T>
Tensor NaiveConvTranspose(const ConvTransposeCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  std::vector<AxisGeometry> g = SpecGeometry(c);
  while (g.size() < 3) g.insert(g.begin(), AxisGeometry{1, 1, 1, 1, 0, 1});  // lift to 3 spatial axes
  const int64_t batch = c.x[0], cin = c.x[1], cpg = cin / c.group, mpg = c.w[1], m = mpg * c.group;
  std::vector<int64_t> out_dims{batch, m};
  for (size_t d = 3 - (c.x.rank() - 2); d < 3; ++d) out_dims.push_back(g[d].out);
  std::vector<double> acc(static_cast<size_t>(Shape(out_dims).NumElements()), 0.0);
  const int64_t out_plane = g[0].out * g[1].out * g[2].out;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t ic = 0; ic < cin; ++ic)
      for (int64_t oc = 0; oc < mpg; ++oc)
        for (int64_t i0 = 0; i0 < g[0].in; ++i0)
          for (int64_t i1 = 0; i1 < g[1].in; ++i1)
            for (int64_t i2 = 0; i2 < g[2].in; ++i2)
              for (int64_t k0 = 0; k0 < g[0].kernel; ++k0)
                for (int64_t k1 = 0; k1 < g[1].kernel; ++k1)
                  for (int64_t k2 = 0; k2 < g[2].kernel; ++k2) {
                    const int64_t o0 = i0 * g[0].stride - g[0].pad_begin + k0 * g[0].dilation;
                    const int64_t o1 = i1 * g[1].stride - g[1].pad_begin + k1 * g[1].dilation;
                    const int64_t o2 = i2 * g[2].stride - g[2].pad_begin + k2 * g[2].dilation;
                    if (o0 < 0 || o0 >= g[0].out || o1 < 0 || o1 >= g[1].out || o2 < 0 || o2 >= g[2].out) continue;
                    const double xv = x.Data<T>()[(((n * cin + ic) * g[0].in + i0) * g[1].in + i1) * g[2].in + i2];
                    const double wv =
                        w.Data<T>()[(((ic * mpg + oc) * g[0].kernel + k0) * g[1].kernel + k1) * g[2].kernel + k2];
                    const int64_t channel = (ic / cpg) * mpg + oc;
                    acc[static_cast<size_t>((n * m + channel) * out_plane + (o0 * g[1].out + o1) * g[2].out + o2)] +=
                        xv * wv;
                  }
  Tensor y = Tensor::Allocate(x.type(), Shape(out_dims));
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t channel = static_cast<int64_t>(i) / out_plane % m;
    y.Data<T>()[i] = static_cast<T>(acc[i] + (b ? static_cast<double>(b->Data<T>()[channel]) : 0.0));
  }
  return y;
}

void CheckConvTranspose(const ConvTransposeCase& c, DataType type = DataType::kFloat, uint32_t seed = 1) {
  const Tensor x = RandomTensor(type, c.x, seed), w = RandomTensor(type, c.w, seed + 1);
  const Tensor b = RandomTensor(type, Shape{c.w[1] * c.group}, seed + 2);
  OpTester t("ConvTranspose", 17);
  if (c.group != 1) t.Attr("group", c.group);
  if (!c.strides.empty()) t.Attr("strides", c.strides);
  if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (!c.output_padding.empty()) t.Attr("output_padding", c.output_padding);
  if (!c.output_shape.empty()) t.Attr("output_shape", c.output_shape);
  if (!c.auto_pad.empty()) t.Attr("auto_pad", c.auto_pad);
  t.Input("X", x).Input("W", w, c.constant_w);
  if (c.bias) t.Input("B", b);
  const Tensor* bias = c.bias ? &b : nullptr;
  t.Output("Y", type == DataType::kFloat ? NaiveConvTranspose<float>(c, x, w, bias)
                                         : NaiveConvTranspose<double>(c, x, w, bias));
  if (type == DataType::kFloat) t.Tolerance(1e-4, 1e-4);
  t.Run();
}

// The default model's upsampling: kernel 2x2, stride 2, no pads, constant weights, no bias.
TEST(ConvTransposeOpTest, Kernel2Stride2LikeDefaultModel) {
  ConvTransposeCase c({1, 24, 10, 12}, {24, 16, 2, 2});
  c.strides = {2, 2}, c.pads = {0, 0, 0, 0}, c.bias = false, c.constant_w = true;
  CheckConvTranspose(c);
}

// Kernels that tile the output (stride == kernel, no pads, at most 64 input channels per group) run the direct
// vector loop: kernel widths 1, 2 and 4 vectorized, others scalar; rows of 32, 16 and fewer input positions; groups;
// 1 to 3 spatial axes.
TEST(ConvTransposeOpTest, TilingKernels) {
  struct Geometry {
    Shape x, w;
    std::vector<int64_t> strides;
    int64_t group;
  };
  const std::vector<Geometry> geometries = {
      {{1, 24, 5, 83}, {24, 3, 2, 2}, {2, 2}, 1},       // 83 = 2 * 32 + 16 + 3 input positions per row
      {{2, 6, 3, 21}, {6, 5, 1, 4}, {1, 4}, 2},         // kernel width 4, two groups
      {{1, 8, 4, 40}, {8, 2, 3, 1}, {3, 1}, 1},         // kernel width 1
      {{1, 4, 3, 7}, {4, 3, 2, 3}, {2, 3}, 1},          // kernel width 3: the scalar loop
      {{1, 64, 2, 33}, {64, 2, 2, 2}, {2, 2}, 1},       // 64 input channels: the largest tiling case
      {{2, 5, 37}, {5, 3, 2}, {2}, 1},                  // one spatial axis
      {{1, 3, 2, 3, 34}, {3, 2, 2, 2, 2}, {2, 2, 2}, 1}, // three spatial axes
  };
  for (const Geometry& g : geometries)
    for (bool constant_w : {false, true}) {
      ConvTransposeCase c(g.x, g.w);
      c.strides = g.strides, c.group = g.group, c.constant_w = constant_w;
      SCOPED_TRACE(::testing::Message() << "x " << g.x.ToString() << " w " << g.w.ToString());
      CheckConvTranspose(c);
    }
  // 65 input channels go to oneDNN; so does anything with pads or dilations.
  ConvTransposeCase wide({1, 65, 3, 20}, {65, 4, 2, 2});
  wide.strides = {2, 2};
  CheckConvTranspose(wide);
}

TEST(ConvTransposeOpTest, Basic2dWithBias) {
  ConvTransposeCase c({2, 3, 5, 4}, {3, 4, 3, 3});
  CheckConvTranspose(c);
}

TEST(ConvTransposeOpTest, GroupsDilationsAsymmetricPadsOutputPadding) {
  ConvTransposeCase c({2, 4, 5, 6}, {4, 3, 3, 2});
  c.group = 2, c.strides = {2, 3}, c.dilations = {2, 1}, c.pads = {1, 0, 0, 2}, c.output_padding = {1, 2};
  CheckConvTranspose(c);
}

// output_padding larger than the end pad appends outputs only the bias reaches.
TEST(ConvTransposeOpTest, OutputPaddingBeyondEndPad1d) {
  ConvTransposeCase c({2, 3, 7}, {3, 5, 4});
  c.strides = {3}, c.pads = {2, 0}, c.output_padding = {2};
  CheckConvTranspose(c);
}

// At least 16 channels on both sides selects oneDNN's blocked layouts.
TEST(ConvTransposeOpTest, BlockedLayoutWithOutputPadding) {
  ConvTransposeCase c({2, 16, 5, 6}, {16, 20, 3, 3});
  c.strides = {2, 2}, c.pads = {1, 0, 0, 1}, c.output_padding = {1, 1}, c.constant_w = true;
  CheckConvTranspose(c);
}

TEST(ConvTransposeOpTest, Strided3dConstantWeights) {
  ConvTransposeCase c({1, 2, 3, 4, 5}, {2, 3, 2, 3, 2});
  c.strides = {2, 1, 2}, c.pads = {0, 1, 0, 1, 0, 1}, c.constant_w = true;
  CheckConvTranspose(c);
}

TEST(ConvTransposeOpTest, SameLowerAndSameUpper) {
  ConvTransposeCase c({1, 2, 5, 4}, {2, 2, 3, 4});
  c.strides = {2, 3}, c.auto_pad = "SAME_LOWER";
  CheckConvTranspose(c);
  c.auto_pad = "SAME_UPPER";
  CheckConvTranspose(c, DataType::kFloat, 4);
}

TEST(ConvTransposeOpTest, OutputShapeLargerAndSmallerThanNatural) {
  ConvTransposeCase c({1, 2, 3, 3}, {2, 2, 3, 3});
  c.strides = {3, 2}, c.output_shape = {10, 6};  // natural 9x7: one extra row, one column trimmed
  CheckConvTranspose(c);
}

TEST(ConvTransposeOpTest, DepthwiseOutputPadding) {
  ConvTransposeCase c({1, 4, 6, 6}, {4, 1, 3, 3});
  c.group = 4, c.strides = {2, 2}, c.pads = {1, 1, 1, 1}, c.output_padding = {1, 1};
  CheckConvTranspose(c);
}

TEST(ConvTransposeOpTest, DoubleUsesDirectLoop) {
  ConvTransposeCase c({2, 4, 4, 5}, {4, 2, 3, 2});
  c.group = 2, c.strides = {2, 1}, c.pads = {1, 0, 1, 1}, c.dilations = {1, 2};
  CheckConvTranspose(c, DataType::kDouble);
}

TEST(ConvTransposeOpTest, FourSpatialAxesUseDirectLoop) {
  ConvTransposeCase c({1, 2, 2, 3, 2, 3}, {2, 2, 2, 1, 2, 2});
  c.strides = {2, 1, 1, 2};
  Tensor x = RandomTensor(DataType::kFloat, c.x, 3), w = RandomTensor(DataType::kFloat, c.w, 4);
  // Lifting to 3 axes does not fit 4 spatial axes: fold the first spatial axis (stride 2, kernel 2,
  // no pads) by hand: output row 2 * i + k of axis 0 gets input row i with kernel row k.
  OpTester t("ConvTranspose", 17);
  t.Attr("strides", c.strides).Input("X", x).Input("W", w).OutputName("Y");
  const Tensor y = t.RunOn("cpu")[0];
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 3, 3, 6}));
  ConvTransposeCase slice({1, 2, 3, 2, 3}, {2, 2, 1, 2, 2});
  slice.strides = {1, 1, 2}, slice.bias = false;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 2; ++k) {
      Tensor xs = Tensor::Allocate(DataType::kFloat, slice.x), ws = Tensor::Allocate(DataType::kFloat, slice.w);
      for (int64_t ch = 0; ch < 2; ++ch)
        std::memcpy(xs.Data<float>() + ch * 18, x.Data<float>() + (ch * 2 + i) * 18, 18 * sizeof(float));
      for (int64_t ch = 0; ch < 4; ++ch)
        std::memcpy(ws.Data<float>() + ch * 4, w.Data<float>() + (ch * 2 + k) * 4, 4 * sizeof(float));
      const Tensor expected = NaiveConvTranspose<float>(slice, xs, ws, nullptr);
      for (int64_t oc = 0; oc < 2; ++oc)
        for (int64_t e = 0; e < 54; ++e)
          EXPECT_NEAR(y.Data<float>()[(oc * 4 + 2 * i + k) * 54 + e], expected.Data<float>()[oc * 54 + e], 1e-5);
    }
}

// Compute runs from many threads at once and shares the per-shape primitive.
TEST(ConvTransposeOpTest, ConcurrentRuns) {
  ConvTransposeCase c({2, 8, 7, 6}, {8, 4, 2, 2});
  c.strides = {2, 2}, c.bias = false;
  const Tensor w = RandomTensor(DataType::kFloat, c.w, 2);
  OpTester t("ConvTranspose", 17);
  t.Attr("strides", c.strides).Input("X", RandomTensor(DataType::kFloat, c.x, 1)).Input("W", w, true).OutputName("Y");
  const std::string model = t.SerializedModel();
  Session session(TestEnv(), model.data(), model.size(), OptionsFor("cpu"));
  std::vector<Tensor> inputs, expected;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    inputs.push_back(RandomTensor(DataType::kFloat, c.x, 10 + seed));
    expected.push_back(NaiveConvTranspose<float>(c, inputs.back(), w, nullptr));
  }
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t id = 0; id < 4; ++id)
    threads.emplace_back([&, id] {
      for (size_t i = 0; i < 10 && failures[id].empty(); ++i) {
        const size_t which = (id + i) % 4;
        failures[id] = CompareTensors(expected[which], session.Run({{"X", inputs[which]}})[0].tensor(), 1e-4, 1e-4);
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(ConvTransposeOpTest, ChannelMismatchFails) {
  OpTester t("ConvTranspose", 17);
  t.Input("X", RandomTensor(DataType::kFloat, {1, 3, 5, 5}, 1));
  t.Input("W", RandomTensor(DataType::kFloat, {4, 2, 3, 3}, 2));
  t.OutputName("Y").ExpectFailure("channel mismatch");
  t.Run({"cpu"});
}

// ---- ONNX backend cases ---------------------------------------------------------------------------

Tensor ReadTensorProto(const fs::path& file) {
  onnx::TensorProto proto;
  std::ifstream in(file, std::ios::binary);
  if (!proto.ParseFromIstream(&in)) ADD_FAILURE() << "cannot parse " << file;
  const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  Tensor t = Tensor::Allocate(static_cast<DataType>(proto.data_type()), Shape(dims));
  if (proto.has_raw_data() && proto.raw_data().size() == t.SizeInBytes()) {
    std::memcpy(t.raw_data(), proto.raw_data().data(), t.SizeInBytes());
  } else if (t.type() == DataType::kFloat && proto.float_data_size() == t.NumElements()) {
    std::copy(proto.float_data().begin(), proto.float_data().end(), t.Data<float>());
  } else {
    ADD_FAILURE() << file << ": expected float or raw data of " << t.Describe();
  }
  return t;
}

TEST(ConvTransposeOpTest, OnnxBackendCases) {
  const char* data = std::getenv("TESSERA_ONNX_TESTDATA");
  const fs::path root = fs::path(data ? data : "/usr/share/libonnx-testdata/data") / "node";
  if (!fs::is_directory(root)) GTEST_SKIP() << "no ONNX backend test data at " << root;
  int passed = 0, total = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("test_convtranspose", 0) != 0) continue;
    ++total;
    std::string failure;
    try {
      Session session(TestEnv(), entry.path() / "model.onnx", OptionsFor("cpu"));
      const fs::path set = entry.path() / "test_data_set_0";
      const std::vector<Value> y = session.Run({{session.inputs()[0].name, ReadTensorProto(set / "input_0.pb")},
                                                {session.inputs()[1].name, ReadTensorProto(set / "input_1.pb")}});
      failure = CompareTensors(ReadTensorProto(set / "output_0.pb"), y[0].tensor(), 1e-5, 1e-3);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    EXPECT_EQ(failure, "") << name;
    passed += failure.empty();
  }
  EXPECT_GT(total, 0);
  std::printf("[ ConvTranspose ] %d of %d ONNX backend cases pass\n", passed, total);
}

}  // namespace
}  // namespace tessera::test
