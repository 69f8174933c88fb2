// ai.tessera::DepthwisePointwiseConv (graph/passes/depthwise_pointwise_fusion.h) on the CPU EP against the two
// convolutions it replaces (Conv with group = C, its activation, the 1 x 1 Conv, the residual and the activation
// computed by the CPU EP's own Conv kernels), and its shape checks (EP SDK depthwise_pointwise_geometry.h).
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

constexpr DataType kF32 = DataType::kFloat;

// relu(W_pw . hardswish(depthwise 5 x 5 (X) + B_dw) + B_pw + Z) through separate nodes on the CPU EP.
Tensor Composed(const Tensor& x, const Tensor& w_dw, const Tensor& b_dw, const Tensor& w_pw, const Tensor& b_pw,
                const Tensor& z) {
  OpTester dw("Conv", 17);
  dw.Attr("group", x.shape()[1]).Attr("pads", std::vector<int64_t>{2, 1, 2, 3}).Attr("strides", std::vector<int64_t>{2, 1});
  dw.Input("X", x).Input("W", w_dw, true).Input("B", b_dw, true).OutputName("Y");
  OpTester act("HardSwish", 14);
  act.Input("X", dw.RunOn("cpu")[0]).OutputName("Y");
  OpTester pw("Conv", 17);
  pw.Input("X", act.RunOn("cpu")[0]).Input("W", w_pw, true).Input("B", b_pw, true).OutputName("Y");
  OpTester add("Add", 14);
  add.Input("A", pw.RunOn("cpu")[0]).Input("B", z).OutputName("C");
  OpTester relu("Relu", 14);
  relu.Input("X", add.RunOn("cpu")[0]).OutputName("Y");
  return relu.RunOn("cpu")[0];
}

TEST(DepthwisePointwiseConvTest, MatchesTheTwoConvolutionsWithActivationsAndAResidual) {
  const Tensor x = RandomTensor(kF32, {2, 6, 10, 9}, 1), w_dw = RandomTensor(kF32, {6, 1, 5, 5}, 2);
  const Tensor b_dw = RandomTensor(kF32, {6}, 3), w_pw = RandomTensor(kF32, {7, 6, 1, 1}, 4);
  const Tensor b_pw = RandomTensor(kF32, {7}, 5), z = RandomTensor(kF32, {7, 1, 1}, 6);  // Z broadcasts
  OpTester t("DepthwisePointwiseConv", 1, "ai.tessera");
  t.Attr("pads", std::vector<int64_t>{2, 1, 2, 3}).Attr("strides", std::vector<int64_t>{2, 1});
  t.Attr("depthwise_activation", std::string("HardSwish")).Attr("activation", std::string("Relu"));
  t.Input("X", x).Input("W_dw", w_dw, true).Input("B_dw", b_dw, true).Input("W_pw", w_pw, true);
  t.Input("B_pw", b_pw, true).Input("Z", z);
  t.Output("Y", Composed(x, w_dw, b_dw, w_pw, b_pw, z)).Tolerance(1e-5, 1e-5);
  t.Run({"cpu"});
}

TEST(DepthwisePointwiseConvTest, OperandsOfTheWrongShapeAreNamed) {
  const Tensor x = RandomTensor(kF32, {1, 4, 5, 5}, 7);
  {
    OpTester t("DepthwisePointwiseConv", 1, "ai.tessera");
    t.Input("X", x).Input("W_dw", RandomTensor(kF32, {4, 2, 3, 3}, 8), true).OmittedInput();
    t.Input("W_pw", RandomTensor(kF32, {3, 4, 1, 1}, 9), true).OutputName("Y");
    t.ExpectFailure("W_dw (input 1) [4,2,3,3] must be [4, 1, R, S]").Run({"cpu"});
  }
  {
    OpTester t("DepthwisePointwiseConv", 1, "ai.tessera");
    t.Input("X", x).Input("W_dw", RandomTensor(kF32, {4, 1, 3, 3}, 8), true).OmittedInput();
    t.Input("W_pw", RandomTensor(kF32, {3, 5, 1, 1}, 9), true).OutputName("Y");
    t.ExpectFailure("W_pw (input 3) [3,5,1,1] must be [K, 4, 1, 1]").Run({"cpu"});
  }
  {
    OpTester t("DepthwisePointwiseConv", 1, "ai.tessera");
    t.Input("X", x).Input("W_dw", RandomTensor(kF32, {4, 1, 3, 3}, 8), true).OmittedInput();
    t.Input("W_pw", RandomTensor(kF32, {3, 4, 1, 1}, 9), true).OmittedInput();
    t.Input("Z", RandomTensor(kF32, {1, 2, 3, 3}, 10)).OutputName("Y");
    t.ExpectFailure("Z (input 5)").Run({"cpu"});
  }
}

}  // namespace
}  // namespace tessera::test
