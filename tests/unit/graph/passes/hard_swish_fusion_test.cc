#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x * Clip(x + 3, 0, 6) / 6 as PaddlePaddle exports hard_swish (Clip limits as inputs, opset 11+), then Relu.
PassTestGraph ClipInputsPattern(float max = 6.0f) {
  PassTestGraph g;
  g.Input("x", {-1, 16}).Output("y");
  g.Scalar("three", 3.0f).Scalar("zero", 0.0f).Scalar("top", max).Scalar("six", 6.0f);
  g.Node("Add", {"x", "three"}, {"shifted"});
  g.Node("Clip", {"shifted", "zero", "top"}, {"gate"});
  g.Node("Mul", {"x", "gate"}, {"product"});
  g.Node("Div", {"product", "six"}, {"hs"});
  g.Node("Relu", {"hs"}, {"y"});
  return g;
}

TEST(HardSwishFusionTest, FusesClipPatternWithDivision) {
  const PassTestGraph g = ClipInputsPattern();
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kBasic).size(), 5u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"HardSwish", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

TEST(HardSwishFusionTest, FusesClipAttributesAndSixthBeforeTheProduct) {
  PassTestGraph g(10);  // Clip-6: limits as attributes
  g.Input("x", {-1, 16}).Output("y");
  g.Scalar("three", 3.0f).Scalar("sixth", 1.0f / 6.0f);
  g.Node("Add", {"three", "x"}, {"shifted"});
  onnx::NodeProto& clip = g.Node("Clip", {"shifted"}, {"gate"});
  auto* lo = clip.add_attribute();
  lo->set_name("min");
  lo->set_type(onnx::AttributeProto::FLOAT);
  lo->set_f(0.0f);
  auto* hi = clip.add_attribute();
  hi->set_name("max");
  hi->set_type(onnx::AttributeProto::FLOAT);
  hi->set_f(6.0f);
  g.Node("Mul", {"gate", "sixth"}, {"scaled"});
  g.Node("Mul", {"scaled", "x"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"HardSwish"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

TEST(HardSwishFusionTest, FusesXTimesHardSigmoid) {
  PassTestGraph g;
  g.Input("x", {-1, 16}).Output("y");
  onnx::NodeProto& hs = g.Node("HardSigmoid", {"x"}, {"gate"});
  auto* alpha = hs.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(1.0f / 6.0f);
  g.Node("Mul", {"x", "gate"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"HardSwish"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

TEST(HardSwishFusionTest, KeepsOtherClipLimits) {
  const PassTestGraph g = ClipInputsPattern(5.0f);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "HardSwish"), 0u);
  ExpectSameOutputs(g, OptimizationLevel::kAll);
}

}  // namespace
}  // namespace tessera::test
