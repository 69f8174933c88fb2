// NHWC convolutions on the CUDA EP: the nchwc_layout pass with channel block 0 (ai.tessera NchwcConv,
// NchwcMaxPool / NchwcAveragePool / NchwcGlobalAveragePool, ReorderFromBlocked), chosen per convolution by
// CudaExecutionProvider::PreferredChannelBlock: with prefer_nhwc = 1 always, with 0 never, and by default where
// the convolution runs on tensor cores (float16; float32 with use_tf32).
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// The model with float initializers, inputs and outputs turned into float16 (values rounded).
std::string ToFloat16Model(const std::string& model) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model)) throw std::runtime_error("cannot parse the model");
  for (auto& init : *proto.mutable_graph()->mutable_initializer()) {
    if (init.data_type() != onnx::TensorProto::FLOAT) continue;
    std::string raw;
    for (float v : init.float_data()) {
      const Float16 h = ToFloat16(v);
      raw.append(reinterpret_cast<const char*>(&h), sizeof(h));
    }
    init.clear_float_data();
    init.set_data_type(onnx::TensorProto::FLOAT16);
    init.set_raw_data(raw);
  }
  for (auto* list : {proto.mutable_graph()->mutable_input(), proto.mutable_graph()->mutable_output()})
    for (auto& value : *list)
      if (value.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT)
        value.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  return proto.SerializeAsString();
}

void AddInts(onnx::NodeProto& node, const char* name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

// MobileNet-like: depthwise 3x3 conv + Clip(0, 6), pointwise conv 8 -> 16, 2x2 average pool; x [1, 8, 12, 12],
// output "y" [1, 16, 6, 6] (a graph output: read back through ReorderFromBlocked).
std::string DepthwiseModel() {
  GraphBuilder builder;
  const Tensor dw = RandomTensor(DataType::kFloat, {8, 1, 3, 3}, 11, -0.5, 0.5);
  const Tensor dw_b = RandomTensor(DataType::kFloat, {8}, 12, -0.5, 0.5);
  const Tensor pw = RandomTensor(DataType::kFloat, {16, 8, 1, 1}, 13, -0.5, 0.5);
  builder.FloatInitializer("dw", {8, 1, 3, 3}, dw.ToVector<float>())
      .FloatInitializer("dw_b", {8}, dw_b.ToVector<float>())
      .FloatInitializer("pw", {16, 8, 1, 1}, pw.ToVector<float>())
      .FloatInitializer("lo", {}, {0.0f})
      .FloatInitializer("hi", {}, {6.0f})
      .Input("x", {1, 8, 12, 12})
      .Node("Conv", {"x", "dw", "dw_b"}, {"d"}, "depthwise")
      .Node("Clip", {"d", "lo", "hi"}, {"d6"})
      .Node("Conv", {"d6", "pw"}, {"p"}, "pointwise")
      .Node("AveragePool", {"p"}, {"y"}, "pool")
      .Output("y");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(builder.Serialize())) throw std::runtime_error("cannot parse the built model");
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.name() == "depthwise") {
      AddInts(node, "pads", {1, 1, 1, 1});
      auto* group = node.add_attribute();
      group->set_name("group");
      group->set_type(onnx::AttributeProto::INT);
      group->set_i(8);
    }
    if (node.name() == "pool") {
      AddInts(node, "kernel_shape", {2, 2});
      AddInts(node, "strides", {2, 2});
    }
  }
  return proto.SerializeAsString();
}

// YOLO's C2f block: Conv + SiLU, Split along channels, one half through Conv + SiLU with a residual Add, Concat
// of both halves and that result, Conv + SiLU.
std::string SplitConcatSiluModel() {
  GraphBuilder builder;
  auto init = [&](const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
    builder.FloatInitializer(name, dims, RandomTensor(DataType::kFloat, Shape(dims), seed, -0.3, 0.3).ToVector<float>());
  };
  init("w1", {32, 16, 1, 1}, 31);
  init("w2", {16, 16, 3, 3}, 32);
  init("w3", {16, 48, 1, 1}, 33);
  builder.Int64Initializer("sizes", {2}, {16, 16});
  builder.Input("x", {1, 16, 10, 10})
      .Node("Conv", {"x", "w1"}, {"c1"})
      .Node("Sigmoid", {"c1"}, {"g1"})
      .Node("Mul", {"c1", "g1"}, {"s1"})
      .Node("Split", {"s1", "sizes"}, {"a", "b"}).IntAttribute("axis", 1)
      .Node("Conv", {"b", "w2"}, {"c2"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Sigmoid", {"c2"}, {"g2"})
      .Node("Mul", {"g2", "c2"}, {"s2"})
      .Node("Add", {"s2", "b"}, {"r"})
      .Node("Concat", {"a", "b", "r"}, {"cat"}).IntAttribute("axis", 1)
      .Node("Conv", {"cat", "w3"}, {"c3"})
      .Node("Sigmoid", {"c3"}, {"g3"})
      .Node("Mul", {"c3", "g3"}, {"y"})
      .Output("y");
  return builder.Serialize();
}

// x [2, channels, 11, 13] -> a pointwise convolution "pre" (channels -> channels, so that the depthwise one reads
// an NHWC value) -> a depthwise convolution with the given geometry, then optionally "+ pre" (fused as the residual:
// it keeps the size, pads are "same") and Relu; output "y".
struct DepthwiseCase {
  int64_t channels = 8, kernel_h = 3, kernel_w = 3, stride = 1, dilation = 1, pad = 1;
  bool bias = true, residual = false, relu = false;
  int64_t batch = 2, height = 11, width = 13;
  // An activation of "pre" that only the depthwise convolution reads ("Relu", "Clip" with these limits, or none):
  // the depthwise_input_activation pass moves it into the depthwise convolution (ActivatedNchwcConv).
  std::string pre_activation = "";
  float clip_lo = 0.0f, clip_hi = 6.0f;
  std::string Describe() const {
    std::ostringstream s;
    s << "x " << batch << "x" << channels << "x" << height << "x" << width << ", kernel " << kernel_h << "x"
      << kernel_w << ", stride " << stride << ", dilation " << dilation << ", pad " << pad << (bias ? ", bias" : "")
      << (residual ? ", residual" : "") << (relu ? ", relu" : "");
    if (!pre_activation.empty()) s << ", " << pre_activation << " before (" << clip_lo << ", " << clip_hi << ")";
    return s.str();
  }
  std::vector<int64_t> InputDims() const { return {batch, channels, height, width}; }
  int64_t PadH() const { return residual ? dilation * (kernel_h - 1) / 2 : pad; }
  int64_t PadW() const { return residual ? dilation * (kernel_w - 1) / 2 : pad; }
};

std::string DepthwiseCaseModel(const DepthwiseCase& c) {
  GraphBuilder builder;
  const Tensor pre = RandomTensor(DataType::kFloat, {c.channels, c.channels, 1, 1}, 30, -0.5, 0.5);
  const Tensor w = RandomTensor(DataType::kFloat, {c.channels, 1, c.kernel_h, c.kernel_w}, 31, -0.5, 0.5);
  const Tensor b = RandomTensor(DataType::kFloat, {c.channels}, 32, -0.5, 0.5);
  builder.FloatInitializer("pre_w", {c.channels, c.channels, 1, 1}, pre.ToVector<float>())
      .FloatInitializer("w", {c.channels, 1, c.kernel_h, c.kernel_w}, w.ToVector<float>())
      .Input("x", c.InputDims())
      .Node("Conv", {"x", "pre_w"}, {c.pre_activation.empty() ? "p" : "pre_out"}, "pre");
  if (c.pre_activation == "Clip") {
    builder.FloatInitializer("lo", {}, {c.clip_lo}).FloatInitializer("hi", {}, {c.clip_hi});
    builder.Node("Clip", {"pre_out", "lo", "hi"}, {"p"});
  } else if (!c.pre_activation.empty()) {
    builder.Node(c.pre_activation, {"pre_out"}, {"p"});
  }
  std::vector<std::string> conv_inputs = {"p", "w"};
  if (c.bias) {
    builder.FloatInitializer("b", {c.channels}, b.ToVector<float>());
    conv_inputs.push_back("b");
  }
  builder.Node("Conv", conv_inputs, {"d"}, "depthwise");
  std::string last = "d";
  if (c.residual) {
    builder.Node("Add", {"d", "p"}, {"s"});
    last = "s";
  }
  if (c.relu) {
    builder.Node("Relu", {last}, {"a"});
    last = "a";
  }
  builder.Node("Identity", {last}, {"y"}).Output("y");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(builder.Serialize())) throw std::runtime_error("cannot parse the built model");
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.name() != "depthwise") continue;
    AddInts(node, "pads", {c.PadH(), c.PadW(), c.PadH(), c.PadW()});
    AddInts(node, "strides", {c.stride, c.stride});
    AddInts(node, "dilations", {c.dilation, c.dilation});
    auto* group = node.add_attribute();
    group->set_name("group");
    group->set_type(onnx::AttributeProto::INT);
    group->set_i(c.channels);
  }
  return proto.SerializeAsString();
}

// How many nodes of each kind the session runs on the CUDA EP: NHWC ones (ai.tessera Nchwc*) and all.
struct Placement {
  int nhwc = 0, on_cuda = 0, elsewhere = 0;
  int activated = 0;  // ActivatedNchwcConv (counted in nhwc too)
};

Placement PlacementOf(const std::string& model, const ProviderOptions& provider_options) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, provider_options);
  Session session = MakeSession(model, options, TestEnv());
  Placement p;
  for (const PartitionEntry& e : session.Partition()) {
    if (e.is_copy) continue;
    if (e.ep != kCudaEpName) {
      ++p.elsewhere;
      continue;
    }
    ++p.on_cuda;
    if (e.op_type.starts_with("Nchwc") || e.op_type == "ActivatedNchwcConv") ++p.nhwc;
    if (e.op_type == "ActivatedNchwcConv") ++p.activated;
  }
  return p;
}

std::vector<Tensor> RunOnCpu(const std::string& model, const Session::NamedValues& feeds) {
  Session session = MakeSession(model, SessionOptions{}, TestEnv());
  std::vector<Tensor> outputs;
  for (const Value& v : session.Run(feeds)) outputs.push_back(v.tensor());
  return outputs;
}

double AsDouble(const Tensor& t, int64_t i) {
  return t.type() == DataType::kFloat16 ? ToFloat(t.Data<Float16>()[i]) : t.Data<float>()[i];
}

void ExpectClose(const Tensor& expected, const Tensor& actual, double tolerance, const std::string& what) {
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  double worst = 0;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double e = AsDouble(expected, i), a = AsDouble(actual, i);
    ASSERT_FALSE(std::isnan(a)) << what << " element " << i;
    worst = std::max(worst, std::abs(a - e) / (1.0 + std::abs(e)));
  }
  EXPECT_LT(worst, tolerance) << what;
}

Tensor HalfOf(const Tensor& t) {
  Tensor half = Tensor::Allocate(DataType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) half.Data<Float16>()[i] = ToFloat16(t.Data<float>()[i]);
  return half;
}

using CudaNhwcTest = CudaTest;

TEST_F(CudaNhwcTest, Float32RunsNhwcWithTensorCoresOrPreferNhwc) {
  const std::string model = SmallConvNetModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 16, 16}, 21, -1.0, 1.0);
  const Tensor expected = RunOnCpu(model, {{"x", Value(x)}})[0];
  for (const char* search : {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}) {
    const ProviderOptions nhwc = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"cudnn_conv_algo_search", search}};
    const Placement p = PlacementOf(model, nhwc);
    EXPECT_EQ(p.elsewhere, 0);
    EXPECT_EQ(p.nhwc, 4) << "two convolutions, the max pool and the global average pool";
    ExpectClose(expected, RunOnCuda(model, {{"x", Value(x)}}, nhwc)[0], 1e-5, search);
  }
  EXPECT_EQ(PlacementOf(model, {{"use_tf32", "0"}}).nhwc, 0) << "float32 without TF32 stays NCHW by default";
  EXPECT_EQ(PlacementOf(model, {}).nhwc, 4) << "float32 with TF32 (tensor cores) runs NHWC by default";
  EXPECT_EQ(PlacementOf(model, {{"prefer_nhwc", "0"}}).nhwc, 0);
}

TEST_F(CudaNhwcTest, Float16RunsNhwcByDefault) {
  const std::string model = ToFloat16Model(SmallConvNetModel());
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 16, 16}, 22, -1.0, 1.0);
  const Tensor half_x = HalfOf(x);
  const Tensor expected = RunOnCpu(SmallConvNetModel(), {{"x", Value(x)}})[0];
  const Tensor nchw = RunOnCuda(model, {{"x", Value(half_x)}}, {{"prefer_nhwc", "0"}})[0];
  EXPECT_EQ(PlacementOf(model, {{"prefer_nhwc", "0"}}).nhwc, 0);
  for (const char* search : {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}) {
    const ProviderOptions options = {{"cudnn_conv_algo_search", search}};
    const Placement p = PlacementOf(model, options);
    EXPECT_EQ(p.elsewhere, 0);
    EXPECT_EQ(p.nhwc, 4);
    const Tensor nhwc = RunOnCuda(model, {{"x", Value(half_x)}}, options)[0];
    ExpectClose(nchw, nhwc, 2e-3, std::string("NHWC vs NCHW, ") + search);
    ExpectClose(expected, nhwc, 1e-2, std::string("NHWC float16 vs CPU float32, ") + search);
  }
}

TEST_F(CudaNhwcTest, DepthwiseConvWithClipAndAveragePool) {
  const std::string model = DepthwiseModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 12, 12}, 23, -2.0, 2.0);
  const Tensor expected = RunOnCpu(model, {{"x", Value(x)}})[0];
  const ProviderOptions nhwc = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}};
  const Placement p = PlacementOf(model, nhwc);
  EXPECT_EQ(p.elsewhere, 0);
  EXPECT_EQ(p.nhwc, 3) << "depthwise (Clip fused), pointwise, average pool";
  const Tensor y = RunOnCuda(model, {{"x", Value(x)}}, nhwc)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 16, 6, 6}));
  ExpectClose(expected, y, 1e-5, "float32");
  const std::string half_model = ToFloat16Model(model);
  EXPECT_EQ(PlacementOf(half_model, {}).nhwc, 3);
  ExpectClose(expected, RunOnCuda(half_model, {{"x", Value(HalfOf(x))}})[0], 1e-2, "float16");
}

// NHWC global average pooling over large images (the squeeze-excitation blocks of PP-OCRv4's backbone pool
// 160x160 maps of 24-96 channels): partial sums per chunk of positions, then per channel. Channel counts off the
// 32-channel tile, several images, one position, float16.
TEST_F(CudaNhwcTest, GlobalAveragePoolOverLargeImagesMatchesTheCpu) {
  for (const Shape& shape : {Shape{1, 1, 160, 160, 96}, Shape{2, 1, 97, 131, 40}, Shape{3, 1, 1, 1, 24},
                             Shape{1, 1, 7, 9, 384}}) {
    SCOPED_TRACE(shape.ToString());
    OpTester t("NchwcGlobalAveragePool", 1, "ai.tessera");
    t.Input("X", RandomTensor(kF32, shape, 31, -1, 3)).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "NchwcGlobalAveragePool", 1, {RandomTensor(kF16, shape, 32, -1, 3)},
        [](OpTester& o, const std::vector<Tensor>& in) { o.Input("X", in[0]); }, 2e-3, 2e-3, "ai.tessera");
  }
}

// NHWC max and average pooling against the CPU EP's blocked kernels: the word kernel where the channels fill 16-byte
// words (8 float16 / 4 float32), the element kernel otherwise; pads, ceil_mode, dilations, count_include_pad.
TEST_F(CudaNhwcTest, NhwcPoolingMatchesTheCpu) {
  struct PoolCase {
    const char* op;
    Shape x;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil_mode = 0, count_include_pad = 0;
  };
  const std::vector<PoolCase> cases = {
      {"NchwcMaxPool", {1, 1, 112, 112, 64}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0},  // ResNet-50's, after its stem
      {"NchwcMaxPool", {2, 1, 9, 10, 24}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}, 1, 0},
      {"NchwcMaxPool", {1, 1, 11, 11, 16}, {3, 3}, {1, 1}, {0, 1, 2, 1}, {2, 2}, 0, 0},
      {"NchwcAveragePool", {1, 1, 12, 12, 32}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0},
      {"NchwcAveragePool", {1, 1, 12, 12, 32}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 1},
      {"NchwcAveragePool", {2, 1, 7, 9, 12}, {2, 3}, {2, 2}, {0, 0, 0, 0}, {}, 1, 1},  // float32 words only
      {"NchwcMaxPool", {1, 1, 8, 8, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}, 0, 0},        // no whole words
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + c.x.ToString());
    const auto build = [&](OpTester& t, const std::vector<Tensor>& in) {
      t.Attr("kernel_shape", c.kernel).Attr("strides", c.strides).Attr("pads", c.pads).Attr("ceil_mode", c.ceil_mode);
      if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
      if (std::string(c.op) == "NchwcAveragePool") t.Attr("count_include_pad", c.count_include_pad);
      t.Input("X", in[0]);
    };
    OpTester t(c.op, 1, "ai.tessera");
    build(t, {RandomTensor(kF32, c.x, 63, -2, 2)});
    t.OutputName("Y").Tolerance(1e-6, 1e-6);
    CompareOnCuda(t);
    CompareFloat16WithCpu(c.op, 1, {RandomTensor(kF16, c.x, 64, -2, 2)}, build, 2e-3, 2e-3, "ai.tessera");
  }
}

// SiLU fuses into the convolutions' epilogue (Swish) and the Split / Concat between them stay NHWC.
TEST_F(CudaNhwcTest, SplitConcatBlockWithSiluStaysNhwc) {
  const std::string model = SplitConcatSiluModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 16, 10, 10}, 34, -1.0, 1.0);
  const Tensor expected = RunOnCpu(model, {{"x", Value(x)}})[0];
  const ProviderOptions nhwc = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}};
  SessionOptions options;
  options.AddProvider(kCudaEpName, nhwc);
  Session session = MakeSession(model, options, TestEnv());
  std::map<std::string, int> ops;
  for (const PartitionEntry& e : session.Partition())
    if (!e.is_copy) ++ops[e.op_type];
  EXPECT_EQ(ops["NchwcConv"], 3);
  EXPECT_EQ(ops["Sigmoid"], 0) << "SiLU runs in the convolutions' epilogue";
  EXPECT_EQ(ops["ReorderFromBlocked"], 1) << "only the graph output goes back to NCHW";
  ExpectClose(expected, RunOnCuda(model, {{"x", Value(x)}}, nhwc)[0], 1e-5, "float32");
  const std::string half_model = ToFloat16Model(model);
  ExpectClose(expected, RunOnCuda(half_model, {{"x", Value(HalfOf(x))}})[0], 2e-2, "float16");
}

// Float32 (no TF32) NHWC sessions of every kind against the CPU's `expected`: eager (automatic graphs off), explicit
// CUDA graphs, automatic graphs.
void ExpectFloat32SessionsMatch(const std::string& model, const Session::NamedValues& feeds, const Tensor& expected,
                                const std::string& what) {
  const ProviderOptions eager = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"automatic_cuda_graphs", "0"}};
  ExpectClose(expected, RunOnCuda(model, feeds, eager)[0], 1e-5, "float32 eager, " + what);
  const ProviderOptions graphs = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"enable_cuda_graph", "1"}};
  ExpectClose(expected, RunOnCuda(model, feeds, graphs)[0], 1e-5, "float32, graph session, " + what);
  const ProviderOptions replayed = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}};
  ExpectClose(expected, RunOnCuda(model, feeds, replayed)[0], 1e-5, "float32, automatic graphs, " + what);
}

// Tessera's depthwise kernels (sessions whose runs execute the kernels: automatic graphs off) against the CPU, both
// the compile-time 3 x 3 / 5 x 5 windows and the general kernel: odd channel counts (one channel per thread), even
// ones (pairs), channel counts and maps large enough for 16-byte accesses (4 floats, 8 halves) and for 2 and 4 output
// pixels per thread, strides, dilations, rectangular filters,
// no bias, a fused residual and activation; float32 and float16. Sessions whose runs are replayed (CUDA graphs,
// explicit or automatic) time it against cuDNN (either may win) and must agree too.
TEST_F(CudaNhwcTest, DepthwiseKernelMatchesTheCpuOverItsGeometries) {
  std::vector<DepthwiseCase> cases;
  cases.push_back({});
  cases.push_back({.channels = 9});
  cases.push_back({.channels = 10, .stride = 2, .bias = false});
  cases.push_back({.channels = 9, .kernel_h = 3, .kernel_w = 5, .residual = true, .relu = true});
  cases.push_back({.channels = 16, .dilation = 2, .residual = true});
  cases.push_back({.channels = 32, .kernel_h = 5, .kernel_w = 5, .stride = 2, .pad = 0, .relu = true});
  // 1.3 M outputs: two pixels per thread (DepthwiseWindow); with a 3 x 5 window the general kernel's 4 floats x 4
  // pixels / 8 halves x 2 pixels per thread.
  cases.push_back({.channels = 32, .residual = true, .relu = true, .batch = 1, .height = 200, .width = 203});
  cases.push_back({.channels = 32, .kernel_w = 5, .residual = true, .batch = 1, .height = 200, .width = 203});
  // 2.6 M outputs, 5x5 stride 2 (the right edge's last strip is partial).
  cases.push_back({.channels = 64, .kernel_h = 5, .kernel_w = 5, .stride = 2, .pad = 2, .batch = 1, .height = 402,
                   .width = 405});
  // 12 channels: no 16-byte access (pairs and quads only where they divide).
  cases.push_back({.channels = 12, .stride = 2, .dilation = 2, .pad = 2, .batch = 1, .height = 300, .width = 301});
  // MobileNetV2's geometries for the compile-time windows (depthwise_conv.cu's DepthwiseWindow): stride 2 with two
  // pixels per thread and a last strip of one (57 outputs wide), a deep small map with its residual, a 5 x 5 window
  // at stride 1 without padding, 12 channels (quads in float16, no 16-byte access).
  cases.push_back({.channels = 96, .stride = 2, .batch = 1, .height = 113, .width = 113});
  cases.push_back({.channels = 160, .residual = true, .relu = true, .batch = 1, .height = 7, .width = 7});
  cases.push_back({.channels = 24, .kernel_h = 5, .kernel_w = 5, .pad = 0, .batch = 1, .height = 30, .width = 29});
  cases.push_back({.channels = 12, .stride = 2, .batch = 1, .height = 64, .width = 63});
  for (const DepthwiseCase& c : cases) {
    const std::string model = DepthwiseCaseModel(c);
    const Session::NamedValues feeds = {{"x", Value(RandomTensor(DataType::kFloat, Shape(c.InputDims()), 33, -2, 2))}};
    const Tensor expected = RunOnCpu(model, feeds)[0];
    const ProviderOptions eager = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"automatic_cuda_graphs", "0"}};
    EXPECT_EQ(PlacementOf(model, eager).nhwc, 2) << "both convolutions NHWC, " << c.Describe();
    ExpectFloat32SessionsMatch(model, feeds, expected, c.Describe());
    Session::NamedValues half_feeds;
    for (const auto& [name, value] : feeds) half_feeds.push_back({name, Value(HalfOf(value.tensor()))});
    ExpectClose(expected, RunOnCuda(ToFloat16Model(model), half_feeds, {{"automatic_cuda_graphs", "0"}})[0], 1e-2,
                "float16 eager, " + c.Describe());
  }
}

// The pre convolution's Relu / Clip moved into the depthwise convolution (depthwise_input_activation ->
// ActivatedNchwcConv, applied by Tessera's depthwise kernel to each input it loads): against the CPU (which keeps
// the activation where it was) in every session kind, and bit for bit against the same CUDA session with the pass
// disabled in eager sessions (both run the same kernels there; the activation commutes with rounding). A residual
// of the depthwise convolution ("+ pre") reads the activated value too, so those cases keep the activation.
TEST_F(CudaNhwcTest, ActivationMovedIntoTheDepthwiseConvolutionMatches) {
  std::vector<DepthwiseCase> cases;
  cases.push_back({.pre_activation = "Clip"});  // MobileNetV2's ReLU6
  cases.push_back({.channels = 10, .stride = 2, .bias = false, .pre_activation = "Relu"});
  // A lower limit above zero: the padding taps stay zeros, not Clip(0) = 1.
  cases.push_back({.channels = 16, .kernel_h = 5, .kernel_w = 5, .pad = 2, .relu = true, .pre_activation = "Clip",
                   .clip_lo = 1.0f, .clip_hi = 4.0f});
  // 1.3 M outputs: two pixels per thread.
  cases.push_back({.channels = 32, .relu = true, .batch = 1, .height = 200, .width = 203, .pre_activation = "Clip"});
  // MobileNetV2's stride-2 layer: two pixels per thread, the padding taps zeros after the Clip too.
  cases.push_back({.channels = 96, .stride = 2, .batch = 1, .height = 113, .width = 113, .pre_activation = "Clip",
                   .clip_lo = 0.5f, .clip_hi = 6.0f});
  for (const DepthwiseCase& c : cases) {
    const std::string model = DepthwiseCaseModel(c);
    const Session::NamedValues feeds = {{"x", Value(RandomTensor(DataType::kFloat, Shape(c.InputDims()), 34, -2, 2))}};
    const Tensor expected = RunOnCpu(model, feeds)[0];
    const ProviderOptions eager = {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"automatic_cuda_graphs", "0"}};
    const Placement placement = PlacementOf(model, eager);
    EXPECT_EQ(placement.nhwc, 2) << c.Describe();
    EXPECT_EQ(placement.activated, 1) << "the activation moved, " << c.Describe();
    ExpectFloat32SessionsMatch(model, feeds, expected, c.Describe());
    Session::NamedValues half_feeds;
    for (const auto& [name, value] : feeds) half_feeds.push_back({name, Value(HalfOf(value.tensor()))});
    const std::string half_model = ToFloat16Model(model);
    const ProviderOptions half_eager = {{"automatic_cuda_graphs", "0"}};
    const Tensor half_fused = RunOnCuda(half_model, half_feeds, half_eager)[0];
    ExpectClose(expected, half_fused, 1e-2, "float16 eager, " + c.Describe());
    ExpectClose(expected, RunOnCuda(half_model, half_feeds)[0], 1e-2, "float16, automatic graphs, " + c.Describe());
    // Eager sessions with and without the pass, cuDNN's first heuristic plan for "pre" in both: identical bits.
    ProviderOptions exact = eager, half_exact = half_eager;
    exact["cudnn_conv_algo_search"] = half_exact["cudnn_conv_algo_search"] = "HEURISTIC";
    const auto expect_same_bits = [&](const std::string& m, const Session::NamedValues& f, const ProviderOptions& o) {
      const Tensor moved = RunOnCuda(m, f, o)[0];
      SessionOptions unmoved;
      unmoved.AddProvider(kCudaEpName, o);
      unmoved.config["session.disabled_optimizers"] = "depthwise_input_activation";
      Session session = MakeSession(m, unmoved, TestEnv());
      const Tensor reference = session.Run(f)[0].tensor();
      ASSERT_EQ(reference.SizeInBytes(), moved.SizeInBytes());
      EXPECT_EQ(std::memcmp(reference.raw_data(), moved.raw_data(), reference.SizeInBytes()), 0)
          << DataTypeName(reference.type()) << " eager: the moved activation changed bits, " << c.Describe();
    };
    expect_same_bits(model, feeds, exact);
    expect_same_bits(half_model, half_feeds, half_exact);
  }
}

// One session, the input shape changing from run to run (batch and image size), eager and with automatic graphs:
// each convolution's step memo (conv.cc) must resolve a new geometry and plan whenever the shapes change, and
// take the remembered ones only for the shapes they were made for.
TEST_F(CudaNhwcTest, ConvolutionsFollowInputShapesThatChangeEveryRun) {
  GraphBuilder builder;
  builder.FloatInitializer("w1", {16, 8, 3, 3}, RandomTensor(DataType::kFloat, {16, 8, 3, 3}, 51, -0.3, 0.3).ToVector<float>())
      .FloatInitializer("b1", {16}, RandomTensor(DataType::kFloat, {16}, 52, -0.3, 0.3).ToVector<float>())
      .FloatInitializer("w2", {8, 16, 1, 1}, RandomTensor(DataType::kFloat, {8, 16, 1, 1}, 53, -0.3, 0.3).ToVector<float>())
      .Input("x", {-1, 8, -1, -1})
      .Node("Conv", {"x", "w1", "b1"}, {"c1"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("Conv", {"r1", "w2"}, {"c2"})
      .Node("Add", {"c2", "x"}, {"y"})
      .Output("y");
  const std::string model = builder.Serialize();
  const std::vector<Shape> shapes = {{1, 8, 12, 12}, {2, 8, 9, 7}, {1, 8, 12, 12}, {2, 8, 9, 7},
                                     {1, 8, 5, 16}, {1, 8, 12, 12}, {1, 8, 12, 12}, {2, 8, 9, 7}};
  for (const char* automatic : {"0", "1"}) {
    SessionOptions options;
    options.AddProvider(kCudaEpName, {{"prefer_nhwc", "1"}, {"use_tf32", "0"}, {"automatic_cuda_graphs", automatic}});
    Session session = MakeSession(model, options, TestEnv());
    for (size_t run = 0; run < shapes.size(); ++run) {
      const Tensor x = RandomTensor(DataType::kFloat, shapes[run], 60 + static_cast<uint32_t>(run), -1.0, 1.0);
      const Tensor expected = RunOnCpu(model, {{"x", Value(x)}})[0];
      const Tensor actual = session.Run({{"x", Value(x)}})[0].tensor();
      ExpectClose(expected, actual, 1e-5,
                  std::string("automatic_cuda_graphs ") + automatic + ", run " + std::to_string(run) + ", x " +
                      shapes[run].ToString());
    }
  }
  // One convolution runs NHWC and one NCHW (the second, whose residual is the NCHW input), so both layouts' paths
  // through the memo are exercised (a memo keyed without X's shape failed this test on an H200).
  EXPECT_EQ(PlacementOf(model, {{"prefer_nhwc", "1"}}).nhwc, 1);
}

}  // namespace
}  // namespace tessera::test
