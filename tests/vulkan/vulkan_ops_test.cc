// Every Vulkan kernel against the CPU EP on random inputs (float32; float16 where the device has it).
#include <array>
#include <cmath>
#include <optional>

#include "vulkan/vulkan_test_util.h"

namespace tessera::test {
namespace {

constexpr DataType kF32 = DataType::kFloat;
constexpr DataType kF16 = DataType::kFloat16;

Tensor Ints(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }

using VulkanOpsTest = VulkanTest;

TEST_F(VulkanOpsTest, UnaryActivationsAndMath) {
  const std::vector<std::pair<std::string, int>> ops = {
      {"Relu", 14}, {"Sigmoid", 13}, {"Tanh", 13}, {"LeakyRelu", 16}, {"HardSigmoid", 6}, {"HardSwish", 14},
      {"Exp", 13}, {"Neg", 13}, {"Abs", 13}, {"Erf", 13}, {"Floor", 13}, {"Ceil", 13}, {"Elu", 6},
      {"Softplus", 1}, {"Softsign", 1}, {"Sin", 7}, {"Cos", 7}, {"Sign", 13}, {"Selu", 6}, {"Gelu", 20}};
  for (const auto& [op, opset] : ops) {
    SCOPED_TRACE(op);
    OpTester t(op, opset);
    t.Input("X", RandomTensor(kF32, {2, 3, 5, 7}, 1, -3, 3)).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnVulkan(t);
  }
  for (const auto& op : {"Log", "Sqrt", "Reciprocal"}) {  // positive inputs
    SCOPED_TRACE(op);
    OpTester t(op, 13);
    t.Input("X", RandomTensor(kF32, {4, 33}, 2, 0.1, 4)).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnVulkan(t);
  }
  OpTester gelu_tanh("Gelu", 20);
  gelu_tanh.Attr("approximate", std::string("tanh")).Input("X", RandomTensor(kF32, {300}, 3, -4, 4)).OutputName("Y");
  CompareOnVulkan(gelu_tanh);
}

TEST_F(VulkanOpsTest, ClipWithInputsAndAttributes) {
  OpTester t("Clip", 13);
  t.Input("X", RandomTensor(kF32, {3, 50}, 4, -2, 2))
      .Input("min", Tensor::FromVector<float>({}, {-0.5f}), true)
      .Input("max", Tensor::FromVector<float>({}, {0.75f}), true)
      .OutputName("Y");
  CompareOnVulkan(t);
  OpTester old("Clip", 6);
  old.Attr("min", 0.0f).Attr("max", 6.0f).Input("X", RandomTensor(kF32, {70}, 5, -9, 9)).OutputName("Y");
  CompareOnVulkan(old);
}

TEST_F(VulkanOpsTest, BinaryOpsWithBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{1}, {5, 6}}, {{}, {3, 2}},
      {{2, 3, 1, 5, 1, 2, 3}, {4, 1, 1, 2, 1}},  // rank 7: more dimensions than the shader walks
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + a.ToString() + " " + b.ToString());
      OpTester t(op, 14);
      t.Input("A", RandomTensor(kF32, a, 6, 0.5, 2)).Input("B", RandomTensor(kF32, b, 7, 0.5, 2)).OutputName("C");
      CompareOnVulkan(t);
    }
  }
}

TEST_F(VulkanOpsTest, PowPReluAndVariadicMax) {
  OpTester pow("Pow", 15);
  pow.Input("X", RandomTensor(kF32, {3, 4}, 8, -2, 2))
      .Input("Y", Tensor::FromVector<float>({4}, {2.0f, 3.0f, 1.0f, 0.0f}))
      .OutputName("Z")
      .Tolerance(1e-5, 1e-5);
  CompareOnVulkan(pow);
  OpTester prelu("PRelu", 16);
  prelu.Input("X", RandomTensor(kF32, {2, 3, 4, 4}, 9)).Input("slope", RandomTensor(kF32, {3, 1, 1}, 10), true).OutputName("Y");
  CompareOnVulkan(prelu);
  OpTester max3("Max", 13);
  max3.Input("a", RandomTensor(kF32, {2, 3}, 11)).Input("b", RandomTensor(kF32, {3}, 12)).Input("c", RandomTensor(kF32, {2, 1}, 13)).OutputName("m");
  CompareOnVulkan(max3);
}

TEST_F(VulkanOpsTest, MatMulShapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7, 5}, {5, 9}}, {{130, 70}, {70, 65}}, {{2, 3, 33, 17}, {17, 40}}, {{3, 4, 8}, {3, 8, 5}},
      {{4, 8}, {3, 8, 5}}, {{2, 1, 4, 6}, {3, 6, 2}}, {{6}, {6, 4}}, {{3, 6}, {6}}, {{6}, {6}}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(a.ToString() + " x " + b.ToString());
    OpTester t("MatMul", 13);
    t.Input("A", RandomTensor(kF32, a, 14)).Input("B", RandomTensor(kF32, b, 15)).OutputName("Y").Tolerance(1e-4, 1e-4);
    CompareOnVulkan(t);
  }
}

TEST_F(VulkanOpsTest, GemmTransposesAlphaBetaAndBias) {
  const std::vector<Shape> biases = {{}, {1}, {9}, {1, 9}, {7, 1}, {7, 9}};
  for (int trans_a = 0; trans_a < 2; ++trans_a) {
    for (int trans_b = 0; trans_b < 2; ++trans_b) {
      for (const Shape& c : biases) {
        SCOPED_TRACE("transA " + std::to_string(trans_a) + " transB " + std::to_string(trans_b) + " C " + c.ToString());
        OpTester t("Gemm", 13);
        t.Attr("transA", int64_t{trans_a}).Attr("transB", int64_t{trans_b}).Attr("alpha", 0.5f).Attr("beta", 2.0f);
        t.Input("A", RandomTensor(kF32, trans_a ? Shape{11, 7} : Shape{7, 11}, 16))
            .Input("B", RandomTensor(kF32, trans_b ? Shape{9, 11} : Shape{11, 9}, 17), true)
            .Input("C", RandomTensor(kF32, c, 18), true)
            .OutputName("Y")
            .Tolerance(1e-4, 1e-4);
        CompareOnVulkan(t);
      }
    }
  }
}

// ai.tessera::FusedMatMul (matmul_epilogue_fusion): alpha, bias and activation in the product's epilogue, the
// addend (same shape, broadcast, widening) added after it; float32 and float16.
TEST_F(VulkanOpsTest, FusedMatMulEpilogues) {
  struct Case {
    Shape a, b;
    float alpha;
    bool bias;
    std::string activation;
    std::optional<Shape> addend;
  };
  const std::vector<Case> cases = {
      {{2, 3, 16}, {16, 24}, 1.0f, true, "Gelu", std::nullopt},
      {{130, 70}, {70, 65}, 0.5f, true, "Relu", Shape{130, 65}},  // two tiles each way, a ragged slice
      {{2, 4, 8}, {8, 6}, 1.0f, true, "", Shape{6}},
      {{2, 3, 5, 8}, {2, 3, 8, 5}, 0.125f, false, "", Shape{2, 1, 1, 5}},
      {{3, 8}, {8, 6}, 1.0f, true, "Relu", Shape{2, 3, 6}},  // the addend widens the product
      {{4, 8}, {8}, 2.0f, false, "Relu", Shape{4}},
      {{128, 96}, {96, 200}, 1.0f, true, "GeluTanh", std::nullopt},
      // Addends of the product's shape go into the epilogue: split-K's reduce, batches looped outside the shader.
      {{8, 512}, {512, 40}, 1.0f, true, "Relu", Shape{8, 40}},
      {{2, 3, 5, 8}, {2, 3, 8, 5}, 0.5f, false, "", Shape{2, 3, 5, 5}},
  };
  for (DataType type : {kF32, kF16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(DataTypeName(type)) + " " + c.a.ToString() + " x " + c.b.ToString() + " " + c.activation);
      OpTester t("FusedMatMul", 1, "ai.tessera");
      if (c.alpha != 1.0f) t.Attr("alpha", c.alpha);
      if (!c.activation.empty()) t.Attr("activation", c.activation);
      t.Input("A", RandomTensor(type, c.a, 80)).Input("B", RandomTensor(type, c.b, 81), true);
      if (c.bias) t.Input("bias", RandomTensor(type, Shape{c.b[c.b.rank() - 1]}, 82), true);
      else if (c.addend) t.OmittedInput();
      if (c.addend) t.Input("addend", RandomTensor(type, *c.addend, 83));
      t.OutputName("Y");
      if (type == kF16) t.Tolerance(3e-2, 3e-2); else t.Tolerance(1e-4, 1e-4);
      CompareOnVulkan(t);
    }
  }
}

// Products of transformer and convolution sizes in float16: several 64-deep slices, split depth, transposed and
// batched operands (on devices with cooperative matrices these run on them; elsewhere on the FMA tiles).
TEST_F(VulkanOpsTest, Float16ProductsOfModelSizes) {
  OpTester projection("MatMul", 13);
  projection.Input("A", RandomTensor(kF16, {1, 128, 768}, 84)).Input("B", RandomTensor(kF16, {768, 256}, 85), true);
  projection.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(projection);
  OpTester scores("MatMul", 13);
  scores.Input("A", RandomTensor(kF16, {1, 4, 128, 64}, 86)).Input("B", RandomTensor(kF16, {1, 4, 64, 128}, 87));
  scores.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(scores);
  OpTester gemm("Gemm", 13);
  gemm.Attr("transB", int64_t{1});
  gemm.Input("A", RandomTensor(kF16, {3, 1000}, 88)).Input("B", RandomTensor(kF16, {100, 1000}, 89), true);
  gemm.Input("C", RandomTensor(kF16, {100}, 90), true).OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(gemm);
  OpTester conv("Conv", 11);
  conv.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.Input("X", RandomTensor(kF16, {1, 96, 14, 14}, 91)).Input("W", RandomTensor(kF16, {80, 96, 3, 3}, 92), true);
  conv.Input("B", RandomTensor(kF16, {80}, 93), true).OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(conv);
  OpTester pointwise("Conv", 11);
  pointwise.Input("X", RandomTensor(kF16, {1, 160, 9, 9}, 94)).Input("W", RandomTensor(kF16, {70, 160, 1, 1}, 95), true);
  pointwise.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(pointwise);
}

// Float16 products in every operand layout and grid: row- and column-major operands (Gemm's transposes), shared and
// batched B, split depth (small grids) and one pass (grids of >= 128 tiles), tiles cut by the matrices' edges, every
// epilogue (on devices with cooperative matrices these run on them; elsewhere on the FMA tiles).
TEST_F(VulkanOpsTest, Float16ProductsInEveryLayoutAndGrid) {
  if (VulkanDevice().device->metadata.at("float16") != "1") GTEST_SKIP() << "the device has no float16 arithmetic";
  for (int trans_a : {0, 1}) {
    for (int trans_b : {0, 1}) {
      for (const std::array<int64_t, 3>& mnk : {std::array<int64_t, 3>{80, 48, 256}, {512, 1024, 64}, {96, 40, 64}}) {
        const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
        SCOPED_TRACE("Gemm transA " + std::to_string(trans_a) + " transB " + std::to_string(trans_b) + " " +
                     std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
        OpTester gemm("Gemm", 13);
        gemm.Attr("transA", int64_t{trans_a}).Attr("transB", int64_t{trans_b}).Attr("alpha", 0.5f);
        gemm.Input("A", RandomTensor(kF16, trans_a ? Shape{K, M} : Shape{M, K}, 140));
        gemm.Input("B", RandomTensor(kF16, trans_b ? Shape{N, K} : Shape{K, N}, 141), true);
        gemm.Input("C", RandomTensor(kF16, {N}, 142), true).OutputName("Y").Tolerance(5e-2, 2e-2);
        CompareOnVulkan(gemm);
      }
    }
  }
  // BERT's shapes: projections with the bias, GELU and residual in the epilogue (split depth), attention's batched
  // scores and context.
  OpTester ffn("FusedMatMul", 1, "ai.tessera");
  ffn.Attr("activation", std::string("Gelu"));
  ffn.Input("A", RandomTensor(kF16, {1, 128, 768}, 143)).Input("B", RandomTensor(kF16, {768, 512}, 144), true);
  ffn.Input("bias", RandomTensor(kF16, {512}, 145), true).Input("addend", RandomTensor(kF16, {1, 128, 512}, 146));
  ffn.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(ffn);
  OpTester wide("FusedMatMul", 1, "ai.tessera");
  wide.Attr("activation", std::string("Relu"));
  wide.Input("A", RandomTensor(kF16, {4, 128, 64}, 147)).Input("B", RandomTensor(kF16, {64, 2048}, 148), true);
  wide.Input("bias", RandomTensor(kF16, {2048}, 149), true).OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(wide);
  OpTester scores("MatMul", 13);
  scores.Input("A", RandomTensor(kF16, {2, 12, 128, 64}, 150)).Input("B", RandomTensor(kF16, {2, 12, 64, 128}, 151));
  scores.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(scores);
  OpTester context("MatMul", 13);
  context.Input("A", RandomTensor(kF16, {12, 128, 128}, 152)).Input("B", RandomTensor(kF16, {12, 128, 64}, 153));
  context.OutputName("Y").Tolerance(5e-2, 2e-2);
  CompareOnVulkan(context);
}

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> pads, strides, dilations;
  int64_t group;
  bool bias;
};

TEST_F(VulkanOpsTest, ConvolutionsDirectGroupedDepthwiseAndOneD) {
  const std::vector<ConvCase> cases = {
      {{1, 3, 9, 9}, {8, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, true},
      {{2, 4, 10, 7}, {6, 4, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, false},
      {{1, 8, 11, 11}, {70, 8, 3, 3}, {2, 1, 0, 2}, {2, 2}, {1, 1}, 1, true},
      {{1, 6, 12, 12}, {6, 2, 3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}, 3, true},   // grouped, dilated
      {{1, 16, 14, 14}, {16, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 16, true},  // depthwise
      {{2, 4, 9, 9}, {8, 1, 5, 5}, {2, 2, 2, 2}, {1, 1}, {1, 1}, 4, false},   // depthwise, multiplier 2
      {{2, 5, 30}, {7, 5, 4}, {1, 2}, {2}, {1}, 1, true},                     // 1-D
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("X " + c.x.ToString() + " W " + c.w.ToString());
    OpTester t("Conv", 11);
    t.Attr("pads", c.pads).Attr("strides", c.strides).Attr("dilations", c.dilations).Attr("group", c.group);
    t.Input("X", RandomTensor(kF32, c.x, 19)).Input("W", RandomTensor(kF32, c.w, 20), true);
    if (c.bias) t.Input("B", RandomTensor(kF32, {c.w[0]}, 21), true);
    t.OutputName("Y").Tolerance(1e-4, 1e-4);
    CompareOnVulkan(t);
  }
  OpTester same("Conv", 11);
  same.Attr("auto_pad", std::string("SAME_UPPER")).Attr("strides", std::vector<int64_t>{2, 2});
  same.Input("X", RandomTensor(kF32, {1, 3, 13, 13}, 22)).Input("W", RandomTensor(kF32, {4, 3, 3, 3}, 23), true);
  same.OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(same);
}

// The products' slice loop (16-deep slices loaded a slice ahead, coop_tile.glsl) over depths of 1 to 8 slices, whole
// and ragged, float32 and float16, products and pointwise / 3 x 3 convolutions: in one pass over the depth (grids of
// 128 tiles or more: 32 batched products, 64 images) and split into one-slice chunks (grids of four tiles).
TEST_F(VulkanOpsTest, ProductsOfEveryDepthUpToEightSlices) {
  for (int64_t depth : {5, 16, 32, 48, 64, 80, 96, 112, 127}) {
    for (DataType type : {kF32, DataType::kFloat16}) {
      for (int64_t batch : {1, 32}) {
        SCOPED_TRACE("depth " + std::to_string(depth) + " " + DataTypeName(type) + " batch " + std::to_string(batch));
        const double tolerance = type == kF32 ? 1e-4 : 2e-2;
        OpTester mm("MatMul", 13);
        mm.Input("A", RandomTensor(type, {batch, 70, depth}, 90)).Input("B", RandomTensor(type, {batch, depth, 65}, 91));
        mm.OutputName("Y").Tolerance(tolerance, tolerance);
        CompareOnVulkan(mm);
        OpTester pointwise("Conv", 11);
        pointwise.Input("X", RandomTensor(type, {2 * batch, depth, 9, 9}, 92))
            .Input("W", RandomTensor(type, {70, depth, 1, 1}, 93), true)
            .OutputName("Y")
            .Tolerance(tolerance, tolerance);
        CompareOnVulkan(pointwise);
      }
    }
  }
  OpTester conv("Conv", 11);  // 3 x 3 over 12 channels: 108 deep, 7 slices
  conv.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.Input("X", RandomTensor(kF32, {1, 12, 10, 10}, 94)).Input("W", RandomTensor(kF32, {70, 12, 3, 3}, 95), true);
  conv.OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(conv);
  OpTester wide("Conv", 11);  // the same over 82 images: 129 x 2 tiles, one pass
  wide.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  wide.Input("X", RandomTensor(kF32, {82, 12, 10, 10}, 96)).Input("W", RandomTensor(kF32, {70, 12, 3, 3}, 97), true);
  wide.OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(wide);
}

TEST_F(VulkanOpsTest, SplitKProductsAndConvolutionsOfSmallGrids) {
  // Few output tiles and a deep reduction: the depth is split into chunks whose partial sums are added afterwards.
  OpTester mm("MatMul", 13);
  mm.Input("A", RandomTensor(kF32, {8, 512}, 70)).Input("B", RandomTensor(kF32, {512, 40}, 71)).OutputName("Y");
  mm.Tolerance(1e-4, 1e-4);
  CompareOnVulkan(mm);
  OpTester batched("MatMul", 13);
  batched.Input("A", RandomTensor(kF32, {3, 2, 9, 300}, 72)).Input("B", RandomTensor(kF32, {3, 1, 300, 20}, 73));
  batched.OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(batched);
  OpTester gemm("Gemm", 13);
  gemm.Attr("transB", int64_t{1}).Attr("alpha", 0.5f).Attr("beta", 2.0f);
  gemm.Input("A", RandomTensor(kF32, {4, 700}, 74)).Input("B", RandomTensor(kF32, {30, 700}, 75), true);
  gemm.Input("C", RandomTensor(kF32, {30}, 76), true).OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(gemm);
  OpTester conv("Conv", 11);
  conv.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.Input("X", RandomTensor(kF32, {1, 64, 7, 7}, 77)).Input("W", RandomTensor(kF32, {32, 64, 3, 3}, 78), true);
  conv.Input("B", RandomTensor(kF32, {32}, 79), true).OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(conv);
  OpTester pointwise("Conv", 11);  // 1 x 1: the direct read of X, split four ways
  pointwise.Input("X", RandomTensor(kF32, {1, 256, 7, 7}, 82)).Input("W", RandomTensor(kF32, {64, 256, 1, 1}, 83), true);
  pointwise.Input("B", RandomTensor(kF32, {64}, 84), true).OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(pointwise);
  OpTester grouped("Conv", 11);
  grouped.Attr("group", int64_t{2});
  grouped.Input("X", RandomTensor(kF32, {1, 128, 4, 4}, 80)).Input("W", RandomTensor(kF32, {16, 64, 3, 3}, 81), true);
  grouped.OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(grouped);
}

TEST_F(VulkanOpsTest, TransposedConvolutions) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> pads, strides, dilations, output_padding;
    int64_t group;
  };
  const std::vector<Case> cases = {
      {{1, 4, 5, 5}, {4, 3, 2, 2}, {0, 0, 0, 0}, {2, 2}, {1, 1}, {0, 0}, 1},   // PP-OCR's 2x2 stride-2 upsampling
      {{2, 6, 4, 7}, {6, 2, 3, 3}, {1, 0, 1, 2}, {2, 3}, {1, 2}, {1, 2}, 3},
      {{1, 3, 9}, {3, 5, 4}, {1, 2}, {3}, {1}, {0}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("X " + c.x.ToString() + " W " + c.w.ToString());
    OpTester t("ConvTranspose", 11);
    t.Attr("pads", c.pads).Attr("strides", c.strides).Attr("dilations", c.dilations).Attr("group", c.group);
    t.Attr("output_padding", c.output_padding);
    t.Input("X", RandomTensor(kF32, c.x, 60)).Input("W", RandomTensor(kF32, c.w, 61), true);
    t.Input("B", RandomTensor(kF32, {c.w[1] * c.group}, 62), true).OutputName("Y").Tolerance(1e-4, 1e-4);
    CompareOnVulkan(t);
  }
}

TEST_F(VulkanOpsTest, PoolingWindowsPaddingAndCeilMode) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (int ceil = 0; ceil < 2; ++ceil) {
      for (int include_pad = 0; include_pad < 2; ++include_pad) {
        SCOPED_TRACE(std::string(op) + " ceil " + std::to_string(ceil) + " count_include_pad " + std::to_string(include_pad));
        OpTester t(op, 19);
        t.Attr("kernel_shape", std::vector<int64_t>{3, 3}).Attr("strides", std::vector<int64_t>{2, 2});
        t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Attr("ceil_mode", int64_t{ceil});
        if (std::string(op) == "AveragePool") t.Attr("count_include_pad", int64_t{include_pad});
        t.Input("X", RandomTensor(kF32, {2, 3, 10, 11}, 24)).OutputName("Y").Tolerance(1e-5, 1e-5);
        CompareOnVulkan(t);
      }
    }
  }
  // Global pools: one workgroup per plane, planes smaller and larger than its 256 invocations, a 1-D input.
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (const Shape& shape : {Shape{2, 5, 7, 9}, Shape{1, 3, 97, 131}, Shape{3, 4, 300}}) {
      SCOPED_TRACE(std::string(op) + " " + shape.ToString());
      OpTester t(op, 1);
      t.Input("X", RandomTensor(kF32, shape, 25)).OutputName("Y").Tolerance(1e-5, 1e-5);
      CompareOnVulkan(t);
    }
  }
}

TEST_F(VulkanOpsTest, SoftmaxLayerNormAndBatchNorm) {
  for (int64_t axis : {-1, 1, 0}) {
    for (int opset : {11, 13}) {
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis) + " opset " + std::to_string(opset));
        OpTester t(op, opset);
        t.Attr("axis", axis).Input("X", RandomTensor(kF32, {3, 4, 300}, 26, -5, 5)).OutputName("Y").Tolerance(1e-5, 1e-5);
        CompareOnVulkan(t);
      }
    }
  }
  OpTester ln("LayerNormalization", 17);
  ln.Attr("axis", int64_t{-1}).Attr("epsilon", 1e-5f);
  ln.Input("X", RandomTensor(kF32, {2, 5, 768}, 27)).Input("Scale", RandomTensor(kF32, {768}, 28), true);
  ln.Input("B", RandomTensor(kF32, {768}, 29), true).OutputName("Y").Tolerance(1e-4, 1e-4);
  CompareOnVulkan(ln);
  OpTester bn("BatchNormalization", 15);
  bn.Input("X", RandomTensor(kF32, {2, 4, 5, 6}, 30))
      .Input("scale", RandomTensor(kF32, {4}, 31), true)
      .Input("B", RandomTensor(kF32, {4}, 32), true)
      .Input("mean", RandomTensor(kF32, {4}, 33), true)
      .Input("var", RandomTensor(kF32, {4}, 34, 0.5, 2), true)
      .OutputName("Y")
      .Tolerance(1e-5, 1e-5);
  CompareOnVulkan(bn);
}

TEST_F(VulkanOpsTest, TransposeConcatSliceSplitExpandGather) {
  OpTester tr("Transpose", 13);
  tr.Attr("perm", std::vector<int64_t>{0, 2, 3, 1}).Input("X", RandomTensor(kF32, {2, 3, 4, 5}, 35)).OutputName("Y");
  CompareOnVulkan(tr);
  OpTester tr_default("Transpose", 13);
  tr_default.Input("X", RandomTensor(kF32, {3, 7}, 36)).OutputName("Y");
  CompareOnVulkan(tr_default);
  OpTester concat("Concat", 13);
  concat.Attr("axis", int64_t{1})
      .Input("a", RandomTensor(kF32, {2, 3, 4}, 37))
      .Input("b", RandomTensor(kF32, {2, 1, 4}, 38))
      .Input("c", RandomTensor(kF32, {2, 5, 4}, 39))
      .OutputName("y");
  CompareOnVulkan(concat);
  OpTester slice("Slice", 13);
  slice.Input("X", RandomTensor(kF32, {5, 6, 7}, 40))
      .Input("starts", Ints({-1, 1, 0}), true)
      .Input("ends", Ints({INT64_MIN, 5, 7}), true)
      .Input("axes", Ints({0, 1, 2}), true)
      .Input("steps", Ints({-2, 2, 3}), true)
      .OutputName("Y");
  CompareOnVulkan(slice);
  // Split: lengths from the input (opset 13), from the attribute (opset 11), equal parts, num_outputs with a shorter
  // last part (opset 18), the last axis of a product's [1, 128, 2304] output (shared_input_matmul_fusion's Q / K / V).
  OpTester split("Split", 13);
  split.Attr("axis", int64_t{1})
      .Input("X", RandomTensor(kF32, {2, 9, 3}, 44))
      .Input("split", Ints({2, 0, 7}), true)
      .OutputName("a")
      .OutputName("b")
      .OutputName("c");
  CompareOnVulkan(split);
  OpTester split11("Split", 11);
  split11.Attr("axis", int64_t{-1}).Attr("split", std::vector<int64_t>{1, 4}).Input("X", RandomTensor(kF32, {3, 5}, 45));
  split11.OutputName("a").OutputName("b");
  CompareOnVulkan(split11);
  OpTester equal("Split", 13);
  equal.Input("X", RandomTensor(DataType::kFloat16, {6, 2}, 46)).OutputName("a").OutputName("b").OutputName("c");
  CompareOnVulkan(equal);
  OpTester parts("Split", 18);
  parts.Attr("axis", int64_t{0}).Attr("num_outputs", int64_t{2}).Input("X", RandomTensor(kF32, {5, 3}, 47));
  parts.OutputName("a").OutputName("b");
  CompareOnVulkan(parts);
  OpTester qkv("Split", 13);
  qkv.Attr("axis", int64_t{-1})
      .Input("X", RandomTensor(DataType::kFloat16, {1, 128, 2304}, 48))
      .Input("split", Ints({768, 768, 768}), true)
      .OutputName("q")
      .OutputName("k")
      .OutputName("v");
  CompareOnVulkan(qkv);
  OpTester wrong("Split", 13);
  wrong.Attr("axis", int64_t{1}).Input("X", RandomTensor(kF32, {2, 5}, 49)).Input("split", Ints({2, 2}), true);
  wrong.OutputName("a").OutputName("b");
  wrong.ExpectFailure("split [2,2] sums to 4, but axis 1 of input [2,5] has 5").Run({"vulkan"});
  OpTester expand("Expand", 13);
  expand.Input("X", RandomTensor(kF32, {3, 1}, 41)).Input("shape", Ints({2, 3, 4}), true).OutputName("Y");
  CompareOnVulkan(expand);
  OpTester gather("Gather", 13);
  gather.Attr("axis", int64_t{0})
      .Input("data", RandomTensor(kF32, {10, 8}, 42), true)
      .Input("indices", Tensor::FromVector<int64_t>({2, 3}, {0, 9, -1, 4, 4, 2}))
      .OutputName("Y");
  CompareOnVulkan(gather);
  OpTester gather1("Gather", 13);
  gather1.Attr("axis", int64_t{1})
      .Input("data", RandomTensor(kF32, {3, 5, 2}, 43))
      .Input("indices", Tensor::FromVector<int32_t>({2}, {4, 0}))
      .OutputName("Y");
  CompareOnVulkan(gather1);
}

TEST_F(VulkanOpsTest, ReshapeFamilyAliasesTheInput) {
  OpTester reshape("Reshape", 14);
  reshape.Input("X", RandomTensor(kF32, {2, 3, 4}, 44)).Input("shape", Ints({0, -1}), true).OutputName("Y");
  CompareOnVulkan(reshape);
  OpTester flatten("Flatten", 13);
  flatten.Attr("axis", int64_t{2}).Input("X", RandomTensor(kF32, {2, 3, 4, 5}, 45)).OutputName("Y");
  CompareOnVulkan(flatten);
  OpTester squeeze("Squeeze", 13);
  squeeze.Input("X", RandomTensor(kF32, {1, 3, 1, 2}, 46)).Input("axes", Ints({0, -2}), true).OutputName("Y");
  CompareOnVulkan(squeeze);
  OpTester unsqueeze("Unsqueeze", 11);
  unsqueeze.Attr("axes", std::vector<int64_t>{0, 3}).Input("X", RandomTensor(kF32, {3, 2}, 47)).OutputName("Y");
  CompareOnVulkan(unsqueeze);
}

TEST_F(VulkanOpsTest, ResizeNearestAndLinear) {
  struct Case {
    std::string mode, coord, nearest;
  };
  const std::vector<Case> cases = {{"nearest", "asymmetric", "floor"},
                                   {"nearest", "half_pixel", "round_prefer_floor"},
                                   {"linear", "half_pixel", ""},
                                   {"linear", "align_corners", ""},
                                   {"linear", "pytorch_half_pixel", ""}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode + " " + c.coord);
    OpTester t("Resize", 13);
    t.Attr("mode", c.mode).Attr("coordinate_transformation_mode", c.coord);
    if (!c.nearest.empty()) t.Attr("nearest_mode", c.nearest);
    t.Input("X", RandomTensor(kF32, {1, 2, 5, 6}, 48)).OmittedInput();
    t.Input("scales", Tensor::FromVector<float>({4}, {1.0f, 1.0f, 2.0f, 1.5f}), true).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnVulkan(t);
  }
  OpTester sizes("Resize", 13);
  sizes.Attr("mode", std::string("linear")).Input("X", RandomTensor(kF32, {1, 1, 4, 4}, 49)).OmittedInput().OmittedInput();
  sizes.Input("sizes", Ints({1, 1, 3, 7}), true).OutputName("Y").Tolerance(1e-5, 1e-5);
  CompareOnVulkan(sizes);
}

TEST_F(VulkanOpsTest, CastFromIntegersToFloat) {
  OpTester from64("Cast", 13);
  from64.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat)})
      .Input("X", Tensor::FromVector<int64_t>({2, 3}, {0, 1, -1, 123456, -70000, 1 << 30}))
      .OutputName("Y");
  CompareOnVulkan(from64);
  OpTester from32("Cast", 13);
  from32.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat)})
      .Input("X", Tensor::FromVector<int32_t>({4}, {0, 7, -9, 1 << 24}))
      .OutputName("Y");
  CompareOnVulkan(from32);
}

// Bool tensors (one byte per element) where the device has 8-bit storage: logic with broadcasting, Where, Casts to
// and from bool, and the data movement ops on bytes.
TEST_F(VulkanOpsTest, BoolLogicWhereCastsAndDataMovement) {
  if (VulkanDevice().device->metadata.at("8bit_storage") != "1") GTEST_SKIP() << "the device has no 8-bit storage";
  constexpr DataType kBool = DataType::kBool;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 5}, {2, 3, 5}}, {{2, 3, 5}, {5}}, {{4, 1, 7}, {3, 1}}, {{}, {6}},
      {{2, 1, 3, 1, 2, 2, 3}, {3, 1, 2, 1, 1}},  // rank 7
  };
  for (const char* op : {"And", "Or", "Xor"})
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + a.ToString() + " " + b.ToString());
      OpTester t(op, 7);
      t.Input("A", RandomTensor(kBool, a, 60)).Input("B", RandomTensor(kBool, b, 61)).OutputName("C");
      CompareOnVulkan(t);
    }
  OpTester isnan("IsNaN", 13);
  isnan.Input("X", Tensor::FromVector<float>({5}, {0.0f, std::nanf(""), -1.0f, INFINITY, -std::nanf("")})).OutputName("Y");
  CompareOnVulkan(isnan);
  OpTester not_op("Not", 1);
  not_op.Input("X", RandomTensor(kBool, {3, 37}, 62)).OutputName("Y");
  CompareOnVulkan(not_op);
  const std::vector<std::array<Shape, 3>> where_shapes = {
      {Shape{2, 3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4}}, {Shape{1, 1, 4, 4}, Shape{}, Shape{}},
      {Shape{3, 1}, Shape{4}, Shape{3, 4}}, {Shape{2, 1, 2, 1, 3, 1, 2}, Shape{3, 1, 1}, Shape{1}}};
  for (DataType type : {kF32, kF16}) {
    if (type == kF16 && VulkanDevice().device->metadata.at("float16") != "1") continue;
    for (const auto& s : where_shapes) {
      SCOPED_TRACE(std::string("Where ") + DataTypeName(type) + " " + s[0].ToString() + s[1].ToString() + s[2].ToString());
      OpTester t("Where", 16);
      t.Input("C", RandomTensor(kBool, s[0], 63)).Input("X", RandomTensor(type, s[1], 64)).Input("Y",
                                                                                               RandomTensor(type, s[2], 65));
      t.OutputName("Z");
      CompareOnVulkan(t);
    }
  }
  // Casts: to bool from every source the EP takes (zero, nonzero, NaN for floats; an int64 whose low word is 0), and
  // back. (int64 -> float reads the low word: exact below 2^31, docs/VULKAN.md.)
  OpTester wide("Cast", 13);
  wide.Attr("to", int64_t{static_cast<int64_t>(kBool)})
      .Input("X", Tensor::FromVector<int64_t>({6}, {0, 1, -1, int64_t{1} << 33, 7, 0}))
      .OutputName("Y");
  CompareOnVulkan(wide);
  const std::vector<Tensor> sources = {
      Tensor::FromVector<int64_t>({6}, {0, 1, -1, 1 << 30, 7, 0}),
      Tensor::FromVector<int32_t>({4}, {0, 3, -9, 0}),
      Tensor::FromVector<float>({5}, {0.0f, -0.0f, 0.5f, std::nanf(""), -3.0f}),
      RandomTensor(kBool, {3, 5}, 66)};
  for (const Tensor& x : sources)
    for (DataType to : {kBool, kF32}) {
      SCOPED_TRACE(std::string("Cast ") + DataTypeName(x.type()) + " to " + DataTypeName(to));
      OpTester t("Cast", 13);
      t.Attr("to", int64_t{static_cast<int64_t>(to)}).Input("X", x).OutputName("Y");
      CompareOnVulkan(t);
    }
  // Data movement of bytes.
  const Tensor bytes = RandomTensor(kBool, {3, 1, 5}, 67);
  OpTester expand("Expand", 13);
  expand.Input("X", bytes).Input("shape", Ints({2, 3, 4, 5}), true).OutputName("Y");
  CompareOnVulkan(expand);
  OpTester transpose("Transpose", 13);
  transpose.Attr("perm", std::vector<int64_t>{2, 0, 1}).Input("X", bytes).OutputName("Y");
  CompareOnVulkan(transpose);
  OpTester gather("Gather", 13);
  gather.Attr("axis", int64_t{2}).Input("data", bytes).Input("indices", Tensor::FromVector<int64_t>({3}, {4, 0, -2}));
  gather.OutputName("Y");
  CompareOnVulkan(gather);
  OpTester concat("Concat", 13);
  concat.Attr("axis", int64_t{1}).Input("a", bytes).Input("b", RandomTensor(kBool, {3, 2, 5}, 68)).OutputName("y");
  CompareOnVulkan(concat);
  OpTester slice("Slice", 13);
  slice.Input("X", RandomTensor(DataType::kUInt8, {7, 9}, 69))
      .Input("starts", Ints({1, 8}), true)
      .Input("ends", Ints({6, 0}), true)
      .Input("axes", Ints({0, 1}), true)
      .Input("steps", Ints({2, -3}), true)
      .OutputName("Y");
  CompareOnVulkan(slice);
}

TEST_F(VulkanOpsTest, Float16KernelsAgreeWithFloat32OnTheCpu) {
  if (VulkanDevice().device->metadata.at("float16") != "1") GTEST_SKIP() << "the device has no float16 arithmetic";
  // Each op on float16 inputs on the Vulkan EP against the same op on the CPU EP (float16 there too).
  OpTester conv("Conv", 11);
  conv.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.Input("X", RandomTensor(kF16, {1, 4, 8, 8}, 50)).Input("W", RandomTensor(kF16, {6, 4, 3, 3}, 51), true);
  conv.OutputName("Y").Tolerance(2e-2, 2e-2);
  CompareOnVulkan(conv);
  OpTester split("Conv", 11);  // split-K with float16 input and output, float partial sums
  split.Input("X", RandomTensor(kF16, {1, 64, 5, 5}, 63)).Input("W", RandomTensor(kF16, {8, 64, 3, 3}, 64), true);
  split.OutputName("Y").Tolerance(3e-2, 3e-2);
  CompareOnVulkan(split);
  OpTester mm("MatMul", 13);
  mm.Input("A", RandomTensor(kF16, {5, 33}, 52)).Input("B", RandomTensor(kF16, {33, 9}, 53)).OutputName("Y").Tolerance(2e-2, 2e-2);
  CompareOnVulkan(mm);
  OpTester add("Add", 14);
  add.Input("A", RandomTensor(kF16, {3, 4}, 54)).Input("B", RandomTensor(kF16, {4}, 55)).OutputName("C").Tolerance(1e-3, 1e-3);
  CompareOnVulkan(add);
  OpTester softmax("Softmax", 13);
  softmax.Input("X", RandomTensor(kF16, {2, 50}, 56)).OutputName("Y").Tolerance(1e-3, 1e-2);
  CompareOnVulkan(softmax);
  OpTester transpose("Transpose", 13);
  transpose.Attr("perm", std::vector<int64_t>{1, 0}).Input("X", RandomTensor(kF16, {3, 5}, 57)).OutputName("Y");
  CompareOnVulkan(transpose);
  OpTester cast("Cast", 13);
  cast.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat)}).Input("X", RandomTensor(kF16, {17}, 58)).OutputName("Y");
  CompareOnVulkan(cast);
  OpTester cast_back("Cast", 13);
  cast_back.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat16)}).Input("X", RandomTensor(kF32, {17}, 59)).OutputName("Y");
  CompareOnVulkan(cast_back);
  // Attention masks of float16 models: int64 (and int32) -> float16 on the device.
  OpTester mask64("Cast", 13);
  mask64.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat16)})
      .Input("X", Tensor::FromVector<int64_t>({2, 4}, {0, 1, 1, 0, -1, 2048, -2048, 65504}))
      .OutputName("Y");
  CompareOnVulkan(mask64);
  OpTester mask32("Cast", 13);
  mask32.Attr("to", int64_t{static_cast<int64_t>(DataType::kFloat16)})
      .Input("X", Tensor::FromVector<int32_t>({5}, {0, 1, -3, 1000, 4097}))  // 4097 rounds to 4096 in float16
      .OutputName("Y");
  CompareOnVulkan(mask32);
}

}  // namespace
}  // namespace tessera::test
