#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[1,4,6,6] -> Conv(W[4,4,3,3], B, pads 1) -> c
PassTestGraph ConvGraph(int opset = 17) {
  PassTestGraph g(opset);
  g.Input("x", {1, 4, 6, 6}).Output("y");
  g.Floats("W", {4, 4, 3, 3}, PassTestGraph::Random(144, -1, 1, 7)).Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
  SetInts(g.Node("Conv", {"x", "W", "B"}, {"c"}), "pads", {1, 1, 1, 1});
  return g;
}

TEST(ConvActivationFusionTest, FusesConvRelu) {
  PassTestGraph g = ConvGraph();
  g.Node("Relu", {"c"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

// ConvTranspose -> activation becomes FusedConvTranspose on the CPU EP: the tiling loop (kernel 2x2 stride 2, few
// channels) and oneDNN's deconvolution (65 input channels; pads) each apply it.
// A residual Add after a ConvTranspose is not fused.
TEST(ConvActivationFusionTest, FusesConvTransposeActivation) {
  struct Case {
    int64_t channels;
    std::vector<int64_t> pads;
    const char* activation;
  };
  for (const Case& c : {Case{6, {0, 0, 0, 0}, "Relu"}, Case{6, {0, 0, 0, 0}, "Sigmoid"},
                        Case{65, {0, 0, 0, 0}, "Relu"}, Case{6, {1, 0, 1, 0}, "Tanh"}}) {
    PassTestGraph g;
    g.Input("x", {1, c.channels, 5, 35}).Output("y");
    g.Floats("W", {c.channels, 3, 2, 2}, PassTestGraph::Random(c.channels * 12, -1, 1, 5));
    g.Floats("B", {3}, {0.5f, -0.25f, 0.1f});
    onnx::NodeProto& deconv = g.Node("ConvTranspose", {"x", "W", "B"}, {"c"});
    SetInts(deconv, "strides", {2, 2});
    SetInts(deconv, "pads", c.pads);
    g.Node(c.activation, {"c"}, {"y"});
    SCOPED_TRACE(::testing::Message() << c.channels << " channels, " << c.activation);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConvTranspose"}));
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
  }
  PassTestGraph residual;
  residual.Input("x", {1, 4, 5, 6}).Input("z", {1, 3, 10, 12}).Output("y");
  residual.Floats("W", {4, 3, 2, 2}, PassTestGraph::Random(48, -1, 1, 5));
  SetInts(residual.Node("ConvTranspose", {"x", "W"}, {"c"}), "strides", {2, 2});
  residual.Node("Add", {"c", "z"}, {"sum"});
  residual.Node("Relu", {"sum"}, {"y"});
  EXPECT_EQ(OpsAt(residual, OptimizationLevel::kAll), (std::vector<std::string>{"ConvTranspose", "Add", "Relu"}));
}

// SiLU as YOLO-style exports write it: c * Sigmoid(c), in either operand order, after a Conv or its residual Add.
TEST(ConvActivationFusionTest, FusesSiluAsSwish) {
  for (bool sigmoid_first : {false, true}) {
    PassTestGraph g = ConvGraph();
    g.Node("Sigmoid", {"c"}, {"gate"});
    if (sigmoid_first)
      g.Node("Mul", {"gate", "c"}, {"y"});
    else
      g.Node("Mul", {"c", "gate"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
  }
  PassTestGraph residual = ConvGraph();
  residual.Input("z", {1, 4, 6, 6});
  residual.Node("Add", {"c", "z"}, {"sum"});
  residual.Node("Sigmoid", {"sum"}, {"gate"});
  residual.Node("Mul", {"sum", "gate"}, {"y"});
  EXPECT_EQ(OpsAt(residual, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
  ExpectSameOutputs(residual, OptimizationLevel::kAll, 1e-4f);
}

// A gate read outside the product, or a Conv output read by a third node, is not SiLU's alone.
TEST(ConvActivationFusionTest, KeepsSiluWhoseValuesAreReadElsewhere) {
  PassTestGraph gate_read = ConvGraph();
  gate_read.Output("gate");
  gate_read.Node("Sigmoid", {"c"}, {"gate"});
  gate_read.Node("Mul", {"c", "gate"}, {"y"});
  EXPECT_EQ(Count(OpsAt(gate_read, OptimizationLevel::kAll), "FusedConv"), 0u);
  ExpectSameOutputs(gate_read, OptimizationLevel::kAll, 1e-4f);
  PassTestGraph third = ConvGraph();
  third.Output("d");
  third.Node("Sigmoid", {"c"}, {"gate"});
  third.Node("Mul", {"c", "gate"}, {"y"});
  third.Node("Neg", {"c"}, {"d"});
  EXPECT_EQ(Count(OpsAt(third, OptimizationLevel::kAll), "FusedConv"), 0u);
}

TEST(ConvActivationFusionTest, FusesClipWithConstantLimits) {
  PassTestGraph g = ConvGraph();
  g.Scalar("lo", 0.0f).Scalar("hi", 0.75f);
  g.Node("Clip", {"c", "lo", "hi"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

// Float16 models (MobileNetV2 exported in float16) carry Clip's limits as float16 scalars.
TEST(ConvActivationFusionTest, FusesFloat16ConvWithFloat16ClipLimits) {
  PassTestGraph g;
  g.Input("x", {1, 4, 6, 6}).Output("y");
  g.Halves("W", {4, 4, 3, 3}, PassTestGraph::Random(144, -1, 1, 7)).Halves("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
  g.Halves("lo", {}, {0.0f}).Halves("hi", {}, {6.0f});
  SetInt(g.Node("Cast", {"x"}, {"xh"}), "to", onnx::TensorProto::FLOAT16);
  SetInts(g.Node("Conv", {"xh", "W", "B"}, {"c"}), "pads", {1, 1, 1, 1});
  g.Node("Clip", {"c", "lo", "hi"}, {"d"});
  SetInt(g.Node("Cast", {"d"}, {"y"}), "to", onnx::TensorProto::FLOAT);
  // Float16 values between nodes (as on EPs that compute in float16; the CPU EP's default runs this region in
  // float32, float32_regions_test.cc).
  const Config half_values = {{"session.float16_in_float32", "0"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, half_values), (std::vector<std::string>{"Cast", "FusedConv", "Cast"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-2f, 2, half_values);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-2f);
}

TEST(ConvActivationFusionTest, FusesClipWithAttributeLimitsBeforeOpset11) {
  PassTestGraph g = ConvGraph(10);
  auto& clip = g.Node("Clip", {"c"}, {"y"});
  SetFloat(clip, "min", -0.5f);
  SetFloat(clip, "max", 0.5f);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

TEST(ConvActivationFusionTest, FusesResidualAddAndRelu) {
  PassTestGraph g = ConvGraph();
  g.Node("Add", {"x", "c"}, {"sum"});
  g.Node("Relu", {"sum"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

TEST(ConvActivationFusionTest, TwoConvsIntoOneAddFuseOnce) {
  PassTestGraph g = ConvGraph();
  g.Floats("W2", {4, 4, 1, 1}, PassTestGraph::Random(16, -1, 1, 8));
  g.Node("Conv", {"x", "W2"}, {"d"});
  g.Node("Add", {"c", "d"}, {"sum"});
  g.Node("Relu", {"sum"}, {"y"});
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "FusedConv"), 1u);
  EXPECT_EQ(Count(ops, "Conv"), 1u);
  EXPECT_EQ(ops.size(), 2u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

TEST(ConvActivationFusionTest, KeepsActivationWhenConvOutputHasOtherReaders) {
  PassTestGraph g = ConvGraph();
  g.Node("Relu", {"c"}, {"y"});
  g.Output("c");
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll);
}

TEST(ConvActivationFusionTest, KeepsClipWithRuntimeLimits) {
  PassTestGraph g = ConvGraph();
  g.Input("hi", {});
  g.Node("Clip", {"c", "", "hi"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Conv", "Clip"}));
}

// StyleGAN-style generators (MI-GAN) clamp every activation: Conv -> LeakyRelu -> Clip(-256, 256). The CPU EP's
// FusedConv takes the Clip as its activation_clip; both limits are reached by these values.
TEST(ConvActivationFusionTest, FusesTheClipAfterTheActivation) {
  for (bool residual : {false, true}) {
    PassTestGraph g = ConvGraph();
    std::string activated_input = "c";
    if (residual) {
      g.Node("Add", {"c", "x"}, {"sum"});
      activated_input = "sum";
    }
    g.Scalar("lo", -0.3f).Scalar("hi", 0.4f);
    SetFloat(g.Node("LeakyRelu", {activated_input}, {"a"}), "alpha", 0.2f);
    g.Node("Clip", {"a", "lo", "hi"}, {"y"});
    SCOPED_TRACE(residual ? "with a residual Add" : "without a residual");
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
  }
}

// The same in the channel-inner layout the CPU EP gives wider convolutions (NchwcConv keeps activation_clip), a
// Relu then a Clip, and a Clip after a Clip.
TEST(ConvActivationFusionTest, FusesTheClipAfterTheActivationOfBlockedConvolutions) {
  for (const char* activation : {"LeakyRelu", "Relu", "Clip"}) {
    PassTestGraph g(13);
    g.Input("x", {1, 16, 12, 12}).Output("y");
    g.Scalar("lo", -0.5f).Scalar("hi", 0.5f).Scalar("lo2", -0.25f).Scalar("hi2", 0.3f);
    AddConv(g, "x", "c1", 16, 32, 3, 1);
    if (std::string(activation) == "Clip")
      g.Node("Clip", {"c1", "lo", "hi"}, {"a"});
    else
      g.Node(activation, {"c1"}, {"a"});
    g.Node("Clip", {"a", "lo2", "hi2"}, {"b"});
    AddConv(g, "b", "y", 32, 16, 3, 1);
    SCOPED_TRACE(activation);
    const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
    EXPECT_EQ(Count(ops, "Clip"), 0u);
    EXPECT_EQ(Count(ops, "NchwcConv"), 2u);
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
  }
}

// A Clip whose input is read elsewhere too, or whose limits come at run time, stays a node (the activation fuses).
TEST(ConvActivationFusionTest, KeepsAClipAfterTheActivationThatIsNotItsAlone) {
  PassTestGraph shared = ConvGraph();
  shared.Scalar("lo", -0.3f).Scalar("hi", 0.4f);
  shared.Node("Relu", {"c"}, {"a"});
  shared.Node("Clip", {"a", "lo", "hi"}, {"y"});
  shared.Output("a");
  EXPECT_EQ(OpsAt(shared, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv", "Clip"}));
  ExpectSameOutputs(shared, OptimizationLevel::kAll, 1e-4f);
  PassTestGraph runtime = ConvGraph();
  runtime.Input("hi", {});
  runtime.Node("Relu", {"c"}, {"a"});
  runtime.Node("Clip", {"a", "", "hi"}, {"y"});
  EXPECT_EQ(OpsAt(runtime, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv", "Clip"}));
}

}  // namespace
}  // namespace tessera::test
