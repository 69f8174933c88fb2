#include <gtest/gtest.h>

#include <cmath>

#include "graph/model_loader.h"
#include "graph/passes/conv_bn_folding.h"
#include "graph/type_inference.h"
#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[1,3,6,6] -> Conv(W[4,3,3,3], pads 1[, B]) -> BatchNormalization -> Relu -> y
PassTestGraph ConvBnRelu(bool conv_bias, bool conv_output_is_graph_output = false) {
  PassTestGraph g;
  g.Input("x", {1, 3, 6, 6}).Output("y");
  g.Floats("W", {4, 3, 3, 3}, PassTestGraph::Random(108, -1, 1, 7));
  std::vector<std::string> conv_inputs = {"x", "W"};
  if (conv_bias) {
    g.Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
    conv_inputs.push_back("B");
  }
  g.Floats("scale", {4}, {1.5f, 0.5f, -1.0f, 2.0f})
      .Floats("shift", {4}, {0.1f, -0.2f, 0.3f, 0.0f})
      .Floats("mean", {4}, {0.2f, -0.1f, 0.5f, 1.0f})
      .Floats("var", {4}, {0.5f, 1.5f, 2.0f, 0.25f});
  SetInts(g.Node("Conv", conv_inputs, {"c"}), "pads", {1, 1, 1, 1});
  SetFloat(g.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}), "epsilon", 1e-3f);
  g.Node("Relu", {"bn"}, {"y"});
  if (conv_output_is_graph_output) g.Output("c");
  return g;
}

TEST(ConvBnFoldingTest, FoldsBatchNormIntoConvWithBias) {
  const PassTestGraph g = ConvBnRelu(true);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "BatchNormalization"), 1u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(ConvBnFoldingTest, FoldsBatchNormIntoConvWithoutBias) {
  const PassTestGraph g = ConvBnRelu(false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(ConvBnFoldingTest, KeepsBatchNormWhenConvOutputHasOtherReaders) {
  const PassTestGraph g = ConvBnRelu(true, /*conv_output_is_graph_output=*/true);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "BatchNormalization"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kExtended);
}

// ConvTranspose's W is [C_in, C_out / group, k...]: output channel g * (C_out / group) + oc owns W[ic, oc] for the
// input channels ic of group g. Two groups of 2 input and 3 output channels make a wrong channel mapping visible.
TEST(ConvBnFoldingTest, FoldsBatchNormIntoGroupedConvTranspose) {
  for (bool bias : {true, false}) {
    PassTestGraph g;
    g.Input("x", {1, 4, 5, 6}).Output("y");
    g.Floats("W", {4, 3, 2, 2}, PassTestGraph::Random(48, -1, 1, 9));
    std::vector<std::string> inputs = {"x", "W"};
    if (bias) {
      g.Floats("B", {6}, {0.5f, -0.25f, 0.0f, 1.0f, 0.75f, -1.5f});
      inputs.push_back("B");
    }
    g.Floats("scale", {6}, {1.5f, 0.5f, -1.0f, 2.0f, 0.25f, 3.0f})
        .Floats("shift", {6}, {0.1f, -0.2f, 0.3f, 0.0f, 0.4f, -0.5f})
        .Floats("mean", {6}, {0.2f, -0.1f, 0.5f, 1.0f, -0.7f, 0.3f})
        .Floats("var", {6}, {0.5f, 1.5f, 2.0f, 0.25f, 1.0f, 0.75f});
    onnx::NodeProto& deconv = g.Node("ConvTranspose", inputs, {"c"});
    SetInts(deconv, "strides", {2, 2});
    SetInt(deconv, "group", 2);
    g.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"});
    g.Node("Relu", {"bn"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"ConvTranspose", "Relu"})) << bias;
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
  }
}

// float16 parameters fold in float32 and stay float16: the folded weights equal the float32 fold's, rounded.
TEST(ConvBnFoldingTest, FoldsFloat16ParametersIntoFloat16Weights) {
  const std::string bytes = ConvBnRelu(true).Serialize();
  std::unique_ptr<Model> single = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  std::unique_ptr<Model> half = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  for (auto& [name, tensor] : half->graph->initializers) {
    Tensor h = Tensor::Allocate(DataType::kFloat16, tensor.shape());
    for (int64_t i = 0; i < tensor.NumElements(); ++i) h.Data<Float16>()[i] = ToFloat16(tensor.Data<float>()[i]);
    tensor = h;
  }
  for (auto& [name, info] : half->graph->value_infos)
    if (info.type == DataType::kFloat) info.type = DataType::kFloat16;
  for (const auto& model : {&single, &half}) {
    InferElementTypes(*(*model)->graph);
    ASSERT_EQ(FoldConvBatchNorm(*(*model)->graph), 1u);
  }
  const Graph& g32 = *single->graph;
  const Graph& g16 = *half->graph;
  ASSERT_EQ(g16.nodes[0]->op_type, "Conv");
  for (size_t input : {1u, 2u}) {
    const Tensor& folded32 = g32.initializers.at(g32.nodes[0]->inputs[input]);
    const Tensor& folded16 = g16.initializers.at(g16.nodes[0]->inputs[input]);
    ASSERT_EQ(folded16.type(), DataType::kFloat16);
    EXPECT_EQ(g16.TypeOf(g16.nodes[0]->inputs[input]), DataType::kFloat16);
    ASSERT_EQ(folded16.shape(), folded32.shape());
    for (int64_t i = 0; i < folded32.NumElements(); ++i)
      EXPECT_NEAR(ToFloat(folded16.Data<Float16>()[i]), folded32.Data<float>()[i],
                  4e-3 * (1 + std::abs(folded32.Data<float>()[i])))
          << "input " << input << " element " << i;
  }
}

// ---- conv_affine_folding ------------------------------------------------------------------------------------------

// x[1,3,6,6] -> Conv(W[4,3,3,3], pads 1[, B]) -> c, then the steps the caller adds.
PassTestGraph ConvThen(bool conv_bias) {
  PassTestGraph g;
  g.Input("x", {1, 3, 6, 6}).Output("y");
  g.Floats("W", {4, 3, 3, 3}, PassTestGraph::Random(108, -1, 1, 17));
  std::vector<std::string> conv_inputs = {"x", "W"};
  if (conv_bias) {
    g.Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
    conv_inputs.push_back("B");
  }
  SetInts(g.Node("Conv", conv_inputs, {"c"}), "pads", {1, 1, 1, 1});
  return g;
}

// PP-LCNet's learnable affine block: scalar scale and bias after the conv, then HardSwish.
TEST(ConvAffineFoldingTest, FoldsScalarScaleAndBiasIntoTheConv) {
  for (bool bias : {true, false}) {
    PassTestGraph g = ConvThen(bias);
    g.Floats("s", {1}, {1.75f}).Floats("b", {1}, {-0.3f});
    g.Node("Mul", {"c", "s"}, {"scaled"});
    g.Node("Add", {"b", "scaled"}, {"shifted"});  // the constant first
    g.Node("HardSwish", {"shifted"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "HardSwish"})) << bias;
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
  }
}

TEST(ConvAffineFoldingTest, FoldsPerChannelConstantsAndSub) {
  PassTestGraph g = ConvThen(true);
  g.Floats("s", {4, 1, 1}, {0.5f, -2.0f, 1.25f, 3.0f}).Floats("b", {1, 4, 1, 1}, {0.1f, 0.2f, -0.3f, 0.4f});
  g.Node("Mul", {"s", "c"}, {"scaled"});
  g.Node("Sub", {"scaled", "b"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

TEST(ConvAffineFoldingTest, FoldsPerChannelScaleIntoGroupedConvTranspose) {
  PassTestGraph g;
  g.Input("x", {1, 4, 3, 5}).Output("y");
  g.Floats("W", {4, 3, 2, 3}, PassTestGraph::Random(72, -1, 1, 11));
  g.Floats("s", {6, 1, 1}, {0.5f, -2.0f, 1.25f, 3.0f, 0.75f, -0.5f}).Floats("b", {1}, {0.3f});
  onnx::NodeProto& deconv = g.Node("ConvTranspose", {"x", "W"}, {"c"});
  SetInts(deconv, "strides", {2, 3});
  SetInt(deconv, "group", 2);
  g.Node("Mul", {"c", "s"}, {"scaled"});
  g.Node("Add", {"scaled", "b"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"ConvTranspose"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
}

// A bias Add before the BatchNormalization (as PaddlePaddle exports ConvTranspose's bias) folds, then the BN.
TEST(ConvAffineFoldingTest, BiasAddThenBatchNormBothFold) {
  PassTestGraph g = ConvThen(false);
  g.Floats("b", {1, 4, 1, 1}, {0.1f, 0.2f, -0.3f, 0.4f})
      .Floats("scale", {4}, {1.5f, 0.5f, -1.0f, 2.0f})
      .Floats("shift", {4}, {0.1f, -0.2f, 0.3f, 0.0f})
      .Floats("mean", {4}, {0.2f, -0.1f, 0.5f, 1.0f})
      .Floats("var", {4}, {0.5f, 1.5f, 2.0f, 0.25f});
  g.Node("Add", {"c", "b"}, {"biased"});
  g.Node("BatchNormalization", {"biased", "scale", "shift", "mean", "var"}, {"bn"});
  g.Node("Relu", {"bn"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(ConvAffineFoldingTest, LeavesStepsThatAreNotPerChannel) {
  {  // a constant that varies along a spatial axis
    PassTestGraph g = ConvThen(true);
    g.Floats("s", {1, 1, 6}, PassTestGraph::Random(6, 0.5f, 2.0f, 3));
    g.Node("Mul", {"c", "s"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Mul"}));
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
  }
  {  // constant - conv: the conv's sign would flip, not folded
    PassTestGraph g = ConvThen(true);
    g.Floats("b", {1}, {2.0f});
    g.Node("Sub", {"b", "c"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Sub"}));
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
  }
  {  // the conv's output read elsewhere too
    PassTestGraph g = ConvThen(true);
    g.Output("c");
    g.Floats("s", {1}, {2.0f});
    g.Node("Mul", {"c", "s"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Mul"}));
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f);
  }
}

}  // namespace
}  // namespace tessera::test
