// ShapeComputations (the nodes a device EP leaves to the CPU): integer arithmetic on Shape's output is one.
// ConstantOfShape and Range are while their values only feed shape computations and shape inputs (torch's `expand`
// computes its shape through ConstantOfShape -> Mul -> Equal -> Where); once a node outside reads them as data
// (position ids added to a device tensor, a fill that is an output) they make data, with what derives only from them.
#include "tessera/ep/shape_computations.h"

#include <gtest/gtest.h>

#include "graph/model_loader.h"
#include "graph/type_inference.h"
#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {
namespace {

constexpr int kInt64 = onnx::TensorProto::INT64;

std::set<size_t> Computations(const PassTestGraph& g) {
  const std::string bytes = g.Serialize();
  std::unique_ptr<Model> model = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  InferElementTypes(*model->graph);
  return ShapeComputations(*model->graph);
}

// ConstantOfShape filling int64 ones (torch's export of `expand`).
onnx::NodeProto& OnesOfShape(PassTestGraph& g, const std::string& shape, const std::string& out) {
  onnx::NodeProto& node = g.Node("ConstantOfShape", {shape}, {out});
  onnx::AttributeProto* value = node.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(kInt64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(1);
  return node;
}

TEST(ShapeComputationsTest, ShapeArithmeticStaysOnTheHost) {
  PassTestGraph g;
  g.Input("x", {2, 5, 4}).Output("reshaped");
  g.Int64s("one", {1}, {1});
  g.Int64s("minus_one", {1}, {-1});
  g.Node("Shape", {"x"}, {"shape"});                                         // 0: runs from the shape alone
  g.Node("Gather", {"shape", "one"}, {"length"});                            // 1
  SetInt(g.Node("Concat", {"minus_one", "length"}, {"target"}), "axis", 0);  // 2
  g.Node("Reshape", {"x", "target"}, {"reshaped"});                          // 3: data
  EXPECT_EQ(Computations(g), (std::set<size_t>{1, 2}));
}

TEST(ShapeComputationsTest, RangeReadAsDataMakesDataWithWhatDerivesFromIt) {
  PassTestGraph g;
  g.Input("x", {2, 5, 4}).Input("position", {1}, kInt64).Output("positions", {}, kInt64);
  g.Int64s("one", {1}, {1});
  g.Int64s("zero", {}, {0});
  g.Node("Shape", {"x"}, {"shape"});                               // 0
  g.Node("Gather", {"shape", "one"}, {"length"});                  // 1: shape computation
  g.Node("Squeeze", {"length"}, {"length_scalar"});                // 2: shape computation
  g.Node("Range", {"zero", "length_scalar", "one_scalar"}, {"ids"});  // 3: position ids: data
  g.Int64s("one_scalar", {}, {1});
  SetInt(g.Node("Cast", {"ids"}, {"ids_again"}), "to", kInt64);    // 4: derives only from data
  g.Node("Add", {"ids_again", "position"}, {"positions"});         // 5: reads them as data
  EXPECT_EQ(Computations(g), (std::set<size_t>{1, 2}));
}

TEST(ShapeComputationsTest, ConstantOfShapeResolvingAnExpandShapeStaysOnTheHost) {
  PassTestGraph g;
  g.Input("x", {2, 5, 4}).Input("row", {1, 1}).Output("expanded").Output("filled", {}, kInt64);
  g.Int64s("one", {1}, {1});
  g.Int64s("two", {1}, {2});
  g.Int64s("minus_one", {1}, {-1});
  g.Node("Shape", {"x"}, {"shape"});                                            // 0
  g.Node("Gather", {"shape", "one"}, {"length"});                               // 1
  SetInt(g.Node("Concat", {"two", "length"}, {"wanted"}), "axis", 0);           // 2: [2, 5]
  g.Node("Shape", {"wanted"}, {"rank"});                                        // 3
  OnesOfShape(g, "rank", "ones");                                               // 4: shape computation
  g.Node("Mul", {"ones", "minus_one"}, {"minus_ones"});                         // 5
  g.Node("Equal", {"wanted", "minus_ones"}, {"unknown"});                       // 6
  g.Node("Where", {"unknown", "ones", "wanted"}, {"target"});                   // 7
  g.Node("Expand", {"row", "target"}, {"expanded"});                            // 8: data
  OnesOfShape(g, "target", "filled");                                           // 9: an output: data
  EXPECT_EQ(Computations(g), (std::set<size_t>{1, 2, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace tessera::test
