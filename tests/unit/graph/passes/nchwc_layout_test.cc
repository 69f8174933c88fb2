// The nchwc_layout pass: which nodes it rewrites into the blocked channel layout, where the reorders back to
// plain go, and (through sessions at level all against level none) that the results do not change. Channel
// counts are multiples of 16 so the tests hold for both channel blocks (8 on AVX2, 16 on AVX-512 hosts).
#include "graph/passes/nchwc_layout.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "graph/model_loader.h"
#include "graph/model_writer.h"
#include "graph/passes/conv_activation_fusion.h"
#include "graph/type_inference.h"
#include "pass_test_graph.h"

namespace tessera::test {
namespace {

constexpr float kTolerance = 2e-4f;

TEST(NchwcLayoutTest, ResidualBlockStaysBlockedUntilTheGraphOutput) {
  PassTestGraph g;
  g.Input("x", {1, 3, 10, 10}).Output("y");
  AddConv(g, "x", "c1", 3, 16, 3, 1);
  g.Node("Relu", {"c1"}, {"a"});
  AddConv(g, "a", "c2", 16, 16, 3, 1);
  g.Node("Relu", {"c2"}, {"b"});
  AddConv(g, "b", "c3", 16, 16, 3, 1);
  g.Node("Add", {"c3", "a"}, {"sum"});
  g.Node("Relu", {"sum"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"NchwcConv", "NchwcConv", "NchwcConv", "ReorderFromBlocked"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

TEST(NchwcLayoutTest, DepthwiseAndPointwiseWithResidualLikeMobileNetV2) {
  PassTestGraph g(13);
  g.Input("x", {2, 16, 9, 9}).Output("y");
  g.Scalar("lo", 0.0f).Scalar("hi", 6.0f);
  AddConv(g, "x", "expand", 16, 64, 1, 0);
  g.Node("Clip", {"expand", "lo", "hi"}, {"e"});
  AddConv(g, "e", "dw", 64, 64, 3, 1, 64);
  g.Node("Clip", {"dw", "lo", "hi"}, {"d"});
  AddConv(g, "d", "project", 64, 16, 1, 0);
  AddConv(g, "project", "expand2", 16, 32, 1, 0);
  AddConv(g, "expand2", "dw2", 32, 32, 3, 1, 32, 2);
  g.Node("Clip", {"dw2", "lo", "hi"}, {"y"});
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "NchwcConv"), 5u);
  EXPECT_EQ(Count(ops, "ReorderFromBlocked"), 1u);
  EXPECT_EQ(ops.size(), 6u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

TEST(NchwcLayoutTest, PoolingRunsBlockedAndFlattenReadsPlain) {
  PassTestGraph g;
  g.Input("x", {1, 3, 17, 17}).Output("y");
  AddConv(g, "x", "c1", 3, 32, 3, 1, 1, 2);
  auto& max_pool = g.Node("MaxPool", {"c1"}, {"m"});
  SetInts(max_pool, "kernel_shape", {3, 3});
  SetInts(max_pool, "strides", {2, 2});
  SetInts(max_pool, "pads", {1, 1, 1, 1});
  SetInt(max_pool, "ceil_mode", 1);
  AddConv(g, "m", "c2", 32, 16, 1, 0);
  auto& average_pool = g.Node("AveragePool", {"c2"}, {"p"});
  SetInts(average_pool, "kernel_shape", {3, 3});
  SetInts(average_pool, "strides", {2, 2});
  SetInts(average_pool, "pads", {1, 1, 0, 0});
  SetInt(average_pool, "count_include_pad", 1);
  AddConv(g, "p", "c3", 16, 16, 3, 1);
  g.Node("GlobalAveragePool", {"c3"}, {"gap"});
  g.Node("Flatten", {"gap"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"NchwcConv", "NchwcMaxPool", "NchwcConv", "NchwcAveragePool", "NchwcConv",
                                      "NchwcGlobalAveragePool", "ReorderFromBlocked", "Flatten"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

TEST(NchwcLayoutTest, ConcatAlongChannelsOfBlockedParts) {
  PassTestGraph g;
  g.Input("x", {1, 16, 6, 6}).Output("y");
  AddConv(g, "x", "left", 16, 16, 3, 1);
  AddConv(g, "x", "right", 16, 32, 1, 0);
  SetInt(g.Node("Concat", {"left", "right"}, {"cat"}), "axis", -3);
  AddConv(g, "cat", "y", 48, 16, 3, 1);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"NchwcConv", "NchwcConv", "Concat", "NchwcConv", "ReorderFromBlocked"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

// Elementwise ops with scalar constants between convs stay blocked. (Clip to 5, so that hard_swish_fusion leaves
// the chain alone; the exact hard-swish spelling is the next test.)
TEST(NchwcLayoutTest, ElementwiseChainWithScalarConstantsStaysBlocked) {
  PassTestGraph g(13);
  g.Input("x", {1, 3, 8, 8}).Output("y");
  g.Scalar("three", 3.0f).Scalar("zero", 0.0f).Scalar("five", 5.0f).Scalar("six", 6.0f);
  AddConv(g, "x", "c1", 3, 16, 3, 1);
  g.Node("Add", {"c1", "three"}, {"shifted"});
  g.Node("Clip", {"shifted", "zero", "five"}, {"clipped"});
  g.Node("Div", {"clipped", "six"}, {"gate"});
  g.Node("Mul", {"c1", "gate"}, {"hs"});
  g.Node("Mul", {"six", "hs"}, {"scaled"});
  AddConv(g, "scaled", "y", 16, 16, 1, 0);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"NchwcConv", "Add", "Clip", "Div", "Mul",
                                                                         "Mul", "NchwcConv", "ReorderFromBlocked"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

// x * (Clip(x + 3, 0, 6) / 6) after a conv becomes HardSwish, which the conv takes as its activation.
TEST(NchwcLayoutTest, DecomposedHardSwishIsFusedIntoTheBlockedConv) {
  PassTestGraph g(13);
  g.Input("x", {1, 3, 8, 8}).Output("y");
  g.Scalar("three", 3.0f).Scalar("zero", 0.0f).Scalar("six", 6.0f);
  AddConv(g, "x", "c1", 3, 16, 3, 1);
  g.Node("Add", {"c1", "three"}, {"shifted"});
  g.Node("Clip", {"shifted", "zero", "six"}, {"clipped"});
  g.Node("Div", {"clipped", "six"}, {"gate"});
  g.Node("Mul", {"c1", "gate"}, {"hs"});
  g.Node("Mul", {"six", "hs"}, {"scaled"});
  AddConv(g, "scaled", "y", 16, 16, 1, 0);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"NchwcConv", "Mul", "NchwcConv", "ReorderFromBlocked"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

TEST(NchwcLayoutTest, ValueWithPlainReadersIsReorderedOnceAndGraphOutputsStayPlain) {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Output("a").Output("y").Output("t");
  AddConv(g, "x", "a", 3, 16, 3, 1);
  AddConv(g, "a", "y", 16, 16, 3, 1);
  SetInts(g.Node("Transpose", {"a"}, {"t"}), "perm", {0, 2, 3, 1});
  g.Node("Softmax", {"a"}, {"s"});
  g.Output("s");
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "ReorderFromBlocked"), 2u);  // one for a (read by Transpose and Softmax too), one for y
  EXPECT_EQ(Count(ops, "NchwcConv"), 2u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

TEST(NchwcLayoutTest, ResidualFromAPlainValueKeepsTheFusedConvPlain) {
  PassTestGraph g;
  g.Input("x", {1, 16, 6, 6}).Output("y");
  AddConv(g, "x", "c1", 16, 16, 3, 1);
  g.Node("Add", {"c1", "x"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
}

// Direct pass calls, for a chosen channel block and EP answer.
PassTestGraph EightChannelChain() {
  PassTestGraph g;
  g.Input("x", {1, 8, 6, 6}).Output("y");
  AddConv(g, "x", "c1", 8, 8, 3, 1);
  g.Node("Relu", {"c1"}, {"r"});
  AddConv(g, "r", "y", 8, 8, 1, 0);
  return g;
}

TEST(NchwcLayoutTest, RewritesForTheGivenChannelBlock) {
  std::unique_ptr<Model> model = LoadForPasses(EightChannelChain());
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  EXPECT_EQ(ConvertToBlockedLayout(*model->graph, yes, 8), 3u);
  const Graph& graph = *model->graph;
  ASSERT_EQ(graph.nodes.size(), 4u);
  EXPECT_EQ(graph.nodes[0]->op_type, "NchwcConv");
  EXPECT_EQ(graph.nodes[0]->inputs[0], "x");  // a plain graph input goes straight into the conv
  EXPECT_EQ(graph.nodes[0]->GetInt("channel_block"), 8);
  EXPECT_EQ(graph.nodes[1]->op_type, "Relu");
  EXPECT_EQ(graph.nodes[1]->inputs[0], graph.nodes[0]->outputs[0]);
  EXPECT_EQ(graph.nodes[2]->op_type, "NchwcConv");
  EXPECT_EQ(graph.nodes[2]->inputs[0], graph.nodes[1]->outputs[0]);
  EXPECT_EQ(graph.nodes[3]->op_type, "ReorderFromBlocked");
  EXPECT_EQ(graph.nodes[3]->inputs[0], graph.nodes[2]->outputs[0]);
  EXPECT_EQ(graph.nodes[3]->outputs[0], "y");
  EXPECT_EQ(graph.TypeOf(graph.nodes[0]->outputs[0]), DataType::kFloat);
  EXPECT_EQ(graph.opsets.at("ai.tessera"), 1);

  std::unique_ptr<Model> sixteen = LoadForPasses(EightChannelChain());
  EXPECT_EQ(ConvertToBlockedLayout(*sixteen->graph, yes, 16), 0u);
}

// A blocked value takes its shape from the plain value's, when the model states that one ([N, C/B, H, W, B], or
// [N, 1, H, W, C] for block 0); the CUDA EP's convolutions prepare their plans from it.
TEST(NchwcLayoutTest, BlockedValuesTakeTheirShapesFromThePlainValues) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  const auto dims = [](const Graph& graph, const std::string& value) {
    std::vector<int64_t> out;
    const ValueInfo* info = graph.FindValueInfo(value);
    if (info != nullptr && info->shape)
      for (const Dim& d : *info->shape) out.push_back(d.value);
    return out;
  };
  for (const int64_t block : {int64_t{8}, int64_t{0}}) {
    std::unique_ptr<Model> model = LoadForPasses(EightChannelChain());
    Graph& graph = *model->graph;
    ValueInfo c1;
    c1.name = "c1";
    c1.type = DataType::kFloat;
    c1.shape = std::vector<Dim>(4);
    for (size_t i = 0; i < 4; ++i) (*c1.shape)[i].value = std::vector<int64_t>{1, 8, 6, 6}[i];
    graph.value_infos["c1"] = c1;
    ASSERT_EQ(ConvertToBlockedLayout(graph, yes, block), 3u);
    // c1 (stated) -> its blocked twin has a shape; r follows from c1 through the Relu (no shape stated): none.
    // Eight channels: one block of 8, or NHWC; the same dims either way.
    EXPECT_EQ(dims(graph, graph.nodes[0]->outputs[0]), (std::vector<int64_t>{1, 1, 6, 6, 8})) << "block " << block;
    EXPECT_EQ(dims(graph, graph.nodes[1]->outputs[0]), std::vector<int64_t>{});
  }
}

// x -> c1 -> a; a -> c2 -> b; c3(b) + a -> y, and with `late_reader` also a -> c4 -> z after c3.
PassTestGraph ResidualGraph(bool late_reader) {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Output("y");
  AddConv(g, "x", "a", 3, 16, 3, 1);
  AddConv(g, "a", "b", 16, 16, 3, 1);
  AddConv(g, "b", "c3", 16, 16, 3, 1);
  g.Node("Add", {"c3", "a"}, {"y"});
  if (late_reader) {
    AddConv(g, "a", "z", 16, 16, 1, 0);
    g.Output("z");
  }
  return g;
}

TEST(NchwcLayoutTest, ResidualIsOverwrittenOnlyAtItsLastUse) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  for (bool late_reader : {false, true}) {
    SCOPED_TRACE(late_reader ? "a read after the residual conv" : "residual conv is a's last reader");
    std::unique_ptr<Model> model = LoadForPasses(ResidualGraph(late_reader));
    ASSERT_EQ(FuseConvActivation(*model->graph, yes), 1u);
    ConvertToBlockedLayout(*model->graph, yes, 16);
    const Node& residual_conv = *model->graph->nodes[2];
    ASSERT_EQ(residual_conv.op_type, "NchwcConv");
    ASSERT_EQ(residual_conv.inputs.size(), 4u);
    EXPECT_EQ(residual_conv.GetInt("residual_in_place", 0), late_reader ? 0 : 1);
    ExpectSameOutputs(ResidualGraph(late_reader), OptimizationLevel::kAll, kTolerance);
  }
}

// MobileNetV2's 24-channel stage: x -> expand 16->24 -> p; p -> 24->48 + Relu -> dw 48 -> 48->24 + p -> q;
// q is read by Sigmoid (not zero-preserving), Relu, and a 24-channel graph output.
PassTestGraph TwentyFourChannelGraph() {
  PassTestGraph g;
  g.Input("x", {1, 16, 7, 7}).Output("q").Output("s").Output("r");
  AddConv(g, "x", "p", 16, 24, 1, 0);
  AddConv(g, "p", "e", 24, 48, 1, 0);
  g.Node("Relu", {"e"}, {"er"});
  AddConv(g, "er", "d", 48, 48, 3, 1, 48);
  AddConv(g, "d", "proj", 48, 24, 1, 0);
  g.Node("Add", {"proj", "p"}, {"q"});
  g.Node("Sigmoid", {"q"}, {"s"});
  g.Node("Relu", {"q"}, {"r"});
  return g;
}

TEST(NchwcLayoutTest, PadsTwentyFourChannelsToWholeBlocksAndKeepsThemAwayFromSigmoid) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  std::unique_ptr<Model> model = LoadForPasses(TwentyFourChannelGraph());
  FuseConvActivation(*model->graph, yes);
  ConvertToBlockedLayout(*model->graph, yes, 16);
  std::vector<std::string> ops;
  for (const auto& node : model->graph->nodes) ops.push_back(node->op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"NchwcConv", "NchwcConv", "NchwcConv", "NchwcConv", "ReorderFromBlocked",
                                           "Sigmoid", "Relu", "ReorderFromBlocked"}));
  const Node& q_to_plain = *model->graph->nodes[4];
  EXPECT_EQ(q_to_plain.outputs[0], "q");
  EXPECT_EQ(q_to_plain.GetInt("channels"), 24);
  EXPECT_EQ(model->graph->nodes[6]->inputs[0], model->graph->nodes[3]->outputs[0]);  // Relu reads q blocked
  ExpectSameOutputs(TwentyFourChannelGraph(), OptimizationLevel::kAll, kTolerance);
}

std::vector<std::string> OpsAfterPass(const PassTestGraph& g, int64_t block) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  std::unique_ptr<Model> model = LoadForPasses(g);
  ConvertToBlockedLayout(*model->graph, yes, block);
  std::vector<std::string> ops;
  for (const auto& node : model->graph->nodes) ops.push_back(node->op_type);
  return ops;
}

TEST(NchwcLayoutTest, ChannelsThatWouldNeedTooMuchPaddingStayPlain) {
  for (auto [block, channels] : {std::pair<int64_t, int64_t>{16, 12}, {16, 20}, {8, 4}}) {
    SCOPED_TRACE("block " + std::to_string(block) + ", " + std::to_string(channels) + " channels");
    PassTestGraph g;
    g.Input("x", {1, 3, 8, 8}).Output("y");
    AddConv(g, "x", "c1", 3, channels, 3, 1);
    g.Node("Relu", {"c1"}, {"r"});
    AddConv(g, "r", "y", channels, channels, 3, 1);
    EXPECT_EQ(OpsAfterPass(g, block), (std::vector<std::string>{"Conv", "Relu", "Conv"}));
  }
}

TEST(NchwcLayoutTest, NhwcTakesOddChannelCountsAndConcatsAlongTheLastAxis) {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Output("y").Output("grouped").Output("narrow");
  AddConv(g, "x", "left", 3, 12, 3, 1);
  AddConv(g, "x", "right", 3, 9, 1, 0);
  SetInt(g.Node("Concat", {"left", "right"}, {"cat"}), "axis", 1);
  AddConv(g, "cat", "y", 21, 21, 3, 1, 21);        // depthwise: rewritten
  AddConv(g, "left", "grouped", 12, 12, 3, 1, 2);  // grouped: stays plain
  AddConv(g, "x", "narrow", 3, 4, 3, 1);           // fewer than 8 output channels: stays plain
  std::unique_ptr<Model> model = LoadForPasses(g);
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  EXPECT_EQ(ConvertToBlockedLayout(*model->graph, yes, 0), 4u);
  std::vector<std::string> ops;
  for (const auto& node : model->graph->nodes) ops.push_back(node->op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"NchwcConv", "NchwcConv", "Concat", "NchwcConv", "ReorderFromBlocked",
                                           "ReorderFromBlocked", "Conv", "Conv"}));
  EXPECT_EQ(model->graph->nodes[2]->GetInt("axis"), 4);
  EXPECT_EQ(model->graph->nodes[0]->GetInt("channel_block"), 0);
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);  // the host's own layout
}

// Each conv's EP picks its block: a value flows blocked only into a conv of the same block, and a conv given no
// block stays NCHW.
TEST(NchwcLayoutTest, EachConvGetsItsOwnEpsChannelBlock) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  std::unique_ptr<Model> mixed = LoadForPasses(EightChannelChain());
  const ChannelBlockFor by_name = [](const Node& conv, const Graph&) -> std::optional<int64_t> {
    return conv.outputs[0] == "c1" ? 0 : 8;
  };
  EXPECT_EQ(ConvertToBlockedLayout(*mixed->graph, yes, by_name), 3u);
  const Graph& graph = *mixed->graph;
  ASSERT_EQ(graph.nodes.size(), 5u);
  EXPECT_EQ(graph.nodes[0]->GetInt("channel_block"), 0);
  EXPECT_EQ(graph.nodes[1]->op_type, "Relu");  // NHWC in, NHWC out
  EXPECT_EQ(graph.nodes[2]->op_type, "ReorderFromBlocked");
  EXPECT_EQ(graph.nodes[2]->outputs[0], "r");
  EXPECT_EQ(graph.nodes[3]->op_type, "NchwcConv");
  EXPECT_EQ(graph.nodes[3]->GetInt("channel_block"), 8);
  EXPECT_EQ(graph.nodes[3]->inputs[0], "r");  // the 8-block conv reads the plain value

  std::unique_ptr<Model> none = LoadForPasses(EightChannelChain());
  const ChannelBlockFor only_last = [](const Node& conv, const Graph&) -> std::optional<int64_t> {
    return conv.outputs[0] == "c1" ? std::nullopt : std::optional<int64_t>(0);
  };
  EXPECT_EQ(ConvertToBlockedLayout(*none->graph, yes, only_last), 1u);
  EXPECT_EQ(none->graph->nodes[0]->op_type, "Conv");
  EXPECT_EQ(none->graph->nodes[2]->op_type, "NchwcConv");
}

// float16 convolutions are rewritten too (the CUDA EP asks for them); their blocked values keep the type.
TEST(NchwcLayoutTest, Float16ValuesKeepTheirType) {
  std::unique_ptr<Model> model = LoadForPasses(EightChannelChain());
  Graph& graph = *model->graph;
  for (auto& [name, info] : graph.value_infos)
    if (info.type == DataType::kFloat) info.type = DataType::kFloat16;
  for (auto& input : graph.inputs) input.type = DataType::kFloat16;
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  EXPECT_EQ(ConvertToBlockedLayout(graph, yes, 0), 3u);
  EXPECT_EQ(graph.TypeOf(graph.nodes[0]->outputs[0]), DataType::kFloat16);
  EXPECT_EQ(graph.TypeOf(graph.nodes[1]->outputs[0]), DataType::kFloat16);
}

TEST(NchwcLayoutTest, NothingChangesWhenAnotherEpRunsTheNodes) {
  std::unique_ptr<Model> model = LoadForPasses(EightChannelChain());
  const CanFuse no = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return false; };
  EXPECT_EQ(ConvertToBlockedLayout(*model->graph, no, 8), 0u);
  ASSERT_EQ(model->graph->nodes.size(), 3u);
  EXPECT_EQ(model->graph->nodes[0]->op_type, "Conv");
  EXPECT_EQ(model->graph->nodes[0]->outputs[0], "c1");
  EXPECT_EQ(model->graph->nodes[2]->op_type, "Conv");
}

// YOLO's C2f / C3k2 block: a conv's output split in two along channels, one half through more convs, the halves
// concatenated again -- all blocked, for every block size (split sizes in blocks for 8 / 16, axis 4 for NHWC), with
// the sizes as an input (opset 13+) or an attribute (before 13).
PassTestGraph SplitConcatBlock(int opset) {
  PassTestGraph g(opset);
  g.Input("x", {1, 16, 6, 6}).Output("y");
  AddConv(g, "x", "c1", 16, 64, 1, 0);
  onnx::NodeProto* split = nullptr;
  if (opset >= 13) {
    g.Int64s("sizes", {2}, {32, 32});
    split = &g.Node("Split", {"c1", "sizes"}, {"a", "b"});
  } else {
    split = &g.Node("Split", {"c1"}, {"a", "b"});
    SetInts(*split, "split", {32, 32});
  }
  SetInt(*split, "axis", 1);
  AddConv(g, "b", "m", 32, 32, 3, 1);
  g.Node("Add", {"m", "b"}, {"res"});
  SetInt(g.Node("Concat", {"a", "b", "res"}, {"cat"}), "axis", 1);
  AddConv(g, "cat", "y", 96, 16, 1, 0);
  return g;
}

TEST(NchwcLayoutTest, SplitAlongChannelsStaysBlockedForEveryBlock) {
  for (int opset : {11, 17}) {
    const PassTestGraph g = SplitConcatBlock(opset);
    for (int64_t block : {0, 8, 16}) {
      SCOPED_TRACE("opset " + std::to_string(opset) + ", block " + std::to_string(block));
      std::unique_ptr<Model> model = LoadForPasses(g);
      const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
      ConvertToBlockedLayout(*model->graph, yes, block);
      std::vector<std::string> ops;
      for (const auto& node : model->graph->nodes) ops.push_back(node->op_type);
      EXPECT_EQ(ops, (std::vector<std::string>{"NchwcConv", "Split", "NchwcConv", "Add", "Concat", "NchwcConv",
                                               "ReorderFromBlocked"}));
      const Node& split = *model->graph->nodes[1];
      EXPECT_EQ(split.GetInt("axis"), block == 0 ? 4 : 1);
      const std::vector<int64_t> expected{block == 0 ? 32 : 32 / block, block == 0 ? 32 : 32 / block};
      if (opset >= 13) {
        const Tensor& sizes = model->graph->initializers.at(split.inputs[1]);
        EXPECT_EQ(std::vector<int64_t>(sizes.Data<int64_t>(), sizes.Data<int64_t>() + 2), expected);
      } else {
        EXPECT_EQ(split.GetInts("split"), expected);
      }
    }
    ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);  // the host's own layout
  }
}

// Parts that are not whole blocks keep the Split plain (with 8 / 16 blocks; NHWC splits anything).
TEST(NchwcLayoutTest, SplitIntoPartialBlocksStaysPlain) {
  PassTestGraph g;
  g.Input("x", {1, 16, 6, 6}).Output("y").Output("z");
  AddConv(g, "x", "c1", 16, 32, 1, 0);
  g.Int64s("sizes", {2}, {12, 20});
  SetInt(g.Node("Split", {"c1", "sizes"}, {"a", "b"}), "axis", 1);
  AddConv(g, "a", "y", 12, 16, 1, 0);
  AddConv(g, "b", "z", 20, 16, 1, 0);
  std::unique_ptr<Model> model = LoadForPasses(g);
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  ConvertToBlockedLayout(*model->graph, yes, 8);
  EXPECT_EQ(model->graph->nodes[1]->op_type, "ReorderFromBlocked");
  EXPECT_EQ(model->graph->nodes[2]->op_type, "Split");
  EXPECT_EQ(model->graph->nodes[2]->GetInt("axis"), 1);
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance);
}

// A QDQ model's activation pair between convolutions stays blocked (the 8-bit value in between too); a
// QuantizeLinear whose output is not read by a DequantizeLinear alone stays plain.
TEST(NchwcLayoutTest, QuantizeDequantizePairsBetweenConvsStayBlocked) {
  PassTestGraph g;
  g.Input("x", {1, 16, 6, 6}).Output("y").Output("q_out");
  g.Scalar("scale", 0.05f).Bytes("zero", {}, {128});
  AddConv(g, "x", "c1", 16, 32, 3, 1);
  g.Node("QuantizeLinear", {"c1", "scale", "zero"}, {"q"});
  g.Node("DequantizeLinear", {"q", "scale", "zero"}, {"dq"});
  AddConv(g, "dq", "c2", 32, 16, 1, 0);
  g.Node("QuantizeLinear", {"c2", "scale", "zero"}, {"q2"});
  SetInt(g.Node("Cast", {"q2"}, {"q_out"}), "to", onnx::TensorProto::FLOAT);
  g.Node("DequantizeLinear", {"q2", "scale", "zero"}, {"y"});
  for (int64_t block : {0, 8, 16}) {
    SCOPED_TRACE("block " + std::to_string(block));
    std::unique_ptr<Model> model = LoadForPasses(g);
    const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
    ConvertToBlockedLayout(*model->graph, yes, block);
    std::vector<std::string> ops;
    for (const auto& node : model->graph->nodes) ops.push_back(node->op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"NchwcConv", "QuantizeLinear", "DequantizeLinear", "NchwcConv",
                                             "ReorderFromBlocked", "QuantizeLinear", "Cast", "DequantizeLinear"}));
    EXPECT_EQ(model->graph->TypeOf(model->graph->nodes[1]->outputs[0]), DataType::kUInt8);
  }
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f);
}


// Runs `g` rewritten for channel block `block` (saved and reloaded, run without further optimization) against `g`
// unoptimized: checks the blocked kernels of every block size, not only the host's.
void ExpectSameOutputsInBlock(const PassTestGraph& g, int64_t block, float tolerance) {
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  std::unique_ptr<Model> model = LoadForPasses(g);
  ConvertToBlockedLayout(*model->graph, yes, block);
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("nchwc_block_" + std::to_string(getpid()) + "_" + std::to_string(block) + ".onnx");
  SaveModel(*model, *model->graph, path);
  Environment env;
  Session blocked(env, path, OptionsAt(OptimizationLevel::kNone));
  std::filesystem::remove(path);
  const std::string bytes = g.Serialize();
  Session reference(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = g.Feeds();
  const std::vector<Value> got = blocked.Run(feeds), want = reference.Run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor &a = got[i].tensor(), &b = want[i].tensor();
    ASSERT_EQ(a.shape(), b.shape()) << "output " << i;
    float worst = 0;
    for (int64_t k = 0; k < a.NumElements(); ++k) worst = std::max(worst, std::abs(a.Data<float>()[k] - b.Data<float>()[k]));
    EXPECT_LE(worst, tolerance) << "output " << i << " in block " << block;
  }
}

// A feature pyramid's top-down path (YOLO, YOLOX): a conv's output upsampled 2x and concatenated with a finer
// conv's output, then convolved. The Resize runs on the blocked tensor, so nothing is reordered in between.
// `how`: "scales" (Resize-13 nearest), "sizes" (Resize-13 linear, half_pixel), "upsample9", "upsample7".
PassTestGraph PyramidGraph(const std::string& how, int64_t channels) {
  PassTestGraph g(how == "upsample9" ? 9 : how == "upsample7" ? 7 : 13);
  g.Input("x", {1, 3, 8, 8}).Output("y");
  AddConv(g, "x", "fine", 3, channels, 3, 1);
  AddConv(g, "fine", "coarse", channels, channels, 3, 1, 1, 2);
  if (how == "scales") {
    g.Floats("scales", {4}, {1, 1, 2, 2});
    g.Node("Resize", {"coarse", "", "scales"}, {"up"});
  } else if (how == "sizes") {
    g.Int64s("sizes", {4}, {1, channels, 8, 8});
    auto& resize = g.Node("Resize", {"coarse", "", "", "sizes"}, {"up"});
    auto* mode = resize.add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s("linear");
  } else if (how == "upsample9") {
    g.Floats("scales", {4}, {1, 1, 2, 2});
    g.Node("Upsample", {"coarse", "scales"}, {"up"});
  } else {
    auto& upsample = g.Node("Upsample", {"coarse"}, {"up"});
    auto* scales = upsample.add_attribute();
    scales->set_name("scales");
    scales->set_type(onnx::AttributeProto::FLOATS);
    for (float v : {1.0f, 1.0f, 2.0f, 2.0f}) scales->add_floats(v);
  }
  SetInt(g.Node("Concat", {"up", "fine"}, {"cat"}), "axis", 1);
  AddConv(g, "cat", "y", 2 * channels, 16, 1, 0);
  return g;
}

TEST(NchwcLayoutTest, UpsamplingInAFeaturePyramidStaysBlocked) {
  for (const std::string how : {"scales", "sizes", "upsample9", "upsample7"}) {
    for (int64_t block : {0, 8, 16}) {
      SCOPED_TRACE(how + ", block " + std::to_string(block));
      const PassTestGraph g = PyramidGraph(how, 32);
      const std::vector<std::string> ops = OpsAfterPass(g, block);
      EXPECT_EQ(ops, (std::vector<std::string>{"NchwcConv", "NchwcConv", how.starts_with("upsample") ? "Upsample" : "Resize",
                                               "Concat", "NchwcConv", "ReorderFromBlocked"}));
      ExpectSameOutputsInBlock(g, block, kTolerance);
    }
  }
  ExpectSameOutputs(PyramidGraph("scales", 32), OptimizationLevel::kAll, kTolerance);
}

// 24 channels pad to two blocks of 16: the resize keeps the padding channels zero (the conv after it reads them).
TEST(NchwcLayoutTest, UpsamplingAPaddedBlockedValue) {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Output("y");
  AddConv(g, "x", "c1", 3, 24, 3, 1, 1, 2);
  g.Floats("scales", {4}, {1, 1, 2, 2});
  g.Node("Resize", {"c1", "", "scales"}, {"up"});
  AddConv(g, "up", "y", 24, 16, 3, 1);
  EXPECT_EQ(OpsAfterPass(g, 16), (std::vector<std::string>{"NchwcConv", "Resize", "NchwcConv", "ReorderFromBlocked"}));
  ExpectSameOutputsInBlock(g, 16, kTolerance);
}

// Resizes the blocked layout cannot express exactly read the plain twin: channels resized, tf_crop_and_resize,
// scales known only at run time.
TEST(NchwcLayoutTest, ResizesOfChannelsOrWithCroppingOrRuntimeScalesStayPlain) {
  const auto graph = [](const std::string& variant) {
    PassTestGraph g(13);
    g.Input("x", {1, 3, 8, 8}).Output("y");
    if (variant == "runtime") g.Input("scales", {4});
    AddConv(g, "x", "c1", 3, 16, 3, 1);
    if (variant == "channels") g.Floats("scales", {4}, {1, 2, 2, 2});
    if (variant == "crop") g.Floats("scales", {4}, {1, 1, 2, 2}).Floats("roi", {8}, {0, 0, 0, 0, 1, 1, 1, 1});
    auto& resize = g.Node("Resize", {"c1", variant == "crop" ? "roi" : "", "scales"}, {"y"});
    if (variant == "crop") {
      auto* mode = resize.add_attribute();
      mode->set_name("coordinate_transformation_mode");
      mode->set_type(onnx::AttributeProto::STRING);
      mode->set_s("tf_crop_and_resize");
    }
    return g;
  };
  for (const std::string variant : {"channels", "crop", "runtime"}) {
    SCOPED_TRACE(variant);
    EXPECT_EQ(OpsAfterPass(graph(variant), 16), (std::vector<std::string>{"NchwcConv", "ReorderFromBlocked", "Resize"}));
  }
}

}  // namespace
}  // namespace tessera::test
