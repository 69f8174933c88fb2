#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// onnxruntime.quantization's dynamic MatMul: DynamicQuantizeLinear(x) -> MatMulInteger with uint8 weights
// and a weight zero point -> Cast to float -> Mul by (x_scale * w_scale) -> Add bias, then Relu so that the
// product is not a graph output.
PassTestGraph DynamicQuantizedMatMul(bool per_column_scale, bool with_bias, bool scale_first = false) {
  const int64_t k = 24, n = 10;
  PassTestGraph g;
  g.Input("x", {-1, 3, k}).Output("y");
  std::vector<int32_t> weights(static_cast<size_t>(k * n));
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<int32_t>((i * 37 + 11) % 256);
  g.Bytes("w", {k, n}, weights).Bytes("w_zero", {}, {131});
  if (per_column_scale)
    g.Floats("w_scale", {n}, PassTestGraph::Random(n, 0.001f, 0.01f, 7));
  else
    g.Scalar("w_scale", 0.0042f);
  g.Floats("bias", {n}, PassTestGraph::Random(n, -1, 1, 8));
  g.Node("DynamicQuantizeLinear", {"x"}, {"xq", "x_scale", "x_zero"});
  g.Node("MatMulInteger", {"xq", "w", "x_zero", "w_zero"}, {"sums"});
  SetInt(g.Node("Cast", {"sums"}, {"sums_f"}), "to", onnx::TensorProto::FLOAT);
  if (scale_first)
    g.Node("Mul", {"w_scale", "x_scale"}, {"scale"});
  else
    g.Node("Mul", {"x_scale", "w_scale"}, {"scale"});
  g.Node("Mul", {"sums_f", "scale"}, {"product"});
  if (with_bias) {
    g.Node("Add", {"bias", "product"}, {"biased"});
    g.Node("Relu", {"biased"}, {"y"});
  } else {
    g.Node("Relu", {"product"}, {"y"});
  }
  return g;
}

TEST(IntegerMatMulFusionTest, FusesTheDequantizingTailWithBias) {
  for (bool per_column : {false, true}) {
    const PassTestGraph g = DynamicQuantizedMatMul(per_column, /*with_bias=*/true);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended).size(), 7u);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
              (std::vector<std::string>{"DynamicQuantizeLinear", "MatMulIntegerToFloat", "Relu"}));
    // Same roundings as the nodes it replaces: equal, not merely close.
    ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
  }
}

TEST(IntegerMatMulFusionTest, FusesWithoutBiasAndWithTheScalesInEitherOrder) {
  const PassTestGraph g = DynamicQuantizedMatMul(/*per_column_scale=*/true, /*with_bias=*/false, /*scale_first=*/true);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"DynamicQuantizeLinear", "MatMulIntegerToFloat", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(IntegerMatMulFusionTest, KeepsAProductThatIsReadElsewhere) {
  PassTestGraph g = DynamicQuantizedMatMul(false, false);
  g.Output("sums_f", {}, onnx::TensorProto::FLOAT);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "MatMulIntegerToFloat"), 0u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(IntegerMatMulFusionTest, CanBeDisabledByName) {
  const PassTestGraph g = DynamicQuantizedMatMul(false, true);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll, {{"session.disabled_optimizers", "integer_matmul_fusion"}}),
                  "MatMulIntegerToFloat"),
            0u);
}

}  // namespace
}  // namespace tessera::test
