// float32_regions: connected float16 regions that an EP computes by widening per node run in float32, with Casts
// only where values enter and leave them. First the pass alone, with a stated choice of kernels (which EP runs what,
// which kernels widen), then sessions on the CPU EP, whose float-compute adapters widen.
#include "graph/passes/float32_regions.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/model_loader.h"
#include "graph/type_inference.h"
#include "pass_test_graph.h"

namespace tessera::test {
namespace {

constexpr int kHalf = onnx::TensorProto::FLOAT16;
char kEpA, kEpB;  // identities of two EPs (their addresses)

// The kernels of the stated EPs: Conv, Relu and MaxPool on EP A, widening 16-bit inputs (float32 natively); Concat
// on EP A for any type, natively; Sigmoid on EP B for any type; Tanh on EP A, widening 16-bit inputs, with no
// float32 kernel; Cast on EP A for any type.
std::optional<KernelChoice> StatedKernels(const Node& node, const Graph& graph) {
  const DataType in = node.inputs.empty() ? DataType::kUndefined : graph.TypeOf(node.inputs[0]);
  const bool half = in == DataType::kFloat16 || in == DataType::kBFloat16;
  const std::string& op = node.op_type;
  if (op == "Conv" || op == "Relu" || op == "MaxPool") return KernelChoice{&kEpA, half};
  if (op == "Concat" || op == "Cast") return KernelChoice{&kEpA, false};
  if (op == "Sigmoid") return KernelChoice{&kEpB, false};
  if (op == "Tanh" && half) return KernelChoice{&kEpA, true};
  return std::nullopt;
}

struct Rewritten {
  std::unique_ptr<Model> model;
  size_t moved = 0;
  const Graph& graph() const { return *model->graph; }
  // "op(inputs)->outputs" per node, in order.
  std::vector<std::string> Nodes() const {
    std::vector<std::string> text;
    for (const auto& node : graph().nodes) {
      std::string line = node->op_type + "(";
      for (size_t i = 0; i < node->inputs.size(); ++i) line += (i ? "," : "") + node->inputs[i];
      line += ")->";
      for (size_t i = 0; i < node->outputs.size(); ++i) line += (i ? "," : "") + node->outputs[i];
      text.push_back(line);
    }
    return text;
  }
};

Rewritten Rewrite(const PassTestGraph& g) {
  const std::string bytes = g.Serialize();
  Rewritten r;
  r.model = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  InferElementTypes(*r.model->graph);
  r.moved = ComputeHalfRegionsInFloat32(*r.model->graph, StatedKernels);
  return r;
}

TEST(Float32RegionsTest, ARegionReadsAndWritesFloat32BetweenOneCastInAndOneCastOut) {
  PassTestGraph g;
  g.Input("x", {1, 2, 4, 4}, kHalf).Output("y", {}, kHalf);
  g.Halves("w", {2, 2, 1, 1}, {1, 0, 0, 1});
  g.Node("Conv", {"x", "w"}, {"c"});
  g.Node("Relu", {"c"}, {"r"});
  SetInt(g.Node("Concat", {"r", "x"}, {"y"}), "axis", 1);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.moved, 3u);
  EXPECT_EQ(r.Nodes(), (std::vector<std::string>{"Cast(x)->x_f32", "Cast(w)->w_f32", "Conv(x_f32,w_f32)->c_f32",
                                                  "Relu(c_f32)->r_f32", "Concat(r_f32,x_f32)->y_f32",
                                                  "Cast(y_f32)->y"}));
  for (const char* value : {"x_f32", "w_f32", "c_f32", "r_f32", "y_f32"})
    EXPECT_EQ(r.graph().TypeOf(value), DataType::kFloat) << value;
  EXPECT_EQ(r.graph().TypeOf("y"), DataType::kFloat16);  // the graph output keeps its name and type
  EXPECT_EQ(r.graph().nodes.back()->GetInt("to"), static_cast<int64_t>(DataType::kFloat16));
  EXPECT_EQ(r.graph().FindValueInfo("c"), nullptr);  // nothing reads the 16-bit intermediates any more
}

TEST(Float32RegionsTest, RegionsWithoutAWideningKernelStayAsTheyAre) {
  PassTestGraph g;
  g.Input("x", {1, 2, 4, 4}, kHalf).Output("y", {}, kHalf);
  SetInt(g.Node("Concat", {"x", "x"}, {"y"}), "axis", 1);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.moved, 0u);
  EXPECT_EQ(r.Nodes(), std::vector<std::string>{"Concat(x,x)->y"});
}

TEST(Float32RegionsTest, AnotherEpsNodeReadsTheSixteenBitValueThroughACastBack) {
  PassTestGraph g;
  g.Input("x", {1, 2, 4, 4}, kHalf).Output("y", {}, kHalf).Output("z", {}, kHalf);
  g.Node("Relu", {"x"}, {"r"});
  g.Node("Sigmoid", {"r"}, {"s"});  // EP B: its own region, with no widening kernel
  g.Node("Relu", {"s"}, {"y"});
  g.Node("MaxPool", {"r"}, {"z"});
  g.Node("Identity", {"z"}, {"unused"});
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.moved, 3u);  // both Relus and the MaxPool; the Sigmoid stays 16-bit on EP B
  const std::vector<std::string> nodes = r.Nodes();
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Cast(r_f32)->r"), nodes.end());
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Sigmoid(r)->s"), nodes.end());
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Cast(s)->s_f32"), nodes.end());
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Relu(s_f32)->y_f32"), nodes.end());
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "MaxPool(r_f32)->z_f32"), nodes.end());
  // z is a graph output and is read by the Identity (no float32 kernel in the stated set): written back once.
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), "Cast(z_f32)->z"), 1);
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Identity(z)->unused"), nodes.end());
}

TEST(Float32RegionsTest, CastsToSixteenBitsStayAndTheirOutputsEnterTheRegion) {
  PassTestGraph g;
  g.Input("x", {1, 2, 4, 4}).Output("y");
  SetInt(g.Node("Cast", {"x"}, {"h"}), "to", kHalf);       // the model's rounding: kept
  g.Node("Relu", {"h"}, {"r"});
  SetInt(g.Node("Cast", {"r"}, {"y"}), "to", onnx::TensorProto::FLOAT);  // from 16 bits: moves (a no-op then)
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.moved, 2u);
  EXPECT_EQ(r.Nodes(), (std::vector<std::string>{"Cast(x)->h", "Cast(h)->h_f32", "Relu(h_f32)->r_f32",
                                                  "Cast(r_f32)->y"}));
}

TEST(Float32RegionsTest, NodesWithoutAFloat32KernelOrWithMixedSixteenBitTypesStay) {
  PassTestGraph g;
  g.Input("x", {1, 2, 4, 4}, kHalf).Input("b", {1, 2, 4, 4}, onnx::TensorProto::BFLOAT16);
  g.Output("t", {}, kHalf).Output("m", {}, kHalf);
  g.Node("Tanh", {"x"}, {"t"});                 // widens, but the EP has no float32 Tanh
  SetInt(g.Node("Concat", {"x", "b"}, {"m"}), "axis", 1);  // float16 and bfloat16 at once (invalid anyway)
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.moved, 0u);
  EXPECT_EQ(r.Nodes(), (std::vector<std::string>{"Tanh(x)->t", "Concat(x,b)->m"}));
}

// Sessions on the CPU EP: x (float) -> Cast to float16 -> Conv -> Relu -> MaxPool -> Add -> Cast to float -> y, as
// float16 converters write models.
PassTestGraph HalfConvNet() {
  PassTestGraph g;
  g.Input("x", {1, 16, 12, 12}).Output("y");
  SetInt(g.Node("Cast", {"x"}, {"h"}), "to", kHalf);
  g.Halves("w", {16, 16, 3, 3}, PassTestGraph::Random(16 * 16 * 9, -0.2f, 0.2f, 7));
  g.Halves("bias", {16}, PassTestGraph::Random(16, -0.5f, 0.5f, 8));
  SetInts(g.Node("Conv", {"h", "w", "bias"}, {"c"}), "pads", {1, 1, 1, 1});
  g.Node("Relu", {"c"}, {"r"});
  onnx::NodeProto& pool = g.Node("MaxPool", {"r"}, {"p"});
  SetInts(pool, "kernel_shape", {3, 3});
  SetInts(pool, "pads", {1, 1, 1, 1});
  g.Node("Add", {"p", "h"}, {"sum"});
  SetInt(g.Node("Cast", {"sum"}, {"y"}), "to", onnx::TensorProto::FLOAT);
  return g;
}

std::vector<std::string> CpuOps(const PassTestGraph& g, const std::string& setting) {
  Environment env;
  const std::string bytes = g.Serialize();
  SessionOptions options = OptionsAt(OptimizationLevel::kAll);
  if (!setting.empty()) options.config["session.float16_in_float32"] = setting;
  Session session(env, bytes.data(), bytes.size(), options);
  std::vector<std::string> ops;
  for (const PartitionEntry& entry : session.Partition())
    if (!entry.is_copy) ops.push_back(entry.op_type);
  return ops;
}

TEST(Float32RegionsTest, CpuSessionsRunFloat16ConvNetsInFloat32ByDefault) {
  const PassTestGraph g = HalfConvNet();
  const std::vector<std::string> on = CpuOps(g, "");
  // The model's rounding Cast, one Cast into float32; the closing Cast became a no-op and went. The convolution
  // runs in the channel-inner layout, as float32 convolutions do.
  EXPECT_EQ(Count(on, "Cast"), 2u);
  EXPECT_EQ(Count(on, "NchwcConv"), 1u) << ::testing::PrintToString(on);
  const std::vector<std::string> off = CpuOps(g, "0");
  EXPECT_EQ(Count(off, "Cast"), 2u);  // the model's own
  EXPECT_EQ(Count(off, "NchwcConv"), 0u) << ::testing::PrintToString(off);
}

TEST(Float32RegionsTest, Float32RegionsMatchTheFloat16Computation) {
  const PassTestGraph g = HalfConvNet();
  Environment env;
  const std::string bytes = g.Serialize();
  SessionOptions off = OptionsAt(OptimizationLevel::kAll);
  off.config.insert_or_assign("session.float16_in_float32", std::string("0"));  // (operator= trips GCC 12 -Wrestrict)
  Session regions(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kAll));
  Session per_node(env, bytes.data(), bytes.size(), off);
  const Session::NamedValues feeds = g.Feeds();
  const Tensor a = regions.Run(feeds)[0].tensor();
  const Tensor b = per_node.Run(feeds)[0].tensor();
  ASSERT_EQ(a.shape(), b.shape());
  float worst = 0, largest = 0;
  for (int64_t k = 0; k < a.NumElements(); ++k) {
    worst = std::max(worst, std::abs(a.Data<float>()[k] - b.Data<float>()[k]));
    largest = std::max(largest, std::abs(b.Data<float>()[k]));
  }
  EXPECT_GT(largest, 0.5f);
  EXPECT_LE(worst, 4e-3f * largest);  // a few float16 roundings apart: the per-node path rounds every result
  ExpectSameOutputs(g, OptimizationLevel::kAll, 4e-3f * largest);
}

}  // namespace
}  // namespace tessera::test
