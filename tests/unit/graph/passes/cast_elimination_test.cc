#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[2,3] (float) -> Cast(to) -> Relu -> y, or the Cast writing y itself.
PassTestGraph CastThenRelu(int64_t to, bool relu = true) {
  PassTestGraph g;
  g.Input("x", {2, 3}).Output("y");
  SetInt(g.Node("Cast", {"x"}, {relu ? "c" : "y"}), "to", to);
  if (relu) {
    if (to == 1) {
      g.Node("Relu", {"c"}, {"y"});
    } else {
      g.Node("Relu", {"c"}, {"r"});
      SetInt(g.Node("Cast", {"r"}, {"y"}), "to", 1);
    }
  }
  return g;
}

TEST(CastEliminationTest, RemovesACastToTheTypeTheValueHas) {
  const PassTestGraph g = CastThenRelu(1);
  // Level basic, as onnxruntime's CastElimination rewrite; not without optimizations.
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kNone), "Cast"), 1u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kBasic), std::vector<std::string>{"Relu"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"Relu"});
  ExpectSameOutputs(g, OptimizationLevel::kBasic, 0.0f);
}

TEST(CastEliminationTest, KeepsCastsThatChangeTheType) {
  const PassTestGraph g = CastThenRelu(10);  // float -> float16 -> Relu -> float
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "Cast"), 2u);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "Cast"), 2u);
}

TEST(CastEliminationTest, ANoOpCastWritingAGraphOutputBecomesIdentity) {
  const PassTestGraph g = CastThenRelu(1, /*relu=*/false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"Identity"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

}  // namespace
}  // namespace tessera::test
