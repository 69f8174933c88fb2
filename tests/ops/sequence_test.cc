// Sequence and optional operators: small models that build sequences in the graph (OpTester feeds only
// tensors), with expected values written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/subgraph_model_builder.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

Value F(Shape shape, const Floats& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Value I64(Shape shape, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }

const onnx::TypeProto kFloatSequence = SequenceType(TensorType(kOnnxFloat));

void ExpectFloats(const Tensor& actual, const Shape& shape, const Floats& expected) {
  EXPECT_EQ(actual.shape().ToString(), shape.ToString());
  EXPECT_EQ(actual.ToVector<float>(), expected);
}

void ExpectRunFailure(const onnx::GraphProto& graph, const Session::NamedValues& feeds,
                      const std::string& message_part) {
  try {
    RunModel(graph, 17, feeds);
    ADD_FAILURE() << "expected an error containing '" << message_part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
  }
}

// seq = [a] -> insert b at the back -> insert a at the front: [a, a, b]; then read, erase and count.
TEST(SequenceTest, InsertAtEraseLengthRoundTrip) {
  GraphProtoBuilder main("main");
  main.Input("a", TensorType(kOnnxFloat, Ints{2}))
      .Input("b", TensorType(kOnnxFloat, Ints{3}))
      .Output("last", TensorType(kOnnxFloat))
      .Output("count", TensorType(kOnnxInt64))
      .Output("erased", kFloatSequence)
      .Int64Initializer("front", {}, {0})
      .Int64Initializer("minus_one", {}, {-1});
  main.Node("SequenceConstruct", {"a"}, {"s1"});
  main.Node("SequenceInsert", {"s1", "b"}, {"s2"});
  main.Node("SequenceInsert", {"s2", "a", "front"}, {"s3"});
  main.Node("SequenceAt", {"s3", "minus_one"}, {"last"});
  main.Node("SequenceErase", {"s3", "front"}, {"erased"});
  main.Node("SequenceLength", {"erased"}, {"count"});
  for (const char* ep : {"cpu", "testing"}) {
    SCOPED_TRACE(ep);
    const std::vector<Value> out = RunModel(main.proto(), 17, {{"a", F({2}, {1, 2})}, {"b", F({3}, {3, 4, 5})}}, ep);
    ExpectFloats(out[0].tensor(), {3}, {3, 4, 5});
    EXPECT_EQ(out[1].tensor().ToVector<int64_t>(), Ints{2});
    ASSERT_TRUE(out[2].is_sequence());
    ASSERT_EQ(out[2].sequence().size(), 2u);
    ExpectFloats(out[2].sequence()[0], {2}, {1, 2});
    ExpectFloats(out[2].sequence()[1], {3}, {3, 4, 5});
  }
}

// x [2,5] split into chunks of 2 along axis 1 and concatenated back; split into rows without the
// axis (keepdims=0) and stacked on a new axis 0.
TEST(SequenceTest, SplitToSequenceAndConcatFromSequence) {
  GraphProtoBuilder main("main");
  main.Input("x", TensorType(kOnnxFloat, Ints{2, 5}))
      .Output("chunks", kFloatSequence)
      .Output("joined", TensorType(kOnnxFloat))
      .Output("stacked", TensorType(kOnnxFloat))
      .Int64Initializer("two", {}, {2});
  SetAttr(main.Node("SplitToSequence", {"x", "two"}, {"chunks"}), "axis", int64_t{1});
  SetAttr(main.Node("ConcatFromSequence", {"chunks"}, {"joined"}), "axis", int64_t{-1});
  onnx::NodeProto& rows = main.Node("SplitToSequence", {"x"}, {"rows"});
  SetAttr(rows, "keepdims", int64_t{0});
  onnx::NodeProto& stack = main.Node("ConcatFromSequence", {"rows"}, {"stacked"});
  SetAttr(stack, "axis", int64_t{0});
  SetAttr(stack, "new_axis", int64_t{1});
  const Floats x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<Value> out = RunModel(main.proto(), 17, {{"x", F({2, 5}, x)}});
  const TensorSequence& chunks = out[0].sequence();
  ASSERT_EQ(chunks.size(), 3u);
  ExpectFloats(chunks[0], {2, 2}, {0, 1, 5, 6});
  ExpectFloats(chunks[2], {2, 1}, {4, 9});
  ExpectFloats(out[1].tensor(), {2, 5}, x);
  ExpectFloats(out[2].tensor(), {2, 5}, x);
}

// SequenceMap with a sequence and a tensor input: y_i = s_i + c, and the shape of every s_i.
TEST(SequenceTest, SequenceMapOverSequenceAndTensor) {
  GraphProtoBuilder body("map_body");
  body.Input("e", TensorType(kOnnxFloat))
      .Input("c_in", TensorType(kOnnxFloat, Ints{}))
      .Output("sum", TensorType(kOnnxFloat))
      .Output("shape", TensorType(kOnnxInt64, Ints{1}));
  body.Node("Add", {"e", "c_in"}, {"sum"});
  body.Node("Shape", {"e"}, {"shape"});
  GraphProtoBuilder main("main");
  main.Input("a", TensorType(kOnnxFloat, Ints{2}))
      .Input("b", TensorType(kOnnxFloat, Ints{3}))
      .Input("c", TensorType(kOnnxFloat, Ints{}))
      .Output("sums", kFloatSequence)
      .Output("shapes", SequenceType(TensorType(kOnnxInt64)));
  main.Node("SequenceConstruct", {"a", "b"}, {"s"});
  SetAttr(main.Node("SequenceMap", {"s", "c"}, {"sums", "shapes"}), "body", body.proto());
  for (const char* ep : {"cpu", "testing"}) {
    SCOPED_TRACE(ep);
    const std::vector<Value> out =
        RunModel(main.proto(), 17, {{"a", F({2}, {1, 2})}, {"b", F({3}, {3, 4, 5})}, {"c", F({}, {10})}}, ep);
    ASSERT_EQ(out[0].sequence().size(), 2u);
    ExpectFloats(out[0].sequence()[0], {2}, {11, 12});
    ExpectFloats(out[0].sequence()[1], {3}, {13, 14, 15});
    EXPECT_EQ(out[1].sequence()[1].ToVector<int64_t>(), Ints{3});
  }
}

TEST(SequenceTest, PositionOutOfRangeFails) {
  GraphProtoBuilder main("main");
  main.Input("a", TensorType(kOnnxFloat, Ints{2}))
      .Input("p", TensorType(kOnnxInt64, Ints{}))
      .Output("y", TensorType(kOnnxFloat));
  main.Node("SequenceConstruct", {"a", "a"}, {"s"});
  main.Node("SequenceAt", {"s", "p"}, {"y"});
  ExpectFloats(RunModel(main.proto(), 17, {{"a", F({2}, {1, 2})}, {"p", I64({}, {-2})}})[0].tensor(), {2}, {1, 2});
  ExpectRunFailure(main.proto(), {{"a", F({2}, {1, 2})}, {"p", I64({}, {2})}}, "out of range [-2, 1]");
}

TEST(SequenceTest, InsertOfAnotherElementTypeFails) {
  GraphProtoBuilder main("main");
  main.Input("a", TensorType(kOnnxFloat, Ints{2}))
      .Input("i", TensorType(kOnnxInt64, Ints{1}))
      .Output("s2", kFloatSequence);
  main.Node("SequenceConstruct", {"a"}, {"s"});
  main.Node("SequenceInsert", {"s", "i"}, {"s2"});
  ExpectRunFailure(main.proto(), {{"a", F({2}, {1, 2})}, {"i", I64({1}, {7})}}, "into a sequence of float");
}

TEST(SequenceTest, ConcatOfEmptySequenceFails) {
  GraphProtoBuilder main("main");
  main.Input("x", TensorType(kOnnxFloat, Ints{1})).Output("y", TensorType(kOnnxFloat));
  SetAttr(main.Node("SequenceEmpty", {}, {"s"}), "dtype", int64_t{kOnnxFloat});
  SetAttr(main.Node("ConcatFromSequence", {"s"}, {"joined"}), "axis", int64_t{0});
  main.Node("Add", {"joined", "x"}, {"y"});
  ExpectRunFailure(main.proto(), {{"x", F({1}, {1})}}, "empty");
}

// Optional(x) holds x; Optional() with a type is empty; OptionalGetElement of an empty one fails.
TEST(SequenceTest, OptionalWrapsTestsAndUnwraps) {
  GraphProtoBuilder main("main");
  main.Input("x", TensorType(kOnnxFloat, Ints{2}))
      .Output("has_x", TensorType(kOnnxBool))
      .Output("has_empty", TensorType(kOnnxBool))
      .Output("x_back", TensorType(kOnnxFloat))
      .Output("empty", OptionalType(TensorType(kOnnxFloat)));
  main.Node("Optional", {"x"}, {"opt_x"});
  SetAttr(main.Node("Optional", {}, {"empty"}), "type", TensorType(kOnnxFloat));
  main.Node("OptionalHasElement", {"opt_x"}, {"has_x"});
  main.Node("OptionalHasElement", {"empty"}, {"has_empty"});
  main.Node("OptionalGetElement", {"opt_x"}, {"x_back"});
  const std::vector<Value> out = RunModel(main.proto(), 18, {{"x", F({2}, {1, 2})}});
  EXPECT_EQ(out[0].tensor().ToVector<bool>(), std::vector<bool>{true});
  EXPECT_EQ(out[1].tensor().ToVector<bool>(), std::vector<bool>{false});
  ExpectFloats(out[2].tensor(), {2}, {1, 2});
  EXPECT_TRUE(out[3].is_none());

  GraphProtoBuilder get_empty("get_empty");
  get_empty.Input("x", TensorType(kOnnxFloat, Ints{2})).Output("y", TensorType(kOnnxFloat));
  SetAttr(get_empty.Node("Optional", {}, {"none"}), "type", TensorType(kOnnxFloat));
  get_empty.Node("OptionalGetElement", {"none"}, {"y"});
  ExpectRunFailure(get_empty.proto(), {{"x", F({2}, {1, 2})}}, "is empty");
}

// An empty optional fed as a graph input is accepted and passes through Identity.
TEST(SequenceTest, EmptyOptionalGraphInput) {
  GraphProtoBuilder main("main");
  main.Input("opt", OptionalType(TensorType(kOnnxFloat, Ints{2})))
      .Output("has", TensorType(kOnnxBool))
      .Output("same", OptionalType(TensorType(kOnnxFloat, Ints{2})));
  main.Node("OptionalHasElement", {"opt"}, {"has"});
  main.Node("Identity", {"opt"}, {"same"});
  std::vector<Value> out = RunModel(main.proto(), 18, {{"opt", Value()}});
  EXPECT_EQ(out[0].tensor().ToVector<bool>(), std::vector<bool>{false});
  EXPECT_TRUE(out[1].is_none());
  out = RunModel(main.proto(), 18, {{"opt", F({2}, {3, 4})}});
  EXPECT_EQ(out[0].tensor().ToVector<bool>(), std::vector<bool>{true});
  ExpectFloats(out[1].tensor(), {2}, {3, 4});
}

// A branch reads an empty optional from the enclosing graph.
TEST(SequenceTest, BranchReadsEmptyOptionalFromOuterScope) {
  GraphProtoBuilder branch("branch");
  branch.Output("has", TensorType(kOnnxBool, Ints{}));
  branch.Node("OptionalHasElement", {"opt"}, {"has"});
  GraphProtoBuilder main("main");
  main.Input("cond", TensorType(kOnnxBool, Ints{}))
      .Input("opt", OptionalType(TensorType(kOnnxFloat, Ints{2})))
      .Output("has", TensorType(kOnnxBool));
  onnx::NodeProto& node = main.Node("If", {"cond"}, {"has"});
  SetAttr(node, "then_branch", branch.proto());
  SetAttr(node, "else_branch", branch.proto());
  const Value yes = Tensor::FromVector<bool>(Shape{}, {true});
  EXPECT_EQ(RunModel(main.proto(), 18, {{"cond", yes}, {"opt", Value()}})[0].tensor().ToVector<bool>(),
            std::vector<bool>{false});
  EXPECT_EQ(RunModel(main.proto(), 18, {{"cond", yes}, {"opt", F({2}, {1, 2})}})[0].tensor().ToVector<bool>(),
            std::vector<bool>{true});
}

}  // namespace
}  // namespace tessera::test
