// gemm_to_matmul: Hugging Face's Conv1D (Reshape -> Gemm -> Reshape) back into MatMul + Add, which the epilogue
// fusion then takes together with the activation after it.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

std::vector<float> Values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 13) - 6);
  return v;
}

// x [2, 3, 8] -> view(-1, 8) -> addmm(bias, ., W [8, 5]) -> view(2, 3, 5) [-> Relu]
PassTestGraph Conv1D(bool bias, bool relu, float beta = 1.0f, int64_t batch = 2) {
  PassTestGraph g;
  g.Input("x", {batch, 3, 8}).Output("y");
  g.Floats("w", {8, 5}, Values(40, 0.05f)).Int64s("flat", {2}, {-1, 8}).Int64s("back", {3}, {2, 3, 5});
  if (bias) g.Floats("bias", {5}, Values(5, 0.1f));
  g.Node("Reshape", {"x", "flat"}, {"x2d"});
  onnx::NodeProto& gemm = g.Node("Gemm", bias ? std::vector<std::string>{"x2d", "w", "bias"}
                                              : std::vector<std::string>{"x2d", "w"},
                                 {"y2d"});
  if (beta != 1.0f) SetFloat(gemm, "beta", beta);
  g.Node("Reshape", {"y2d", "back"}, {relu ? "h" : "y"});
  if (relu) g.Node("Relu", {"h"}, {"y"});
  return g;
}

TEST(GemmToMatMulTest, BiasAndActivationBecomeOneFusedMatMul) {
  const PassTestGraph g = Conv1D(true, true);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Gemm", "Reshape", "Relu"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"FusedMatMul"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(GemmToMatMulTest, WithoutABiasTheProductAlone) {
  const PassTestGraph g = Conv1D(false, false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"MatMul"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(GemmToMatMulTest, AScaledCStaysAGemm) {
  const PassTestGraph g = Conv1D(true, false, 0.5f);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "Gemm"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

// X's shape unknown (here a symbolic batch): the product stays on the 2-D rows, the activation moves before the
// second Reshape and joins the bias in the FusedMatMul.
TEST(GemmToMatMulTest, WithAnUnknownInputShapeTheActivationMovesBeforeTheReshape) {
  const PassTestGraph g = Conv1D(true, true, 1.0f, -1);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Reshape", "FusedMatMul", "Reshape"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
  const PassTestGraph plain = Conv1D(true, false, 1.0f, -1);  // nothing to gain without an activation
  EXPECT_EQ(Count(OpsAt(plain, OptimizationLevel::kAll), "Gemm"), 1u);
}

}  // namespace
}  // namespace tessera::test
