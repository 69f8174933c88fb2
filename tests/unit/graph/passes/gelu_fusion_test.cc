#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x * 0.5 * (1 + Erf(x / sqrt(2))) as PyTorch exports nn.GELU(), followed by Relu (so x's producer and
// the Gelu's reader are ordinary nodes); `expose_erf` also makes Erf's output a graph output.
PassTestGraph ErfGelu(bool expose_erf = false) {
  PassTestGraph g;
  g.Input("x", {-1, 16}).Output("y");
  g.Scalar("sqrt2", 1.4142135f).Scalar("one", 1.0f).Scalar("half", 0.5f);
  g.Node("Div", {"x", "sqrt2"}, {"scaled"});
  g.Node("Erf", {"scaled"}, {"erf"});
  g.Node("Add", {"erf", "one"}, {"one_plus"});
  g.Node("Mul", {"x", "one_plus"}, {"times_x"});
  g.Node("Mul", {"times_x", "half"}, {"gelu"});
  g.Node("Relu", {"gelu"}, {"y"});
  if (expose_erf) g.Output("erf");
  return g;
}

// 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) as PyTorch exports nn.GELU(approximate="tanh").
PassTestGraph TanhGelu(bool cube_as_products) {
  PassTestGraph g;
  g.Input("x", {-1, 16}).Output("y");
  g.Scalar("three", 3.0f).Scalar("c", 0.044715f).Scalar("k", 0.7978845608f).Scalar("one", 1.0f).Scalar("half", 0.5f);
  g.Node("Mul", {"x", "half"}, {"half_x"});
  if (cube_as_products) {
    g.Node("Mul", {"x", "x"}, {"square"});
    g.Node("Mul", {"square", "x"}, {"cube"});
  } else {
    g.Node("Pow", {"x", "three"}, {"cube"});
  }
  g.Node("Mul", {"c", "cube"}, {"c_cube"});
  g.Node("Add", {"x", "c_cube"}, {"inner"});
  g.Node("Mul", {"k", "inner"}, {"arg"});
  g.Node("Tanh", {"arg"}, {"t"});
  g.Node("Add", {"one", "t"}, {"one_plus"});
  g.Node("Mul", {"half_x", "one_plus"}, {"y"});
  return g;
}

TEST(GeluFusionTest, FusesErfPattern) {
  const PassTestGraph g = ErfGelu();
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "Erf"), 1u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Gelu", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

// A float16 model's GELU (BERT exported in float16): float16 scalars, float16 values between Casts.
TEST(GeluFusionTest, FusesFloat16ErfPattern) {
  PassTestGraph g;
  g.Input("x32", {-1, 16}).Output("y");
  SetInt(g.Node("Cast", {"x32"}, {"x"}), "to", 10);
  g.Halves("sqrt2", {}, {1.4142135f}).Halves("one", {}, {1.0f}).Halves("half", {}, {0.5f});
  g.Node("Div", {"x", "sqrt2"}, {"scaled"});
  g.Node("Erf", {"scaled"}, {"erf"});
  g.Node("Add", {"erf", "one"}, {"one_plus"});
  g.Node("Mul", {"x", "one_plus"}, {"times_x"});
  g.Node("Mul", {"times_x", "half"}, {"gelu"});
  SetInt(g.Node("Cast", {"gelu"}, {"y"}), "to", 1);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Cast", "Gelu", "Cast"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 4e-3f);
}

TEST(GeluFusionTest, FusesTanhPatternWithPow) {
  const PassTestGraph g = TanhGelu(false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"Gelu"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

TEST(GeluFusionTest, FusesTanhPatternWithProducts) {
  const PassTestGraph g = TanhGelu(true);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"Gelu"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(GeluFusionTest, KeepsPatternWhoseIntermediateIsAGraphOutput) {
  const PassTestGraph g = ErfGelu(/*expose_erf=*/true);
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kExtended);
  EXPECT_EQ(Count(ops, "Gelu"), 0u);
  EXPECT_EQ(Count(ops, "Erf"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kExtended);
}

}  // namespace
}  // namespace tessera::test
