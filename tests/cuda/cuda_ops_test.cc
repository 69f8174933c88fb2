// The CUDA kernels added for BERT-base and dynamo-exported ResNet-50 against the CPU EP: unary math and
// Gelu, Pow, LayerNormalization, reductions, comparisons and logic, Where, Cast, Gather, Slice, Expand,
// Shape, ConstantOfShape, and MatMul with batch broadcasting. Each case also checks that the node really
// runs on the CUDA EP (a missing kernel would otherwise pass by falling back to the CPU).
#include <cmath>
#include <limits>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaOpsTest = CudaTest;


TEST_F(CudaOpsTest, UnaryMath) {
  struct Case {
    const char* op;
    double lo, hi;
  };
  for (const Case& c : std::vector<Case>{{"Erf", -3, 3},
                                         {"Sqrt", 0.1, 4},
                                         {"Neg", -3, 3},
                                         {"Exp", -3, 3},
                                         {"Log", 0.1, 4},
                                         {"Abs", -3, 3},
                                         {"Reciprocal", 0.5, 2},
                                         {"Floor", -3, 3},
                                         {"Ceil", -3, 3}}) {
    OpTester t(c.op, 13);
    t.Input("X", RandomTensor(kF32, {3, 7, 11}, 1, c.lo, c.hi)).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        c.op, 13, {RandomTensor(kF16, {3, 7, 11}, 2, c.lo, c.hi)},
        [](OpTester& o, const std::vector<Tensor>& in) { o.Input("X", in[0]); }, 4e-3, 4e-3);
  }
}

TEST_F(CudaOpsTest, GeluExactAndTanh) {
  for (const char* approximate : {"none", "tanh"}) {
    OpTester t("Gelu", 20);
    t.Attr("approximate", std::string(approximate));
    t.Input("X", RandomTensor(kF32, {4, 96}, 3, -4, 4)).OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "Gelu", 20, {RandomTensor(kF16, {4, 96}, 4, -4, 4)},
        [&](OpTester& o, const std::vector<Tensor>& in) {
          o.Attr("approximate", std::string(approximate)).Input("X", in[0]);
        },
        4e-3, 4e-3);
  }
}

TEST_F(CudaOpsTest, PowWithScalarExponent) {
  for (float exponent : {2.0f, 0.5f, 3.0f, 1.0f}) {
    OpTester t("Pow", 15);
    t.Input("X", RandomTensor(kF32, {5, 9}, 5, 0.1, 2.0))
        .Input("Y", Tensor::FromVector<float>({}, {exponent}), true)
        .OutputName("Z")
        .Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
  }
}

TEST_F(CudaOpsTest, LayerNormalization) {
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (const Case& c : std::vector<Case>{{{2, 5, 768}, -1}, {{3, 4, 5}, 1}, {{2, 3000}, -1}, {{7, 33}, -1}}) {
    const Shape params(std::vector<int64_t>(c.x.dims().begin() + (c.axis < 0 ? c.x.rank() + c.axis : c.axis),
                                            c.x.dims().end()));
    OpTester t("LayerNormalization", 17);
    t.Attr("axis", c.axis).Attr("epsilon", 1e-12f);
    t.Input("X", RandomTensor(kF32, c.x, 6, -2, 3))
        .Input("Scale", RandomTensor(kF32, params, 7, 0.5, 1.5), true)
        .Input("B", RandomTensor(kF32, params, 8), true)
        .OutputName("Y")
        .Tolerance(1e-4, 1e-4);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "LayerNormalization", 17,
        {RandomTensor(kF16, c.x, 9, -2, 3), RandomTensor(kF16, params, 10, 0.5, 1.5), RandomTensor(kF16, params, 11)},
        [&](OpTester& o, const std::vector<Tensor>& in) {
          o.Attr("axis", c.axis).Input("X", in[0]).Input("Scale", in[1], true).Input("B", in[2], true);
        },
        2e-2, 1e-2);
  }
}

TEST_F(CudaOpsTest, ReductionsOverRowsMiddleAxesAndGeneralAxes) {
  struct Case {
    Shape x;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  const std::vector<Case> cases = {
      {{2, 64, 7, 7}, {2, 3}, 1},  // ResNet's average pool: rows of 49
      {{4, 8, 16}, {1}, 1},        // middle axis
      {{4, 8, 16}, {0, 2}, 0},     // general
      {{3, 5, 6}, {-1}, 0},        // last axis
      {{2, 5000}, {1}, 1},         // long rows: one block per row
      {{3, 4}, {}, 1},             // every axis
  };
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    const int opset = std::string(op) == "ReduceSum" ? 13 : 18;
    for (const Case& c : cases) {
      OpTester t(op, opset);
      t.Attr("keepdims", c.keepdims);
      t.Input("data", RandomTensor(kF32, c.x, 12, -2, 2));
      if (!c.axes.empty()) t.Input("axes", Int64s(c.axes), true);
      t.OutputName("reduced").Tolerance(1e-4, 1e-4);
      CompareOnCuda(t);
    }
  }
  OpTester legacy("ReduceMean", 13);  // axes as an attribute
  legacy.Attr("axes", std::vector<int64_t>{2, 3}).Attr("keepdims", int64_t{1});
  legacy.Input("data", RandomTensor(kF32, {1, 32, 7, 7}, 13)).OutputName("reduced").Tolerance(1e-5, 1e-5);
  CompareOnCuda(legacy);
  CompareFloat16WithCpu(
      "ReduceMean", 13, {RandomTensor(kF16, {1, 32, 7, 7}, 14)},
      [](OpTester& o, const std::vector<Tensor>& in) {
        o.Attr("axes", std::vector<int64_t>{2, 3}).Attr("keepdims", int64_t{1}).Input("data", in[0]);
      },
      2e-3, 2e-3);
}

TEST_F(CudaOpsTest, ComparisonsAndLogic) {
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    OpTester ints(op, 16);
    ints.Input("A", RandomTensor(kI64, {4, 5}, 15, -3, 3)).Input("B", RandomTensor(kI64, {5}, 16, -3, 3));
    ints.OutputName("C");
    CompareOnCuda(ints);
    OpTester floats(op, 16);
    floats.Input("A", RandomTensor(kF32, {2, 3, 4}, 17)).Input("B", RandomTensor(kF32, {3, 1}, 18)).OutputName("C");
    CompareOnCuda(floats);
    OpTester halves(op, 16);
    halves.Input("A", RandomTensor(kF16, {6}, 19, -2, 2)).Input("B", RandomTensor(kF16, {6}, 19, -2, 2));
    halves.OutputName("C");
    CompareOnCuda(halves);
  }
  for (const char* op : {"And", "Or", "Xor"}) {
    OpTester t(op, 7);
    t.Input("A", RandomTensor(DataType::kBool, {3, 4}, 20)).Input("B", RandomTensor(DataType::kBool, {4}, 21));
    t.OutputName("C");
    CompareOnCuda(t);
  }
  OpTester negation("Not", 1);
  negation.Input("X", RandomTensor(DataType::kBool, {17}, 22)).OutputName("Y");
  CompareOnCuda(negation);
}

TEST_F(CudaOpsTest, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::FromVector<float>({6}, {1.0f, NAN, inf, -inf, -2.0f, NAN});
  OpTester nan("IsNaN", 13);
  nan.Input("X", x).OutputName("Y");
  CompareOnCuda(nan);
  OpTester positive("IsInf", 10);
  positive.Attr("detect_negative", int64_t{0}).Input("X", x).OutputName("Y");
  CompareOnCuda(positive);
}

// Shape computations on Shape's output stay on the CPU (Shape itself runs on the CUDA EP from the input's
// shape alone), and the model still runs: Reshape reads the computed shape on the host.
TEST_F(CudaOpsTest, ShapeComputationsStayOnTheHost) {
  GraphBuilder builder;
  builder.Input("x", {2, 3, 4})
      .Node("Relu", {"x"}, {"r"})
      .Node("Shape", {"r"}, {"s"})
      .Node("Gather", {"s", "index"}, {"g"})
      .Node("Concat", {"g", "minus_one"}, {"target"})
      .Node("Reshape", {"r", "target"}, {"y"})
      .Output("y");
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(builder.Serialize()));
  auto add_ints = [&](const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = proto.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(static_cast<int>(kI64));
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  };
  add_ints("index", {0});
  add_ints("minus_one", {-1});
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.op_type() != "Concat") continue;
    auto* axis = node.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
  }
  const std::string model = proto.SerializeAsString();
  SessionOptions options;
  options.AddProvider(kCudaEpName);
  options.optimization_level = OptimizationLevel::kNone;  // keep the chain (the optimizer could fold it)
  Session session = MakeSession(model, options, TestEnv());
  std::map<std::string, std::string> placement;
  for (const PartitionEntry& e : session.Partition())
    if (!e.is_copy) placement[e.op_type] = e.ep;
  EXPECT_EQ(placement["Shape"], kCudaEpName);
  EXPECT_EQ(placement["Gather"], "CPUExecutionProvider");
  EXPECT_EQ(placement["Concat"], "CPUExecutionProvider");
  EXPECT_EQ(placement["Reshape"], kCudaEpName);
  const Tensor x = RandomTensor(kF32, {2, 3, 4}, 40);
  const Tensor y = session.Run({{"x", x}})[0].tensor();
  EXPECT_EQ(y.shape(), Shape({2, 12}));
  std::vector<float> expected;
  for (float v : x.Span<float>()) expected.push_back(std::max(v, 0.0f));
  EXPECT_EQ(y.ToVector<float>(), expected);
}

TEST_F(CudaOpsTest, WhereWithBroadcasting) {
  for (DataType type : {kF32, kF16, kI64}) {
    OpTester t("Where", 16);
    t.Input("condition", RandomTensor(DataType::kBool, {4, 1}, 23))
        .Input("X", RandomTensor(type, {4, 5}, 24, -9, 9))
        .Input("Y", RandomTensor(type, {5}, 25, -9, 9))
        .OutputName("output");
    CompareOnCuda(t);
  }
}

TEST_F(CudaOpsTest, CastBetweenFloatHalfIntegersAndBool) {
  struct Case {
    DataType from, to;
  };
  for (const Case& c : std::vector<Case>{{kF32, kF16},
                                         {kF16, kF32},
                                         {kF32, kI64},
                                         {kI64, kF32},
                                         {kI64, DataType::kBool},
                                         {DataType::kBool, kF32},
                                         {kF32, DataType::kInt32},
                                         {DataType::kInt32, kI64},
                                         {kF16, kI64},
                                         {kF32, DataType::kDouble}}) {
    OpTester t("Cast", 13);
    t.Attr("to", static_cast<int64_t>(c.to));
    t.Input("input", RandomTensor(c.from, {3, 8}, 26, -20, 20)).OutputName("output");
    CompareOnCuda(t);
  }
}

TEST_F(CudaOpsTest, GatherAlongAxes) {
  OpTester rows("Gather", 13);
  rows.Input("data", RandomTensor(kF32, {10, 8}, 27))
      .Input("indices", Tensor::FromVector<int64_t>({2, 3}, {0, 9, -1, 4, 4, -10}))
      .OutputName("output");
  CompareOnCuda(rows);
  OpTester columns("Gather", 13);
  columns.Attr("axis", int64_t{1});
  columns.Input("data", RandomTensor(kF16, {3, 6, 4}, 28))
      .Input("indices", Tensor::FromVector<int32_t>({2}, {5, 0}))
      .OutputName("output");
  CompareOnCuda(columns);
  OpTester ids("Gather", 13);  // an embedding lookup: int64 ids, 768-wide rows
  ids.Input("data", RandomTensor(kF32, {100, 768}, 29), true)
      .Input("indices", RandomTensor(kI64, {1, 16}, 30, 0, 99))
      .OutputName("output");
  CompareOnCuda(ids);
}

TEST_F(CudaOpsTest, SliceWithStepsAndNegativeIndices) {
  OpTester t("Slice", 13);
  t.Input("data", RandomTensor(kF32, {6, 8, 5}, 31))
      .Input("starts", Int64s({1, -6}), true)
      .Input("ends", Int64s({5, 100}), true)
      .Input("axes", Int64s({0, 1}), true)
      .Input("steps", Int64s({2, 1}), true)
      .OutputName("output");
  CompareOnCuda(t);
  OpTester backwards("Slice", 13);
  backwards.Input("data", RandomTensor(kI64, {7, 3}, 32, -50, 50))
      .Input("starts", Int64s({-1}), true)
      .Input("ends", Int64s({INT64_MIN}), true)
      .Input("axes", Int64s({0}), true)
      .Input("steps", Int64s({-2}), true)
      .OutputName("output");
  CompareOnCuda(backwards);
  OpTester legacy("Slice", 9);
  legacy.Attr("starts", std::vector<int64_t>{0, 1}).Attr("ends", std::vector<int64_t>{2, 3});
  legacy.Input("data", RandomTensor(kF16, {3, 4}, 33)).OutputName("output");
  CompareOnCuda(legacy);
}

TEST_F(CudaOpsTest, ExpandShapeAndConstantOfShape) {
  OpTester expand("Expand", 13);
  expand.Input("input", RandomTensor(kF32, {3, 1}, 34)).Input("shape", Int64s({2, 3, 4}), true).OutputName("output");
  CompareOnCuda(expand);
  OpTester expand_bool("Expand", 13);
  expand_bool.Input("input", RandomTensor(DataType::kBool, {1, 5}, 35))
      .Input("shape", Int64s({4, 1}), true)
      .OutputName("output");
  CompareOnCuda(expand_bool);
  OpTester shape("Shape", 15);
  shape.Attr("start", int64_t{1}).Input("data", RandomTensor(kF32, {2, 3, 4}, 36)).OutputName("shape");
  CompareOnCuda(shape);
  OpTester fill("ConstantOfShape", 9);
  fill.Attr("value", Tensor::FromVector<float>({1}, {1.5f})).Input("input", Int64s({2, 3}), true).OutputName("output");
  CompareOnCuda(fill);
  OpTester fill_ints("ConstantOfShape", 9);
  fill_ints.Attr("value", Tensor::FromVector<int64_t>({1}, {-7})).Input("input", Int64s({4}), true);
  fill_ints.OutputName("output");
  CompareOnCuda(fill_ints);
}

TEST_F(CudaOpsTest, MatMulWithBatchBroadcasting) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 4, 5}, {5, 6}},
                                         {{2, 12, 16, 8}, {2, 12, 8, 16}},  // attention scores
                                         {{1, 3, 4, 5}, {2, 1, 5, 6}},      // both sides broadcast
                                         {{4, 5}, {3, 5, 2}}}) {
    OpTester t("MatMul", 13);
    t.Input("A", RandomTensor(kF32, c.a, 37)).Input("B", RandomTensor(kF32, c.b, 38)).OutputName("Y");
    t.Tolerance(1e-2, 1e-2);  // TF32
    CompareOnCuda(t);
  }
}

}  // namespace
}  // namespace tessera::test
