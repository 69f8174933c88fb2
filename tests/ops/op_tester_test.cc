// The op-test harness itself: it must build the model it claims to and catch wrong results.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML=1)

#include <cmath>
#include <limits>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

OpTester AddTester(const Tensor& expected) {
  OpTester t("Add", 14);
  t.Input("A", Make<float>({2}, {1, 2})).Input("B", Make<float>({2}, {3, 4})).Output("C", expected);
  return t;
}

TEST(OpTesterTest, PassesOnCorrectValues) { AddTester(Make<float>({2}, {4, 6})).Run(); }

TEST(OpTesterTest, DetectsAWrongExpectedValue) {
  EXPECT_NONFATAL_FAILURE(AddTester(Make<float>({2}, {4, 7})).Run({"cpu"}), "expected 7, got 6");
  EXPECT_NONFATAL_FAILURE(AddTester(Make<float>({2}, {4, 7})).Run({"testing"}), "Add (opset 14) on testing, output 'C'");
}

TEST(OpTesterTest, DetectsAWrongShapeOrType) {
  EXPECT_NONFATAL_FAILURE(AddTester(Make<float>({1, 2}, {4, 6})).Run({"cpu"}), "shape differs");
  // The declared output type disagrees with what Add produces: the session or the comparison objects.
  EXPECT_NONFATAL_FAILURE(AddTester(Make<double>({2}, {4, 6})).Run({"cpu"}), "Add (opset 14) on cpu");
}

TEST(OpTesterTest, ReportsAnExpectedFailureThatDidNotHappen) {
  OpTester t = AddTester(Make<float>({2}, {4, 6}));
  t.ExpectFailure("anything");
  EXPECT_NONFATAL_FAILURE(t.Run({"cpu"}), "succeeded, but a failure containing 'anything' was expected");
}

TEST(OpTesterTest, ReportsAFailureWithTheWrongMessage) {
  OpTester t("Add", 14);
  t.Input("A", Make<float>({2}, {1, 2})).Input("B", Make<float>({3}, {1, 2, 3})).OutputName("C");
  t.ExpectFailure("no such text");
  EXPECT_NONFATAL_FAILURE(t.Run({"cpu"}), "does not contain 'no such text'");
}

TEST(OpTesterTest, ToleranceIsApplied) {
  AddTester(Make<float>({2}, {4.05f, 6})).Tolerance(0.1, 0).Run({"cpu"});
  EXPECT_NONFATAL_FAILURE(AddTester(Make<float>({2}, {4.05f, 6})).Tolerance(0.01, 0).Run({"cpu"}), "1 of 2 elements differ");
}

TEST(OpTesterTest, CompareWithCpuAndRunOn) {
  OpTester t("Mul", 14);
  t.Input("A", RandomTensor(DataType::kFloat, {4, 5}, 1)).Input("B", RandomTensor(DataType::kFloat, {5}, 2)).OutputName("C");
  t.CompareWithCpu({"testing"});
  const std::vector<Tensor> outputs = t.RunOn("cpu");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape(), Shape({4, 5}));
  EXPECT_EQ(outputs[0].type(), DataType::kFloat);
}

TEST(OpTesterTest, SerializedModelIsAOneNodeModel) {
  OpTester t("Clip", 13);
  t.Input("X", Make<float>({2, 3}, {1, 2, 3, 4, 5, 6})).OmittedInput().Input("max", Make<float>({}, {2}), true);
  t.Attr("unused", int64_t{5}).Output("Y", Make<float>({2, 3}, {1, 2, 2, 2, 2, 2}));
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(t.SerializedModel()));
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).domain(), "");
  EXPECT_EQ(model.opset_import(0).version(), 13);
  const onnx::GraphProto& graph = model.graph();
  ASSERT_EQ(graph.node_size(), 1);
  const onnx::NodeProto& node = graph.node(0);
  EXPECT_EQ(node.op_type(), "Clip");
  ASSERT_EQ(node.input_size(), 3);
  EXPECT_EQ(node.input(1), "");
  EXPECT_EQ(node.attribute(0).i(), 5);
  ASSERT_EQ(graph.input_size(), 1);  // the constant is an initializer, not a graph input
  EXPECT_EQ(graph.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(graph.input(0).type().tensor_type().shape().dim(1).dim_value(), 3);
  ASSERT_EQ(graph.initializer_size(), 1);
  EXPECT_EQ(graph.initializer(0).name(), "max");
  EXPECT_EQ(graph.output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_FALSE(graph.output(0).type().tensor_type().has_shape());
}

TEST(CompareTensorsTest, FloatsWithinToleranceAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor expected = Make<float>({4}, {1.0f, nan, inf, 100.0f});
  EXPECT_EQ(CompareTensors(expected, Make<float>({4}, {1.0f, nan, inf, 100.5f}), 0, 0.01), "");
  EXPECT_NE(CompareTensors(expected, Make<float>({4}, {1.0f, 0.0f, inf, 100.0f}), 0, 0.01), "");
  EXPECT_NE(CompareTensors(expected, Make<float>({4}, {1.0f, nan, -inf, 100.0f}), 0, 0.01), "");
  EXPECT_NE(CompareTensors(expected, Make<float>({4}, {1.0f, nan, inf, 102.0f}), 0, 0.01), "");
}

TEST(CompareTensorsTest, ExactTypesAndIndexInMessage) {
  EXPECT_EQ(CompareTensors(Make<int64_t>({2}, {1, 2}), Make<int64_t>({2}, {1, 2}), 1, 1), "");
  const std::string message = CompareTensors(Make<int32_t>({2, 2}, {1, 2, 3, 4}), Make<int32_t>({2, 2}, {1, 2, 3, 5}), 10, 10);
  EXPECT_NE(message.find("at [1,1]: expected 4, got 5"), std::string::npos) << message;
  EXPECT_NE(CompareTensors(Make<std::string>({1}, {"a"}), Make<std::string>({1}, {"b"}), 0, 0), "");
  EXPECT_NE(CompareTensors(Make<bool>({1}, {true}), Make<bool>({1}, {false}), 0, 0), "");
}

TEST(RandomTensorTest, DeterministicAndInRange) {
  const Tensor a = RandomTensor(DataType::kFloat, {1000}, 7, 2.0, 3.0);
  const Tensor b = RandomTensor(DataType::kFloat, {1000}, 7, 2.0, 3.0);
  EXPECT_EQ(CompareTensors(a, b, 0, 0), "");
  EXPECT_NE(CompareTensors(a, RandomTensor(DataType::kFloat, {1000}, 8, 2.0, 3.0), 0, 0), "");
  for (float v : a.Span<float>()) {
    ASSERT_GE(v, 2.0f);
    ASSERT_LE(v, 3.0f);
  }
  const Tensor ints = RandomTensor(DataType::kInt32, {1000}, 3, -5, 5);
  for (int32_t v : ints.Span<int32_t>()) {
    ASSERT_GE(v, -5);
    ASSERT_LE(v, 5);
  }
}

}  // namespace
}  // namespace tessera::test
