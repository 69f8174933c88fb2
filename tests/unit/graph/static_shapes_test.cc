// PropagateStaticShapes: the shapes of intermediate values of convolutional models from the inputs' and
// initializers' shapes; stated shapes kept; malformed nodes, symbolic dims and unknown ops left without one.
#include "graph/static_shapes.h"

#include <gtest/gtest.h>

#include "graph/model_loader.h"
#include "graph/type_inference.h"
#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {
namespace {

std::unique_ptr<Model> LoadAndPropagate(const PassTestGraph& g, size_t* filled = nullptr) {
  const std::string bytes = g.Serialize();
  std::unique_ptr<Model> model = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  InferElementTypes(*model->graph);
  const size_t count = PropagateStaticShapes(*model->graph);
  if (filled != nullptr) *filled = count;
  return model;
}

// The value's dims; {-2} when it has no shape, -1 for a symbolic dim.
std::vector<int64_t> DimsOf(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape) return {-2};
  std::vector<int64_t> dims;
  for (const Dim& d : *info->shape) dims.push_back(d.is_concrete() ? d.value : -1);
  return dims;
}

TEST(StaticShapesTest, ConvolutionalBlocksGetTheirShapes) {
  PassTestGraph g;
  g.Input("x", {2, 3, 17, 17}).Output("flat");
  g.Floats("w1", {8, 3, 3, 3}, std::vector<float>(8 * 3 * 9, 0.1f));
  SetInts(g.Node("Conv", {"x", "w1"}, {"c1"}), "strides", {2, 2});  // no padding: (17 - 3) / 2 + 1 = 8
  g.Node("Relu", {"c1"}, {"r1"});
  g.Floats("w2", {8, 1, 3, 3}, std::vector<float>(8 * 9, 0.1f));
  onnx::NodeProto& depthwise = g.Node("Conv", {"r1", "w2"}, {"c2"});
  SetInt(depthwise, "group", 8);
  SetInts(depthwise, "pads", {1, 1, 1, 1});
  g.Node("Add", {"c2", "r1"}, {"sum"});
  g.Floats("scale", {8, 1, 1}, std::vector<float>(8, 2.0f));
  g.Node("Mul", {"sum", "scale"}, {"scaled"});  // broadcasts [8,1,1] over [2,8,8,8]
  onnx::NodeProto& pool = g.Node("MaxPool", {"scaled"}, {"pooled"});
  SetInts(pool, "kernel_shape", {3, 3});
  SetInts(pool, "strides", {2, 2});
  SetInt(pool, "ceil_mode", 1);  // ceil((8 - 3) / 2) + 1 = 4
  SetInt(g.Node("Concat", {"pooled", "pooled"}, {"joined"}), "axis", 1);
  g.Node("GlobalAveragePool", {"joined"}, {"gap"});
  g.Node("Flatten", {"gap"}, {"flat"});
  size_t filled = 0;
  std::unique_ptr<Model> model = LoadAndPropagate(g, &filled);
  const Graph& graph = *model->graph;
  EXPECT_EQ(DimsOf(graph, "c1"), (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(DimsOf(graph, "r1"), (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(DimsOf(graph, "c2"), (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(DimsOf(graph, "scaled"), (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(DimsOf(graph, "pooled"), (std::vector<int64_t>{2, 8, 4, 4}));
  EXPECT_EQ(DimsOf(graph, "joined"), (std::vector<int64_t>{2, 16, 4, 4}));
  EXPECT_EQ(DimsOf(graph, "gap"), (std::vector<int64_t>{2, 16, 1, 1}));
  EXPECT_EQ(DimsOf(graph, "flat"), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(filled, 9u);
}

TEST(StaticShapesTest, StatedShapesStayAndSymbolicOrUnknownInputsGiveNone) {
  PassTestGraph g;
  g.Input("x", {-1, 4}).Input("y", {3, 4}).Output("a").Output("b", {5, 5}).Output("c");
  g.Node("Relu", {"x"}, {"a"});            // symbolic batch: no shape
  g.Node("Neg", {"y"}, {"b"});             // the model states [5, 5] (wrongly): kept
  g.Node("Unique", {"y"}, {"c"});          // data-dependent: no shape
  std::unique_ptr<Model> model = LoadAndPropagate(g);
  const Graph& graph = *model->graph;
  EXPECT_EQ(DimsOf(graph, "a"), (std::vector<int64_t>{-2}));
  EXPECT_EQ(DimsOf(graph, "b"), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(DimsOf(graph, "c"), (std::vector<int64_t>{-2}));
}

// Malformed nodes get no shape and no error here: their kernels report them when they run.
TEST(StaticShapesTest, MalformedNodesGetNoShape) {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Input("z", {1, 5}).Output("bad_rank").Output("bad_channels").Output("bad_pool")
      .Output("bad_add").Output("bad_concat");
  g.Floats("w_rank", {4, 3, 3}, std::vector<float>(36, 0.1f));
  g.Node("Conv", {"x", "w_rank"}, {"bad_rank"});
  g.Floats("w_channels", {4, 2, 3, 3}, std::vector<float>(72, 0.1f));
  g.Node("Conv", {"x", "w_channels"}, {"bad_channels"});
  SetInts(g.Node("MaxPool", {"x"}, {"bad_pool"}), "kernel_shape", {9, 9});  // larger than the input
  g.Node("Add", {"x", "z"}, {"bad_add"});
  SetInt(g.Node("Concat", {"x", "z"}, {"bad_concat"}), "axis", 1);
  // Dims whose product no int64 holds.
  g.Input("huge", {int64_t{1} << 40, int64_t{1} << 40}).Output("bad_flatten");
  SetInt(g.Node("Flatten", {"huge"}, {"bad_flatten"}), "axis", 2);
  std::unique_ptr<Model> model;
  ASSERT_NO_THROW(model = LoadAndPropagate(g));
  for (const char* value : {"bad_rank", "bad_channels", "bad_pool", "bad_add", "bad_concat", "bad_flatten"})
    EXPECT_EQ(DimsOf(*model->graph, value), (std::vector<int64_t>{-2})) << value;
}

}  // namespace
}  // namespace tessera::test
