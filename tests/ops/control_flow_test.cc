// If, Loop and Scan: small models with subgraphs (built with the ONNX protobuf API), run on the CPU EP
// and on the simulated device EP (whose kernels run the bodies' arithmetic in device memory).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/subgraph_model_builder.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

const std::vector<std::string> kEps = {"cpu", "testing"};

Value F(Shape shape, const Floats& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Value I64(Shape shape, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }
Value Bool(Shape shape, const std::vector<bool>& v) { return Tensor::FromVector<bool>(std::move(shape), v); }

void ExpectFloats(const Value& actual, const Shape& shape, const Floats& expected) {
  ASSERT_TRUE(actual.is_tensor());
  EXPECT_EQ(actual.tensor().shape().ToString(), shape.ToString());
  EXPECT_EQ(actual.tensor().ToVector<float>(), expected);
}

void ExpectInts(const Value& actual, const Shape& shape, const Ints& expected) {
  ASSERT_TRUE(actual.is_tensor());
  EXPECT_EQ(actual.tensor().shape().ToString(), shape.ToString());
  EXPECT_EQ(actual.tensor().ToVector<int64_t>(), expected);
}

void ExpectRunFailure(const onnx::GraphProto& graph, int opset, const Session::NamedValues& feeds,
                      const std::string& message_part) {
  try {
    RunModel(graph, opset, feeds);
    ADD_FAILURE() << "expected an error containing '" << message_part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
  }
}

// acc_{i+1} = acc_i + xs * i for M iterations, with the running sums as a scan output. `xs` is computed
// in the main graph and read only by the body (it must stay alive until the Loop runs).
onnx::GraphProto RunningSumLoop() {
  GraphProtoBuilder body("sum_body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("c", TensorType(kOnnxBool, Ints{}))
      .Input("acc", TensorType(kOnnxFloat, Ints{3}))
      .Output("c_out", TensorType(kOnnxBool, Ints{}))
      .Output("acc_out", TensorType(kOnnxFloat, Ints{3}))
      .Output("scan_out", TensorType(kOnnxFloat, Ints{3}));
  body.Node("Identity", {"c"}, {"c_out"});
  SetAttr(body.Node("Cast", {"i"}, {"i_f"}), "to", int64_t{kOnnxFloat});
  body.Node("Mul", {"xs", "i_f"}, {"step"});
  body.Node("Add", {"acc", "step"}, {"acc_out"});
  body.Node("Identity", {"acc_out"}, {"scan_out"});
  GraphProtoBuilder main("main");
  main.Input("M", TensorType(kOnnxInt64, Ints{}))
      .Input("a0", TensorType(kOnnxFloat, Ints{3}))
      .Input("x", TensorType(kOnnxFloat, Ints{3}))
      .Output("a", TensorType(kOnnxFloat))
      .Output("sums", TensorType(kOnnxFloat));
  main.Node("Identity", {"x"}, {"xs"});
  SetAttr(main.Node("Loop", {"M", "", "a0"}, {"a", "sums"}), "body", body.proto());
  return main.proto();
}

TEST(ControlFlowTest, LoopRunningSumWithScanOutput) {
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    const std::vector<Value> out = RunModel(
        RunningSumLoop(), 17, {{"M", I64({}, {4})}, {"a0", F({3}, {0, 0, 0})}, {"x", F({3}, {1, 2, 3})}}, ep);
    ExpectFloats(out[0], {3}, {6, 12, 18});
    ExpectFloats(out[1], {4, 3}, {0, 0, 0, 1, 2, 3, 3, 6, 9, 6, 12, 18});
  }
}

TEST(ControlFlowTest, LoopZeroIterationsKeepsInitialValues) {
  const std::vector<Value> out = RunModel(
      RunningSumLoop(), 17, {{"M", I64({}, {0})}, {"a0", F({3}, {7, 8, 9})}, {"x", F({3}, {1, 2, 3})}});
  ExpectFloats(out[0], {3}, {7, 8, 9});
  ExpectFloats(out[1], {0, 3}, {});  // the body's declared scan element shape [3]
}

TEST(ControlFlowTest, LoopNegativeTripCountFails) {
  ExpectRunFailure(RunningSumLoop(), 17, {{"M", I64({}, {-1})}, {"a0", F({3}, {0, 0, 0})}, {"x", F({3}, {1, 2, 3})}},
                   "negative");
}

// A while loop: no trip count; c counts up until it reaches the outer `limit`.
onnx::GraphProto CountingWhileLoop() {
  GraphProtoBuilder body("count_body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("cond_in", TensorType(kOnnxBool, Ints{}))
      .Input("c_in", TensorType(kOnnxInt64, Ints{}))
      .Output("cond_out", TensorType(kOnnxBool, Ints{}))
      .Output("c_out", TensorType(kOnnxInt64, Ints{}))
      .Output("trace", TensorType(kOnnxInt64, Ints{}))
      .Int64Initializer("one", {}, {1});
  body.Node("Add", {"c_in", "one"}, {"c_out"});
  body.Node("Less", {"c_out", "limit"}, {"cond_out"});
  body.Node("Identity", {"c_out"}, {"trace"});
  GraphProtoBuilder main("main");
  main.Input("cond", TensorType(kOnnxBool, Ints{}))
      .Input("limit", TensorType(kOnnxInt64, Ints{}))
      .Output("c", TensorType(kOnnxInt64))
      .Output("traces", TensorType(kOnnxInt64))
      .Int64Initializer("c0", {}, {0});
  SetAttr(main.Node("Loop", {"", "cond", "c0"}, {"c", "traces"}), "body", body.proto());
  return main.proto();
}

TEST(ControlFlowTest, LoopWhileConditionHolds) {
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    const std::vector<Value> out =
        RunModel(CountingWhileLoop(), 17, {{"cond", Bool({}, {true})}, {"limit", I64({}, {5})}}, ep);
    ExpectInts(out[0], {}, {5});
    ExpectInts(out[1], {5}, {1, 2, 3, 4, 5});
  }
  const std::vector<Value> none =
      RunModel(CountingWhileLoop(), 17, {{"cond", Bool({}, {false})}, {"limit", I64({}, {5})}});
  ExpectInts(none[0], {}, {0});
  ExpectInts(none[1], {0}, {});
}

TEST(ControlFlowTest, LoopRaggedScanOutputFails) {
  GraphProtoBuilder body("ragged_body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("c", TensorType(kOnnxBool, Ints{}))
      .Output("c_out", TensorType(kOnnxBool, Ints{}))
      .Output("range", TensorType(kOnnxInt64, Ints{-1}))
      .Int64Initializer("zero", {}, {0})
      .Int64Initializer("one", {}, {1});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Node("Range", {"zero", "i", "one"}, {"range"});
  GraphProtoBuilder main("main");
  main.Input("M", TensorType(kOnnxInt64, Ints{})).Output("ranges", TensorType(kOnnxInt64));
  SetAttr(main.Node("Loop", {"M", ""}, {"ranges"}), "body", body.proto());
  ExpectRunFailure(main.proto(), 17, {{"M", I64({}, {3})}}, "ragged");
}

// Sequences as loop-carried values: insert i (as float) each iteration, then stack the sequence.
TEST(ControlFlowTest, LoopCarriesSequence) {
  GraphProtoBuilder body("seq_body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("c", TensorType(kOnnxBool, Ints{}))
      .Input("s_in", SequenceType(TensorType(kOnnxFloat)))
      .Output("c_out", TensorType(kOnnxBool, Ints{}))
      .Output("s_out", SequenceType(TensorType(kOnnxFloat)));
  body.Node("Identity", {"c"}, {"c_out"});
  SetAttr(body.Node("Cast", {"i"}, {"v"}), "to", int64_t{kOnnxFloat});
  body.Node("SequenceInsert", {"s_in", "v"}, {"s_out"});
  GraphProtoBuilder main("main");
  main.Input("M", TensorType(kOnnxInt64, Ints{}))
      .Output("stacked", TensorType(kOnnxFloat))
      .Output("seq", SequenceType(TensorType(kOnnxFloat)));
  SetAttr(main.Node("SequenceEmpty", {}, {"seq0"}), "dtype", int64_t{kOnnxFloat});
  SetAttr(main.Node("Loop", {"M", "", "seq0"}, {"seq"}), "body", body.proto());
  onnx::NodeProto& concat = main.Node("ConcatFromSequence", {"seq"}, {"stacked"});
  SetAttr(concat, "axis", int64_t{0});
  SetAttr(concat, "new_axis", int64_t{1});
  const std::vector<Value> out = RunModel(main.proto(), 17, {{"M", I64({}, {3})}});
  ExpectFloats(out[0], {3}, {0, 1, 2});
  ASSERT_TRUE(out[1].is_sequence());
  EXPECT_EQ(out[1].sequence().size(), 3u);
}

// A Loop whose body holds an If: the branches read a body value (t) and a main-graph value (x).
TEST(ControlFlowTest, IfInsideLoopReadsNestedOuterScopes) {
  GraphProtoBuilder then_branch("then");
  then_branch.Output("then_out", TensorType(kOnnxFloat, Ints{1}));
  then_branch.Node("Identity", {"t"}, {"then_out"});
  GraphProtoBuilder else_branch("else");
  else_branch.Output("else_out", TensorType(kOnnxFloat, Ints{1}));
  else_branch.Node("Add", {"t", "x"}, {"else_out"});
  GraphProtoBuilder body("body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("c", TensorType(kOnnxBool, Ints{}))
      .Input("acc", TensorType(kOnnxFloat, Ints{1}))
      .Output("c_out", TensorType(kOnnxBool, Ints{}))
      .Output("acc_out", TensorType(kOnnxFloat, Ints{1}))
      .Int64Initializer("one", {}, {1});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Node("Add", {"acc", "x"}, {"t"});
  body.Node("Less", {"i", "one"}, {"first"});
  onnx::NodeProto& if_node = body.Node("If", {"first"}, {"acc_out"});
  SetAttr(if_node, "then_branch", then_branch.proto());
  SetAttr(if_node, "else_branch", else_branch.proto());
  GraphProtoBuilder main("main");
  main.Input("M", TensorType(kOnnxInt64, Ints{}))
      .Input("a0", TensorType(kOnnxFloat, Ints{1}))
      .Input("x", TensorType(kOnnxFloat, Ints{1}))
      .Output("a", TensorType(kOnnxFloat));
  SetAttr(main.Node("Loop", {"M", "", "a0"}, {"a"}), "body", body.proto());
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    // i=0: t=1, then -> 1; i=1: t=2, else -> 3; i=2: t=4, else -> 5.
    const std::vector<Value> out =
        RunModel(main.proto(), 17, {{"M", I64({}, {3})}, {"a0", F({1}, {0})}, {"x", F({1}, {1})}}, ep);
    ExpectFloats(out[0], {1}, {5});
  }
}

// Outer-scope values as exporters write them: the branches read an initializer of the main graph that no
// main-graph node reads (the Loop body's If reads it two scopes up), and a value whose producer comes after
// the If in file order.
TEST(ControlFlowTest, SubgraphsReadOuterInitializersAndLaterProducedValues) {
  GraphProtoBuilder then_branch("then");
  then_branch.Output("then_out", TensorType(kOnnxFloat, Ints{2}));
  then_branch.Node("Add", {"x", "w"}, {"then_out"});
  GraphProtoBuilder else_branch("else");
  else_branch.Output("else_out", TensorType(kOnnxFloat, Ints{2}));
  else_branch.Node("Mul", {"x_later", "w"}, {"else_out"});
  GraphProtoBuilder main("main");
  main.Input("cond", TensorType(kOnnxBool, Ints{}))
      .Input("x", TensorType(kOnnxFloat, Ints{2}))
      .Output("y", TensorType(kOnnxFloat))
      .FloatInitializer("w", {2}, {10, 20})
      .FloatInitializer("unused", {1}, {7});
  onnx::NodeProto& if_node = main.Node("If", {"cond"}, {"y"});  // before the node producing x_later
  SetAttr(if_node, "then_branch", then_branch.proto());
  SetAttr(if_node, "else_branch", else_branch.proto());
  main.Node("Neg", {"x"}, {"x_later"});
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    ExpectFloats(RunModel(main.proto(), 16, {{"cond", Bool({}, {true})}, {"x", F({2}, {1, 2})}}, ep)[0], {2},
                 {11, 22});
    ExpectFloats(RunModel(main.proto(), 16, {{"cond", Bool({}, {false})}, {"x", F({2}, {1, 2})}}, ep)[0], {2},
                 {-10, -40});
  }

  // Two levels down: Loop body -> If -> reads the main graph's initializer `scale`.
  GraphProtoBuilder inner_then("inner_then");
  inner_then.Output("inner_then_out", TensorType(kOnnxFloat, Ints{1}));
  inner_then.Node("Mul", {"acc", "scale"}, {"inner_then_out"});
  GraphProtoBuilder inner_else("inner_else");
  inner_else.Output("inner_else_out", TensorType(kOnnxFloat, Ints{1}));
  inner_else.Node("Add", {"acc", "scale"}, {"inner_else_out"});
  GraphProtoBuilder body("body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("c", TensorType(kOnnxBool, Ints{}))
      .Input("acc", TensorType(kOnnxFloat, Ints{1}))
      .Output("c_out", TensorType(kOnnxBool, Ints{}))
      .Output("acc_out", TensorType(kOnnxFloat, Ints{1}))
      .Int64Initializer("one", {}, {1});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Node("Less", {"i", "one"}, {"first"});
  onnx::NodeProto& inner_if = body.Node("If", {"first"}, {"acc_out"});
  SetAttr(inner_if, "then_branch", inner_then.proto());
  SetAttr(inner_if, "else_branch", inner_else.proto());
  GraphProtoBuilder loop_main("loop_main");
  loop_main.Input("M", TensorType(kOnnxInt64, Ints{}))
      .Input("a0", TensorType(kOnnxFloat, Ints{1}))
      .Output("a", TensorType(kOnnxFloat))
      .FloatInitializer("scale", {1}, {3});
  SetAttr(loop_main.Node("Loop", {"M", "", "a0"}, {"a"}), "body", body.proto());
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    // i=0: 2*3 = 6; i=1: 6+3 = 9; i=2: 9+3 = 12.
    ExpectFloats(RunModel(loop_main.proto(), 16, {{"M", I64({}, {3})}, {"a0", F({1}, {2})}}, ep)[0], {1}, {12});
  }
}

// then: x + x (shape [3]); else: the sum of x (a scalar). Branch outputs may differ in shape.
onnx::GraphProto IfWithDifferentShapes(const onnx::TypeProto& cond_type) {
  GraphProtoBuilder then_branch("then");
  then_branch.Output("doubled", TensorType(kOnnxFloat, Ints{3}));
  then_branch.Node("Add", {"x", "x"}, {"doubled"});
  GraphProtoBuilder else_branch("else");
  else_branch.Output("sum", TensorType(kOnnxFloat, Ints{}));
  SetAttr(else_branch.Node("ReduceSum", {"x"}, {"sum"}), "keepdims", int64_t{0});
  GraphProtoBuilder main("main");
  main.Input("cond", cond_type).Input("x", TensorType(kOnnxFloat, Ints{3})).Output("y", TensorType(kOnnxFloat));
  onnx::NodeProto& node = main.Node("If", {"cond"}, {"y"});
  SetAttr(node, "then_branch", then_branch.proto());
  SetAttr(node, "else_branch", else_branch.proto());
  return main.proto();
}

TEST(ControlFlowTest, IfChoosesBranchReadingOuterValue) {
  const onnx::GraphProto model = IfWithDifferentShapes(TensorType(kOnnxBool, Ints{}));
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    ExpectFloats(RunModel(model, 17, {{"cond", Bool({}, {true})}, {"x", F({3}, {1, 2, 3})}}, ep)[0], {3}, {2, 4, 6});
    ExpectFloats(RunModel(model, 17, {{"cond", Bool({}, {false})}, {"x", F({3}, {1, 2, 3})}}, ep)[0], {}, {6});
  }
}

TEST(ControlFlowTest, IfConditionMustBeOneBool) {
  const onnx::GraphProto model = IfWithDifferentShapes(TensorType(kOnnxBool, Ints{2}));
  ExpectRunFailure(model, 17, {{"cond", Bool({2}, {true, false})}, {"x", F({3}, {1, 2, 3})}}, "one element");
}

// Scan-9 body: s_out = s_in + x_t, y = s_out.
onnx::GraphProto SumScanBody(const Ints& element_dims) {
  GraphProtoBuilder body("scan_body");
  body.Input("s_in", TensorType(kOnnxFloat, element_dims))
      .Input("x_t", TensorType(kOnnxFloat, element_dims))
      .Output("s_out", TensorType(kOnnxFloat, element_dims))
      .Output("y", TensorType(kOnnxFloat, element_dims));
  body.Node("Add", {"s_in", "x_t"}, {"s_out"});
  body.Node("Identity", {"s_out"}, {"y"});
  return body.proto();
}

std::vector<Value> RunScan9(const Ints& input_dims, const std::vector<std::pair<std::string, Ints>>& attributes,
                            const Value& x, const std::string& ep) {
  GraphProtoBuilder main("main");
  main.Input("s0", TensorType(kOnnxFloat, Ints{2}))
      .Input("X", TensorType(kOnnxFloat, input_dims))
      .Output("s", TensorType(kOnnxFloat))
      .Output("ys", TensorType(kOnnxFloat));
  onnx::NodeProto& scan = main.Node("Scan", {"s0", "X"}, {"s", "ys"});
  SetAttr(scan, "body", SumScanBody(Ints{2}));
  SetAttr(scan, "num_scan_inputs", int64_t{1});
  for (const auto& [name, values] : attributes) SetAttr(scan, name, values);
  return RunModel(main.proto(), 17, {{"s0", F({2}, {0, 0})}, {"X", x}}, ep);
}

TEST(ControlFlowTest, Scan9AxesAndDirections) {
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    // Scan X [2,3] along axis 1; stack the running sums along axis 1, last iteration first.
    std::vector<Value> out = RunScan9({2, 3}, {{"scan_input_axes", {1}}, {"scan_output_axes", {1}},
                                               {"scan_output_directions", {1}}},
                                      F({2, 3}, {1, 2, 3, 4, 5, 6}), ep);
    ExpectFloats(out[0], {2}, {6, 15});
    ExpectFloats(out[1], {2, 3}, {6, 3, 1, 15, 9, 4});
    // Scan X [3,2] along axis 0 from the back.
    out = RunScan9({3, 2}, {{"scan_input_directions", {1}}}, F({3, 2}, {1, 4, 2, 5, 3, 6}), ep);
    ExpectFloats(out[0], {2}, {6, 15});
    ExpectFloats(out[1], {3, 2}, {3, 6, 5, 11, 6, 15});
  }
}

TEST(ControlFlowTest, Scan8BatchWithSequenceLengths) {
  GraphProtoBuilder main("main");
  main.Input("lens", TensorType(kOnnxInt64, Ints{2}))
      .Input("s0", TensorType(kOnnxFloat, Ints{2, 1}))
      .Input("X", TensorType(kOnnxFloat, Ints{2, 3, 1}))
      .Output("s", TensorType(kOnnxFloat))
      .Output("ys", TensorType(kOnnxFloat));
  onnx::NodeProto& scan = main.Node("Scan", {"lens", "s0", "X"}, {"s", "ys"});
  SetAttr(scan, "body", SumScanBody(Ints{1}));
  SetAttr(scan, "num_scan_inputs", int64_t{1});
  for (const std::string& ep : kEps) {
    SCOPED_TRACE(ep);
    // Batch item 1 stops after 2 steps; its third scan output stays zero.
    const std::vector<Value> out = RunModel(
        main.proto(), 8,
        {{"lens", I64({2}, {3, 2})}, {"s0", F({2, 1}, {0, 0})}, {"X", F({2, 3, 1}, {1, 2, 3, 4, 5, 6})}}, ep);
    ExpectFloats(out[0], {2, 1}, {6, 9});
    ExpectFloats(out[1], {2, 3, 1}, {1, 3, 6, 4, 9, 0});
  }
}

}  // namespace
}  // namespace tessera::test
