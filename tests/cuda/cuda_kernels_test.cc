// Every CUDA kernel against the CPU EP: float32 through OpTester::CompareWithCpu, float16 against the
// CPU's float32 result on the same values.
#include <optional>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaKernelTest = CudaTest;

constexpr DataType kF16 = DataType::kFloat16;
// TF32 (use_tf32 = 1, the default) rounds float32 operands of Conv / Gemm / MatMul to 10-bit mantissas.
constexpr double kTf32Tolerance = 1e-2;
constexpr double kHalfAbsolute = 2e-2, kHalfRelative = 1e-2;

// ---- elementwise ------------------------------------------------------------------------------------

TEST_F(CudaKernelTest, BinaryOpsWithAndWithoutBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{1}, {5, 2}}, {{}, {3}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : shapes) {
      OpTester t(op, 14);
      t.Input("A", RandomTensor(kF32, a, 1)).Input("B", RandomTensor(kF32, b, 2, 0.5, 2.0)).OutputName("C");
      t.CompareWithCpu({"cuda"});
      OpTester half(op, 14);
      half.Input("A", RandomTensor(kF16, a, 3)).Input("B", RandomTensor(kF16, b, 4, 0.5, 2.0)).OutputName("C");
      half.CompareWithCpu({"cuda"});
    }
  }
}

TEST_F(CudaKernelTest, Activations) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh"}) {
    OpTester t(op, 14);
    t.Input("X", RandomTensor(kF32, {3, 5, 7}, 5, -4.0, 4.0)).OutputName("Y");
    t.CompareWithCpu({"cuda"});
    CompareFloat16WithCpu(
        op, 14, {RandomTensor(kF16, {3, 5, 7}, 6, -4.0, 4.0)},
        [](OpTester& o, const std::vector<Tensor>& in) { o.Input("X", in[0]); }, 2e-3, 2e-3);
  }
}

TEST_F(CudaKernelTest, ClipWithInputsAndWithAttributes) {
  OpTester t("Clip", 13);
  t.Input("X", RandomTensor(kF32, {4, 9}, 7, -3.0, 3.0))
      .Input("min", Tensor::FromVector<float>({}, {-0.5f}))
      .Input("max", Tensor::FromVector<float>({}, {1.25f}))
      .OutputName("Y");
  t.CompareWithCpu({"cuda"});
  OpTester only_max("Clip", 13);
  only_max.Input("X", RandomTensor(kF32, {10}, 8, -3.0, 3.0)).OmittedInput();
  only_max.Input("max", Tensor::FromVector<float>({}, {0.0f})).OutputName("Y");
  only_max.CompareWithCpu({"cuda"});
  OpTester legacy("Clip", 6);
  legacy.Attr("min", -0.25f).Attr("max", 0.5f).Input("X", RandomTensor(kF32, {17}, 9)).OutputName("Y");
  legacy.CompareWithCpu({"cuda"});
}

// Pow: a scalar exponent (fast paths for 2 and 0.5) or a tensor of exponents of any numeric type, broadcast.
TEST_F(CudaKernelTest, PowWithScalarAndTensorExponents) {
  const Tensor x = RandomTensor(kF32, {2, 3}, 81, 0.5, 2.0);
  for (const Tensor& e : {Tensor::FromVector<float>({}, {2.0f}), Tensor::FromVector<float>({}, {0.5f}),
                          Tensor::FromVector<float>({3}, {1.0f, -2.0f, 3.0f}),
                          Tensor::FromVector<int64_t>({2, 3}, {0, 1, 2, 3, -1, 2}),
                          Tensor::FromVector<int32_t>({1, 3}, {2, 3, 1})}) {
    OpTester t("Pow", 15);
    t.Input("X", x).Input("E", e, true).OutputName("Y").Tolerance(1e-5, 1e-5);
    t.CompareWithCpu({"cuda"});
  }
  CompareFloat16WithCpu(
      "Pow", 15, {RandomTensor(kF16, {2, 3}, 82, 0.5, 2.0), Tensor::FromVector<float>({3}, {1.0f, 2.0f, 0.5f})},
      [](OpTester& t, const std::vector<Tensor>& in) { t.Input("X", in[0]).Input("E", in[1], true); },
      kHalfAbsolute, kHalfRelative);
}

// ---- Conv ----------------------------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  bool bias = true;
};

void AddConvAttributes(OpTester& t, const ConvCase& c) {
  if (!c.strides.empty()) t.Attr("strides", c.strides);
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
  t.Attr("group", c.group);
}

std::vector<ConvCase> ConvCases() {
  return {
      {{1, 3, 12, 12}, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 1, true},           // 3x3, same padding
      {{2, 8, 9, 11}, {16, 8, 1, 1}, {2, 2}, {}, {}, 1, false},                     // 1x1 stride 2
      {{1, 4, 16, 16}, {4, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 4, true},            // depthwise
      {{1, 6, 10, 10}, {6, 3, 3, 3}, {2, 1}, {2, 2, 2, 2}, {2, 2}, 2, true},        // groups, dilation
      {{1, 3, 20, 20}, {5, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {}, 1, true},            // ResNet stem shape
      {{2, 3, 15}, {4, 3, 3}, {1}, {1, 1}, {}, 1, true},                            // 1-D
      {{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {}, 1, true},  // 3-D
  };
}

TEST_F(CudaKernelTest, ConvMatchesCpuForEveryAlgorithmSearch) {
  for (const char* search : {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}) {
    for (const ConvCase& c : ConvCases()) {
      OpTester t("Conv", 11);
      AddConvAttributes(t, c);
      const Tensor x = RandomTensor(kF32, c.x, 11), w = RandomTensor(kF32, c.w, 12);
      const Tensor b = RandomTensor(kF32, {c.w[0]}, 13);
      t.Input("X", x).Input("W", w, true);
      if (c.bias) t.Input("B", b, true);
      t.OutputName("Y");
      const std::vector<Tensor> expected = t.RunOn("cpu");
      Session::NamedValues feeds = {{"X", x}};
      const std::vector<Tensor> actual =
          RunOnCuda(t.SerializedModel(), feeds, {{"cudnn_conv_algo_search", search}, {"use_tf32", "0"}});
      EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "") << search << " " << c.x.ToString();
    }
  }
}

TEST_F(CudaKernelTest, ConvWithTf32AndPadding1dVariants) {
  for (const ConvCase& c : ConvCases()) {
    OpTester t("Conv", 11);
    AddConvAttributes(t, c);
    t.Input("X", RandomTensor(kF32, c.x, 21)).Input("W", RandomTensor(kF32, c.w, 22), true);
    if (c.bias) t.Input("B", RandomTensor(kF32, {c.w[0]}, 23), true);
    t.OutputName("Y").Tolerance(kTf32Tolerance, kTf32Tolerance);
    t.CompareWithCpu({"cuda"});
  }
  OpTester t("Conv", 11);
  t.Attr("pads", std::vector<int64_t>{2, 2});
  const Tensor x = RandomTensor(kF32, {2, 3, 31}, 24);
  t.Input("X", x).Input("W", RandomTensor(kF32, {5, 3, 5}, 25), true).OutputName("Y");
  const std::vector<Tensor> expected = t.RunOn("cpu");
  for (const char* nc1d : {"0", "1"}) {
    const std::vector<Tensor> actual =
        RunOnCuda(t.SerializedModel(), {{"X", x}}, {{"cudnn_conv1d_pad_to_nc1d", nc1d}, {"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "") << "pad_to_nc1d " << nc1d;
  }
}

TEST_F(CudaKernelTest, ConvFloat16) {
  for (const ConvCase& c : ConvCases()) {
    std::vector<Tensor> inputs = {RandomTensor(kF16, c.x, 31), RandomTensor(kF16, c.w, 32),
                                  RandomTensor(kF16, {c.w[0]}, 33)};
    CompareFloat16WithCpu(
        "Conv", 11, inputs,
        [&c](OpTester& t, const std::vector<Tensor>& in) {
          AddConvAttributes(t, c);
          t.Input("X", in[0]).Input("W", in[1], true);
          if (c.bias) t.Input("B", in[2], true);
        },
        kHalfAbsolute, kHalfRelative);
  }
}

// ai.tessera::FusedConv: the single cuDNN call (Relu; identity with implicit-precomp GEMM, which DEFAULT
// picks) and the epilogue kernel (other activations, broadcast residuals), against the CPU's FusedConv.
struct FusedConvCase {
  std::string activation;
  std::vector<float> params;
  bool bias = true;
  std::optional<Shape> z;  // residual shape; none when absent
};

std::vector<FusedConvCase> FusedConvCases() {
  const Shape same{2, 8, 12, 12};
  return {
      {"Relu", {}, true, std::nullopt},       {"Relu", {}, true, same},       {"Relu", {}, false, same},
      {"", {}, true, same},                   {"", {}, false, same},          {"LeakyRelu", {0.2f}, true, same},
      {"Relu", {}, true, Shape{1, 8, 1, 1}},  {"Clip", {0.0f, 6.0f}, true, std::nullopt},
      {"Sigmoid", {}, false, std::nullopt},   {"HardSigmoid", {0.3f, 0.4f}, true, same},
      {"HardSwish", {}, true, std::nullopt},  {"Tanh", {}, true, same},       {"Swish", {1.0f}, true, same},
  };
}

void BuildFusedConv(OpTester& t, const FusedConvCase& c, const std::vector<Tensor>& in) {
  t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  if (!c.activation.empty()) t.Attr("activation", c.activation);
  if (!c.params.empty()) t.Attr("activation_params", c.params);
  t.Input("X", in[0]).Input("W", in[1], true);
  if (c.bias)
    t.Input("B", in[2], true);
  else if (c.z)
    t.OmittedInput();
  if (c.z) t.Input("Z", in[3]);
}

TEST_F(CudaKernelTest, FusedConvMatchesCpu) {
  for (const char* search : {"EXHAUSTIVE", "DEFAULT"}) {
    for (const FusedConvCase& c : FusedConvCases()) {
      const std::vector<Tensor> in = {RandomTensor(kF32, {2, 4, 12, 12}, 51), RandomTensor(kF32, {8, 4, 3, 3}, 52),
                                      RandomTensor(kF32, {8}, 53),
                                      RandomTensor(kF32, c.z.value_or(Shape{1}), 54, -2.0, 2.0)};
      OpTester t("FusedConv", 1, "ai.tessera");
      BuildFusedConv(t, c, in);
      t.OutputName("Y");
      const std::vector<Tensor> expected = t.RunOn("cpu");
      Session::NamedValues feeds = {{"X", in[0]}};
      if (c.z) feeds.push_back({"Z", in[3]});
      const std::vector<Tensor> actual =
          RunOnCuda(t.SerializedModel(), feeds, {{"cudnn_conv_algo_search", search}, {"use_tf32", "0"}});
      EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "")
          << search << " activation '" << c.activation << "' bias " << c.bias << " z "
          << (c.z ? c.z->ToString() : "none");
    }
  }
}

TEST_F(CudaKernelTest, FusedConvFloat16) {
  for (const FusedConvCase& c : FusedConvCases()) {
    const std::vector<Tensor> in = {RandomTensor(kF16, {2, 4, 12, 12}, 61), RandomTensor(kF16, {8, 4, 3, 3}, 62),
                                    RandomTensor(kF16, {8}, 63),
                                    RandomTensor(kF16, c.z.value_or(Shape{1}), 64, -2.0, 2.0)};
    CompareFloat16WithCpu(
        "FusedConv", 1, in, [&c](OpTester& t, const std::vector<Tensor>& inputs) { BuildFusedConv(t, c, inputs); },
        kHalfAbsolute, kHalfRelative, "ai.tessera");
  }
}

// At level all the fusion pass turns the miniature ResNet's Conv -> Relu and Conv -> Add -> Relu into
// FusedConv on the CUDA EP; the outputs match the unfused session's.
TEST_F(CudaKernelTest, ConvActivationFusionRunsOnCuda) {
  const std::string model = SmallConvNetModel();
  const Tensor x = RandomTensor(kF32, {1, 3, 16, 16}, 71);
  std::vector<Tensor> outputs;
  for (OptimizationLevel level : {OptimizationLevel::kExtended, OptimizationLevel::kAll}) {
    SessionOptions options = OptionsFor("cuda");
    options.optimization_level = level;
    options.providers.front().options = {{"use_tf32", "0"}};
    Session session(TestEnv(), model.data(), model.size(), options);
    size_t fused = 0;
    for (const PartitionEntry& e : session.Partition()) {
      if (e.is_copy) continue;
      EXPECT_EQ(e.ep, "CUDAExecutionProvider") << e.node_name;
      fused += e.op_type == "FusedConv";
    }
    EXPECT_EQ(fused > 0, level == OptimizationLevel::kAll);
    outputs.push_back(ToHost(session.Run({{"x", x}})[0].tensor()));
  }
  EXPECT_EQ(CompareTensors(outputs[0], outputs[1], 1e-5, 1e-4), "");
}

// A Clip after a convolution's activation (MI-GAN's LeakyRelu -> Clip) goes into the CPU EP's FusedConv as its
// activation_clip; the CUDA EP's FusedConv does not take that extension attribute, so on CUDA the Clip stays a
// node of its own and everything still runs on the GPU.
TEST_F(CudaKernelTest, TheClipAfterAConvolutionsActivationStaysANodeOnCuda) {
  GraphBuilder builder;
  builder.FloatInitializer("w", {8, 4, 3, 3}, RandomTensor(kF32, {8, 4, 3, 3}, 81, -0.5, 0.5).ToVector<float>())
      .FloatInitializer("lo", {}, {-0.3f})
      .FloatInitializer("hi", {}, {0.4f})
      .Input("x", {1, 4, 10, 10})
      .Node("Conv", {"x", "w"}, {"c"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("LeakyRelu", {"c"}, {"a"}).FloatAttribute("alpha", 0.2f)
      .Node("Clip", {"a", "lo", "hi"}, {"y"})
      .Output("y");
  const std::string model = builder.Serialize();
  const Tensor x = RandomTensor(kF32, {1, 4, 10, 10}, 82, -1.0, 1.0);
  SessionOptions options = OptionsFor("cuda");
  options.providers.front().options = {{"use_tf32", "0"}};
  Session session(TestEnv(), model.data(), model.size(), options);
  size_t clips = 0;
  for (const PartitionEntry& e : session.Partition()) {
    if (e.is_copy) continue;
    EXPECT_EQ(e.ep, "CUDAExecutionProvider") << e.node_name << " (" << e.op_type << ")";
    clips += e.op_type == "Clip";
  }
  EXPECT_EQ(clips, 1u);
  SessionOptions cpu = OptionsFor("cpu");
  Session reference(TestEnv(), model.data(), model.size(), cpu);
  EXPECT_EQ(CompareTensors(ToHost(reference.Run({{"x", x}})[0].tensor()), ToHost(session.Run({{"x", x}})[0].tensor()),
                           1e-5, 1e-4),
            "");
}

// ai.tessera::FusedMatMul (alpha in cuBLAS, bias + activation + addend in one epilogue kernel) against the
// CPU's FusedMatMul.
struct FusedMatMulCase {
  Shape a, b;
  float alpha = 1.0f;
  bool bias = false;
  std::optional<Shape> addend;
  std::string activation;
  std::vector<float> params;
};

std::vector<FusedMatMulCase> FusedMatMulCases() {
  return {
      {{2, 3, 8}, {8, 5}, 1.0f, true, std::nullopt, "Gelu", {}},                 // BERT's FFN
      {{2, 4, 6, 8}, {2, 4, 8, 6}, 0.125f, false, Shape{2, 1, 1, 6}, "", {}},     // attention scores + mask
      {{2, 3, 8}, {8, 5}, 1.0f, true, Shape{2, 3, 5}, "", {}},                    // projection + residual
      {{4, 8}, {8, 5}, 1.0f, false, std::nullopt, "Relu", {}},
      {{3, 4}, {4, 5}, 2.0f, true, Shape{2, 1, 5}, "LeakyRelu", {0.1f}},          // the addend widens Y
      {{5, 8}, {8, 3}, 1.0f, true, std::nullopt, "GeluTanh", {}},
      // cuBLASLt's epilogues: bias + ReLU, ReLU then an addend (a kernel), a batch with a bias.
      {{6, 16}, {16, 24}, 1.0f, true, std::nullopt, "Relu", {}},
      {{2, 3, 8}, {8, 5}, 1.0f, true, Shape{2, 3, 5}, "Relu", {}},
      {{2, 4, 6, 8}, {2, 4, 8, 6}, 0.5f, true, std::nullopt, "", {}},
      // A decoding step's rows (<= 4) against constant weights: launch::SmallRowsProduct, epilogue included.
      {{1, 1, 768}, {768, 2304}, 1.0f, true, std::nullopt, "", {}},                    // GPT-2's Q/K/V
      {{1, 1, 768}, {768, 3072}, 1.0f, true, std::nullopt, "GeluTanh", {}},            // its MLP
      {{1, 1, 3072}, {3072, 768}, 1.0f, true, Shape{1, 1, 768}, "", {}},               // and residual
      {{2, 64}, {64, 40}, 0.5f, false, std::nullopt, "Relu", {}},
      {{3, 1, 32}, {32, 7}, 1.0f, true, Shape{3, 1, 7}, "Gelu", {}},
      {{1, 12}, {12, 9}, 1.0f, true, std::nullopt, "", {}},  // k = 12: float16 rows are not whole 16-byte words
      // More words per lane than it loads before waiting for the kernel before it (4): the rest after.
      {{1, 1, 1024}, {1024, 4096}, 1.0f, true, std::nullopt, "", {}},
      {{2, 1, 2048}, {2048, 4096}, 1.0f, true, Shape{2, 1, 4096}, "Relu", {}},
      // The epilogue kernel after cuBLAS products of more rows: widths of whole and partial 16-byte words, addends.
      {{4, 32, 64}, {64, 48}, 1.0f, true, std::nullopt, "Gelu", {}},               // BERT's FFN
      {{2, 8, 16}, {16, 24}, 1.0f, true, Shape{2, 8, 24}, "Gelu", {}},             // with a same-shape addend
      {{3, 6, 16}, {16, 12}, 1.0f, true, std::nullopt, "Sigmoid", {}},
      {{2, 8, 16}, {16, 40}, 1.0f, true, Shape{8, 40}, "Tanh", {}},                // a broadcast addend
  };
}

void BuildFusedMatMul(OpTester& t, const FusedMatMulCase& c, const std::vector<Tensor>& in) {
  if (c.alpha != 1.0f) t.Attr("alpha", c.alpha);
  if (!c.activation.empty()) t.Attr("activation", c.activation);
  if (!c.params.empty()) t.Attr("activation_params", c.params);
  t.Input("A", in[0]).Input("B", in[1], true);
  if (c.bias)
    t.Input("bias", in[2], true);
  else if (c.addend)
    t.OmittedInput();
  if (c.addend) t.Input("addend", in[3]);
}

TEST_F(CudaKernelTest, FusedMatMulMatchesCpu) {
  for (const FusedMatMulCase& c : FusedMatMulCases()) {
    const std::vector<Tensor> in = {RandomTensor(kF32, c.a, 91), RandomTensor(kF32, c.b, 92),
                                    RandomTensor(kF32, {c.b[c.b.rank() - 1]}, 93),
                                    RandomTensor(kF32, c.addend.value_or(Shape{1}), 94)};
    OpTester t("FusedMatMul", 1, "ai.tessera");
    BuildFusedMatMul(t, c, in);
    t.OutputName("Y");
    const std::vector<Tensor> expected = t.RunOn("cpu");
    Session::NamedValues feeds = {{"A", in[0]}};
    if (c.addend) feeds.push_back({"addend", in[3]});
    const std::vector<Tensor> actual = RunOnCuda(t.SerializedModel(), feeds, {{"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "")
        << c.a.ToString() << " x " << c.b.ToString() << " activation '" << c.activation << "'";
  }
  for (const FusedMatMulCase& c : FusedMatMulCases()) {
    const std::vector<Tensor> in = {RandomTensor(kF16, c.a, 95), RandomTensor(kF16, c.b, 96),
                                    RandomTensor(kF16, {c.b[c.b.rank() - 1]}, 97),
                                    RandomTensor(kF16, c.addend.value_or(Shape{1}), 98)};
    CompareFloat16WithCpu(
        "FusedMatMul", 1, in, [&c](OpTester& t, const std::vector<Tensor>& inputs) { BuildFusedMatMul(t, c, inputs); },
        kHalfAbsolute, kHalfRelative, "ai.tessera");
  }
}

// At level all, MatMul -> Add(bias) -> Relu -> Add(residual) becomes one FusedMatMul on the CUDA EP.
TEST_F(CudaKernelTest, MatMulEpilogueFusionRunsOnCuda) {
  std::vector<float> w(64), bias(8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(static_cast<int>(i % 11) - 5);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.3f;
  const std::string model = GraphBuilder()
                                .Input("x", {2, 8})
                                .FloatInitializer("w", {8, 8}, w)
                                .FloatInitializer("bias", {8}, bias)
                                .Node("MatMul", {"x", "w"}, {"p"})
                                .Node("Add", {"p", "bias"}, {"q"})
                                .Node("Relu", {"q"}, {"r"})
                                .Node("Add", {"r", "x"}, {"y"})
                                .Output("y")
                                .Serialize();
  const Tensor x = RandomTensor(kF32, {2, 8}, 99);
  std::vector<Tensor> outputs;
  for (OptimizationLevel level : {OptimizationLevel::kExtended, OptimizationLevel::kAll}) {
    SessionOptions options = OptionsFor("cuda");
    options.optimization_level = level;
    options.providers.front().options = {{"use_tf32", "0"}};
    Session session(TestEnv(), model.data(), model.size(), options);
    size_t fused = 0;
    for (const PartitionEntry& e : session.Partition()) {
      if (e.is_copy) continue;
      EXPECT_EQ(e.ep, "CUDAExecutionProvider") << e.node_name;
      fused += e.op_type == "FusedMatMul";
    }
    EXPECT_EQ(fused, level == OptimizationLevel::kAll ? 1u : 0u);
    outputs.push_back(ToHost(session.Run({{"x", x}})[0].tensor()));
  }
  EXPECT_EQ(CompareTensors(outputs[0], outputs[1], 1e-5, 1e-5), "");
}

TEST_F(CudaKernelTest, AsymmetricPaddingFallsBackToCpu) {
  OpTester t("Conv", 11);
  t.Attr("pads", std::vector<int64_t>{0, 1, 1, 0});
  t.Input("X", RandomTensor(kF32, {1, 2, 6, 6}, 41)).Input("W", RandomTensor(kF32, {3, 2, 3, 3}, 42), true);
  t.OutputName("Y");
  t.CompareWithCpu({"cuda"});
  SessionOptions options = OptionsFor("cuda");
  const std::string model = t.SerializedModel();
  Session session(TestEnv(), model.data(), model.size(), options);
  for (const PartitionEntry& e : session.Partition()) {
    if (!e.is_copy) {
      EXPECT_EQ(e.ep, "CPUExecutionProvider") << e.node_name;
    }
  }
}

// ---- BatchNormalization, pooling --------------------------------------------------------------------

TEST_F(CudaKernelTest, BatchNormalizationInference) {
  for (const int opset : {9, 15}) {
    OpTester t("BatchNormalization", opset);
    t.Attr("epsilon", 1e-3f);
    t.Input("X", RandomTensor(kF32, {2, 6, 5, 7}, 51))
        .Input("scale", RandomTensor(kF32, {6}, 52), true)
        .Input("B", RandomTensor(kF32, {6}, 53), true)
        .Input("mean", RandomTensor(kF32, {6}, 54), true)
        .Input("var", RandomTensor(kF32, {6}, 55, 0.1, 2.0), true)
        .OutputName("Y");
    t.CompareWithCpu({"cuda"});
  }
  std::vector<Tensor> inputs = {RandomTensor(kF16, {1, 4, 8, 8}, 56), RandomTensor(kF16, {4}, 57),
                                RandomTensor(kF16, {4}, 58), RandomTensor(kF16, {4}, 59),
                                RandomTensor(kF16, {4}, 60, 0.1, 2.0)};
  CompareFloat16WithCpu(
      "BatchNormalization", 15, inputs,
      [](OpTester& t, const std::vector<Tensor>& in) {
        t.Input("X", in[0]).Input("scale", in[1], true).Input("B", in[2], true).Input("mean", in[3], true);
        t.Input("var", in[4], true);
      },
      kHalfAbsolute, kHalfRelative);
}

TEST_F(CudaKernelTest, MaxAndAveragePool) {
  struct PoolCase {
    const char* op;
    Shape x;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil_mode = 0, count_include_pad = 0;
  };
  const std::vector<PoolCase> cases = {
      {"MaxPool", {1, 4, 16, 16}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0},  // ResNet's
      {"MaxPool", {2, 3, 9, 10}, {2, 2}, {2, 2}, {}, {}, 1, 0},
      {"MaxPool", {1, 2, 11, 11}, {3, 3}, {1, 1}, {0, 1, 2, 1}, {2, 2}, 0, 0},
      {"MaxPool", {2, 3, 13}, {3}, {2}, {1, 1}, {}, 0, 0},
      {"AveragePool", {1, 4, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0},
      {"AveragePool", {1, 4, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 1},
      {"AveragePool", {2, 2, 7, 9}, {2, 3}, {2, 2}, {}, {}, 1, 0},
  };
  for (const PoolCase& c : cases) {
    OpTester t(c.op, 19);
    t.Attr("kernel_shape", c.kernel).Attr("ceil_mode", c.ceil_mode);
    if (!c.strides.empty()) t.Attr("strides", c.strides);
    if (!c.pads.empty()) t.Attr("pads", c.pads);
    if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
    if (std::string(c.op) == "AveragePool") t.Attr("count_include_pad", c.count_include_pad);
    t.Input("X", RandomTensor(kF32, c.x, 61)).OutputName("Y");
    t.CompareWithCpu({"cuda"});
  }
  CompareFloat16WithCpu(
      "MaxPool", 12, {RandomTensor(kF16, {1, 8, 14, 14}, 62)},
      [](OpTester& t, const std::vector<Tensor>& in) {
        t.Attr("kernel_shape", std::vector<int64_t>{3, 3}).Attr("strides", std::vector<int64_t>{2, 2});
        t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Input("X", in[0]);
      },
      1e-3, 1e-3);
}

TEST_F(CudaKernelTest, GlobalAveragePool) {
  OpTester t("GlobalAveragePool", 1);
  t.Input("X", RandomTensor(kF32, {2, 64, 7, 7}, 71)).OutputName("Y");
  t.CompareWithCpu({"cuda"});
  OpTester big("GlobalAveragePool", 1);
  big.Input("X", RandomTensor(kF32, {1, 3, 40, 50}, 72)).OutputName("Y");
  big.CompareWithCpu({"cuda"});
  CompareFloat16WithCpu(
      "GlobalAveragePool", 1, {RandomTensor(kF16, {1, 32, 7, 7}, 73)},
      [](OpTester& t, const std::vector<Tensor>& in) { t.Input("X", in[0]); }, 2e-3, 2e-3);
}

// ---- Gemm, MatMul ---------------------------------------------------------------------------------------

TEST_F(CudaKernelTest, GemmWithTransposesAndBroadcastC) {
  struct GemmCase {
    Shape a, b, c;
    int64_t trans_a, trans_b;
    float alpha, beta;
  };
  const std::vector<GemmCase> cases = {
      {{4, 7}, {7, 5}, {5}, 0, 0, 1.0f, 1.0f},      {{7, 4}, {7, 5}, {4, 5}, 1, 0, 0.5f, 2.0f},
      {{4, 7}, {5, 7}, {4, 1}, 0, 1, 1.0f, 1.0f},   {{7, 4}, {5, 7}, {}, 1, 1, 2.0f, 0.5f},
      {{1, 2048}, {1000, 2048}, {1000}, 0, 1, 1.0f, 1.0f},  // ResNet-50's classifier
      // C as cuBLASLt's bias ([N] or [1, N] with beta 1), as its C matrix ([M, N]), or broadcast into Y first.
      {{3, 6}, {6, 9}, {1, 9}, 0, 0, 1.0f, 1.0f},   {{3, 6}, {6, 9}, {9}, 0, 0, 1.0f, 0.5f},
      {{3, 6}, {6, 9}, {3, 9}, 0, 0, 1.0f, 1.0f},   {{1, 6}, {6, 9}, {1, 9}, 0, 0, 1.0f, 1.0f},
  };
  for (const GemmCase& c : cases) {
    OpTester t("Gemm", 13);
    t.Attr("transA", c.trans_a).Attr("transB", c.trans_b).Attr("alpha", c.alpha).Attr("beta", c.beta);
    t.Input("A", RandomTensor(kF32, c.a, 81)).Input("B", RandomTensor(kF32, c.b, 82), true);
    t.Input("C", RandomTensor(kF32, c.c, 83), true).OutputName("Y").Tolerance(kTf32Tolerance * 4, kTf32Tolerance);
    t.CompareWithCpu({"cuda"});
    OpTester exact("Gemm", 13);
    exact.Attr("transA", c.trans_a).Attr("transB", c.trans_b).Attr("alpha", c.alpha).Attr("beta", c.beta);
    const Tensor a = RandomTensor(kF32, c.a, 84);
    exact.Input("A", a).Input("B", RandomTensor(kF32, c.b, 85), true).Input("C", RandomTensor(kF32, c.c, 86), true);
    exact.OutputName("Y");
    const std::vector<Tensor> expected = exact.RunOn("cpu");
    const std::vector<Tensor> actual = RunOnCuda(exact.SerializedModel(), {{"A", a}}, {{"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "") << c.a.ToString() << " x " << c.b.ToString();
  }
  for (const Shape& c_shape : {Shape{32}, Shape{8, 32}, Shape{8, 1}}) {
    CompareFloat16WithCpu(
        "Gemm", 13, {RandomTensor(kF16, {8, 64}, 87), RandomTensor(kF16, {32, 64}, 88), RandomTensor(kF16, c_shape, 89)},
        [](OpTester& t, const std::vector<Tensor>& in) {
          t.Attr("transB", int64_t{1}).Input("A", in[0]).Input("B", in[1], true).Input("C", in[2], true);
        },
        kHalfAbsolute, kHalfRelative);
  }
  OpTester no_c("Gemm", 13);
  const Tensor a = RandomTensor(kF32, {5, 7}, 80);
  no_c.Input("A", a).Input("B", RandomTensor(kF32, {7, 3}, 79), true).OutputName("Y");
  const std::vector<Tensor> expected = no_c.RunOn("cpu");
  const std::vector<Tensor> actual = RunOnCuda(no_c.SerializedModel(), {{"A", a}}, {{"use_tf32", "0"}});
  EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "");
}

TEST_F(CudaKernelTest, MatMulWithBatchBroadcastingAndVectors) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5, 6}, {6, 3}},       {{2, 4, 5, 6}, {6, 3}}, {{3, 5, 6}, {3, 6, 2}}, {{5, 6}, {2, 6, 3}},
      {{2, 1, 5, 6}, {3, 6, 4}}, {{6}, {6, 3}},       {{4, 6}, {6}},          {{6}, {6}}};
  for (const auto& [a_shape, b_shape] : shapes) {
    OpTester t("MatMul", 13);
    const Tensor a = RandomTensor(kF32, a_shape, 91), b = RandomTensor(kF32, b_shape, 92);
    t.Input("A", a).Input("B", b).OutputName("Y");
    const std::vector<Tensor> expected = t.RunOn("cpu");
    const std::vector<Tensor> actual = RunOnCuda(t.SerializedModel(), {{"A", a}, {"B", b}}, {{"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "")
        << a_shape.ToString() << " x " << b_shape.ToString();
  }
  CompareFloat16WithCpu(
      "MatMul", 13, {RandomTensor(kF16, {2, 8, 32}, 93), RandomTensor(kF16, {32, 16}, 94)},
      [](OpTester& t, const std::vector<Tensor>& in) { t.Input("A", in[0]).Input("B", in[1]); }, kHalfAbsolute,
      kHalfRelative);
}

// ---- shape ops, Softmax, Concat, Transpose ------------------------------------------------------------

TEST_F(CudaKernelTest, ReshapeFlattenSqueezeUnsqueezeIdentity) {
  const Tensor x = RandomTensor(kF32, {2, 3, 1, 4}, 101);
  OpTester reshape("Reshape", 14);
  reshape.Input("X", x).Input("shape", Tensor::FromVector<int64_t>({3}, {0, -1, 2}), true).OutputName("Y");
  reshape.CompareWithCpu({"cuda"});
  OpTester flatten("Flatten", 13);
  flatten.Attr("axis", int64_t{2}).Input("X", x).OutputName("Y");
  flatten.CompareWithCpu({"cuda"});
  OpTester squeeze("Squeeze", 13);
  squeeze.Input("X", x).Input("axes", Tensor::FromVector<int64_t>({1}, {2}), true).OutputName("Y");
  squeeze.CompareWithCpu({"cuda"});
  OpTester squeeze_all("Squeeze", 11);
  squeeze_all.Input("X", x).OutputName("Y");
  squeeze_all.CompareWithCpu({"cuda"});
  OpTester unsqueeze("Unsqueeze", 13);
  unsqueeze.Input("X", x).Input("axes", Tensor::FromVector<int64_t>({2}, {0, -1}), true).OutputName("Y");
  unsqueeze.CompareWithCpu({"cuda"});
  OpTester unsqueeze_attr("Unsqueeze", 11);
  unsqueeze_attr.Attr("axes", std::vector<int64_t>{1}).Input("X", x).OutputName("Y");
  unsqueeze_attr.CompareWithCpu({"cuda"});
  OpTester identity("Identity", 16);
  identity.Input("X", RandomTensor(DataType::kInt64, {5}, 102, -100, 100)).OutputName("Y");
  identity.CompareWithCpu({"cuda"});
}

TEST_F(CudaKernelTest, SoftmaxAndLogSoftmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const int64_t axis : {-1, 1, 0}) {
      OpTester t(op, 13);
      t.Attr("axis", axis).Input("X", RandomTensor(kF32, {3, 17, 5}, 111, -5.0, 5.0)).OutputName("Y");
      t.CompareWithCpu({"cuda"});
    }
    OpTester legacy(op, 11);
    legacy.Attr("axis", int64_t{1}).Input("X", RandomTensor(kF32, {3, 4, 5}, 112, -5.0, 5.0)).OutputName("Y");
    legacy.CompareWithCpu({"cuda"});
    OpTester wide(op, 13);
    wide.Input("X", RandomTensor(kF32, {2, 1000}, 113, -5.0, 5.0)).OutputName("Y");
    wide.CompareWithCpu({"cuda"});
  }
  CompareFloat16WithCpu(
      "Softmax", 13, {RandomTensor(kF16, {4, 300}, 114, -5.0, 5.0)},
      [](OpTester& t, const std::vector<Tensor>& in) { t.Input("X", in[0]); }, 1e-3, 1e-2);
}

TEST_F(CudaKernelTest, ConcatAndTranspose) {
  for (const int64_t axis : {0, 1, -1}) {
    OpTester t("Concat", 13);
    t.Attr("axis", axis)
        .Input("A", RandomTensor(kF32, {2, 3, 4}, 121))
        .Input("B", RandomTensor(kF32, {2, 3, 4}, 122))
        .Input("C", RandomTensor(kF32, {2, 3, 4}, 123))
        .OutputName("Y");
    t.CompareWithCpu({"cuda"});
  }
  // More inputs than one launch takes (32), an empty one, and byte-sized rows (no wider copy words).
  OpTester many("Concat", 13);
  many.Attr("axis", int64_t{1});
  const char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN";  // 40 input names
  for (int i = 0; i < 40; ++i)
    many.Input(std::string(1, kLetters[i]), RandomTensor(kF16, {2, i == 7 ? 0 : 1 + i % 3, 5}, 130 + i));
  many.OutputName("Y");
  many.CompareWithCpu({"cuda"});
  OpTester bytes("Concat", 13);
  bytes.Attr("axis", int64_t{-1})
      .Input("A", RandomTensor(DataType::kUInt8, {3, 3}, 128, 0, 255))
      .Input("B", RandomTensor(DataType::kUInt8, {3, 1}, 129, 0, 255))
      .OutputName("Y");
  bytes.CompareWithCpu({"cuda"});
  OpTester uneven("Concat", 13);
  uneven.Attr("axis", int64_t{1})
      .Input("A", RandomTensor(DataType::kInt64, {2, 1, 3}, 124, -9, 9))
      .Input("B", RandomTensor(DataType::kInt64, {2, 4, 3}, 125, -9, 9))
      .OutputName("Y");
  uneven.CompareWithCpu({"cuda"});
  const std::vector<std::vector<int64_t>> perms = {{}, {0, 2, 1, 3}, {3, 1, 0, 2}, {0, 1, 2, 3}};
  for (const auto& perm : perms) {
    OpTester t("Transpose", 13);
    if (!perm.empty()) t.Attr("perm", perm);
    t.Input("X", RandomTensor(kF32, {2, 3, 4, 5}, 126)).OutputName("Y");
    t.CompareWithCpu({"cuda"});
    OpTester half("Transpose", 13);
    if (!perm.empty()) half.Attr("perm", perm);
    half.Input("X", RandomTensor(kF16, {2, 3, 4, 5}, 127)).OutputName("Y");
    half.CompareWithCpu({"cuda"});
  }
}

TEST_F(CudaKernelTest, ZeroSizedTensors) {
  OpTester add("Add", 14);
  add.Input("A", RandomTensor(kF32, {0, 3}, 131)).Input("B", RandomTensor(kF32, {3}, 132)).OutputName("C");
  add.CompareWithCpu({"cuda"});
  OpTester matmul("MatMul", 13);
  matmul.Input("A", RandomTensor(kF32, {2, 0}, 133)).Input("B", RandomTensor(kF32, {0, 3}, 134)).OutputName("Y");
  matmul.CompareWithCpu({"cuda"});
}

}  // namespace
}  // namespace tessera::test
