// The CUDA kernels added for BERT-base and dynamo-exported ResNet-50 against the CPU EP: unary math and
// Gelu (and com.microsoft's Gelu family), Pow, LayerNormalization and the RMS normalizations, reductions, comparisons and logic, Where, Cast, Gather, Slice, Expand,
// Shape, ConstantOfShape, and MatMul with batch broadcasting. Each case also checks that the node really
// runs on the CUDA EP (a missing kernel would otherwise pass by falling back to the CPU).
#include <cmath>
#include <limits>
#include <thread>

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

// HardSigmoid (default and given alpha / beta), HardSwish and LeakyRelu.
TEST_F(CudaOpsTest, ParameterizedActivations) {
  struct Case {
    const char* op;
    int opset;
    float alpha, beta;  // NaN: the op's default
  };
  const float kDefault = std::numeric_limits<float>::quiet_NaN();
  for (const Case& c : std::vector<Case>{{"HardSigmoid", 6, kDefault, kDefault},
                                         {"HardSigmoid", 6, 0.3f, 0.4f},
                                         {"HardSwish", 14, kDefault, kDefault},
                                         {"LeakyRelu", 16, kDefault, kDefault},
                                         {"LeakyRelu", 16, 0.2f, kDefault}}) {
    SCOPED_TRACE(c.op);
    const auto attributes = [&](OpTester& o) {
      if (!std::isnan(c.alpha)) o.Attr("alpha", c.alpha);
      if (!std::isnan(c.beta)) o.Attr("beta", c.beta);
    };
    OpTester t(c.op, c.opset);
    attributes(t);
    t.Input("X", RandomTensor(kF32, {3, 7, 11}, 5, -5, 5)).OutputName("Y").Tolerance(1e-6, 1e-6);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        c.op, c.opset, {RandomTensor(kF16, {3, 7, 11}, 6, -5, 5)},
        [&](OpTester& o, const std::vector<Tensor>& in) {
          attributes(o);
          o.Input("X", in[0]);
        },
        4e-3, 4e-3);
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

TEST_F(CudaOpsTest, ContribGeluFamily) {
  struct Case {
    const char* op;
    bool bias;
    float alpha;  // QuickGelu's; 0: not set
  };
  for (const Case& c : std::vector<Case>{{"Gelu", false, 0},
                                         {"BiasGelu", true, 0},
                                         {"FastGelu", true, 0},
                                         {"FastGelu", false, 0},
                                         {"QuickGelu", false, 0},
                                         {"QuickGelu", false, 1.25f}}) {
    const auto build = [&](OpTester& o, const std::vector<Tensor>& in) {
      o.Input("X", in[0]);
      if (c.bias) o.Input("bias", in[1], true);
      if (c.alpha != 0) o.Attr("alpha", c.alpha);
    };
    OpTester t(c.op, 1, "com.microsoft");
    build(t, {RandomTensor(kF32, {3, 5, 96}, 12, -4, 4), RandomTensor(kF32, {96}, 13)});
    t.OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu(c.op, 1, {RandomTensor(kF16, {3, 5, 96}, 14, -4, 4), RandomTensor(kF16, {96}, 15)}, build,
                          4e-3, 4e-3, "com.microsoft");
  }
  // ONNX Swish (opset 24): the same kernel, alpha 1 by default.
  for (float alpha : {0.0f, 0.75f}) {
    const auto build = [&](OpTester& o, const std::vector<Tensor>& in) {
      o.Input("X", in[0]);
      if (alpha != 0) o.Attr("alpha", alpha);
    };
    OpTester t("Swish", 24);
    build(t, {RandomTensor(kF32, {3, 5, 96}, 22, -4, 4)});
    t.OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu("Swish", 24, {RandomTensor(kF16, {3, 5, 96}, 23, -4, 4)}, build, 4e-3, 4e-3);
  }
  OpTester missing_bias("BiasGelu", 1, "com.microsoft");
  missing_bias.Input("X", RandomTensor(kF32, {2, 8}, 16)).OutputName("Y").ExpectFailure("BiasGelu needs its bias");
  missing_bias.Run({"cuda"});
}

TEST_F(CudaOpsTest, RmsNormalizations) {
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (const Case& c : std::vector<Case>{{{2, 5, 768}, -1}, {{3, 4, 5}, 1}, {{2, 3000}, -1}, {{7, 33}, -1}}) {
    const Shape params(std::vector<int64_t>(c.x.dims().begin() + (c.axis < 0 ? c.x.rank() + c.axis : c.axis),
                                            c.x.dims().end()));
    OpTester t("RMSNormalization", 23);
    t.Attr("axis", c.axis).Attr("epsilon", 1e-6f);
    t.Input("X", RandomTensor(kF32, c.x, 17, -2, 3))
        .Input("scale", RandomTensor(kF32, params, 18, 0.5, 1.5), true)
        .OutputName("Y")
        .Tolerance(1e-4, 1e-4);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "RMSNormalization", 23, {RandomTensor(kF16, c.x, 19, -2, 3), RandomTensor(kF16, params, 20, 0.5, 1.5)},
        [&](OpTester& o, const std::vector<Tensor>& in) {
          o.Attr("axis", c.axis).Input("X", in[0]).Input("scale", in[1], true);
        },
        2e-2, 1e-2);
    // com.microsoft SimplifiedLayerNormalization, with its inv_std_var output.
    OpTester simplified("SimplifiedLayerNormalization", 1, "com.microsoft");
    simplified.Attr("axis", c.axis).Attr("epsilon", 1e-6f);
    simplified.Input("X", RandomTensor(kF32, c.x, 21, -2, 3))
        .Input("scale", RandomTensor(kF32, params, 22, 0.5, 1.5), true)
        .OutputName("Y")
        .OutputName("inv_std_var")
        .Tolerance(1e-4, 1e-4);
    CompareOnCuda(simplified);
  }
  // SkipSimplifiedLayerNormalization: with and without bias, every output but the mean.
  for (bool bias : {true, false}) {
    OpTester skip("SkipSimplifiedLayerNormalization", 1, "com.microsoft");
    skip.Attr("epsilon", 1e-6f);
    skip.Input("input", RandomTensor(kF32, {2, 7, 64}, 23, -2, 3))
        .Input("skip", RandomTensor(kF32, {2, 7, 64}, 24, -2, 3))
        .Input("gamma", RandomTensor(kF32, {64}, 25, 0.5, 1.5), true);
    if (bias) skip.Input("bias", RandomTensor(kF32, {64}, 26), true);
    skip.OutputName("output").OmittedOutput().OutputName("inv_std_var").OutputName("input_skip_bias_sum");
    skip.Tolerance(1e-4, 1e-4);
    CompareOnCuda(skip);
    CompareFloat16WithCpu(
        "SkipSimplifiedLayerNormalization", 1,
        {RandomTensor(kF16, {2, 7, 64}, 27, -2, 3), RandomTensor(kF16, {2, 7, 64}, 28, -2, 3),
         RandomTensor(kF16, {64}, 29, 0.5, 1.5), RandomTensor(kF16, {64}, 30)},
        [&](OpTester& o, const std::vector<Tensor>& in) {
          o.Input("input", in[0]).Input("skip", in[1]).Input("gamma", in[2], true);
          if (bias) o.Input("bias", in[3], true);
        },
        2e-2, 1e-2, "com.microsoft");
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

// Range reads its scalars on the host and writes on the device: every element type, steps of both signs, empty.
TEST_F(CudaOpsTest, Range) {
  const auto scalar = [](DataType type, double v) {
    Tensor t = Tensor::Allocate(type, Shape{});
    switch (type) {
      case DataType::kFloat: t.Data<float>()[0] = static_cast<float>(v); break;
      case DataType::kDouble: t.Data<double>()[0] = v; break;
      case DataType::kInt16: t.Data<int16_t>()[0] = static_cast<int16_t>(v); break;
      case DataType::kInt32: t.Data<int32_t>()[0] = static_cast<int32_t>(v); break;
      default: t.Data<int64_t>()[0] = static_cast<int64_t>(v); break;
    }
    return t;
  };
  struct Case {
    double start, limit, delta;
  };
  for (DataType type : {DataType::kFloat, DataType::kDouble, DataType::kInt16, DataType::kInt32, DataType::kInt64})
    for (const Case& c : std::vector<Case>{{3, 40, 3}, {10, -7, -4}, {0, 1000, 1}, {5, 5, 1}, {5, 2, 1}}) {
      OpTester range("Range", 11);
      range.Input("start", scalar(type, c.start)).Input("limit", scalar(type, c.limit)).Input("delta", scalar(type, c.delta));
      range.OutputName("output");
      CompareOnCuda(range);
    }
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

// Values with many ties (whole numbers in [-3, 3)), so that select_last_index matters.
Tensor Ties(const Shape& shape, uint32_t seed) {
  Tensor t = RandomTensor(kF32, shape, seed, -3, 3);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = std::floor(t.Data<float>()[i]);
  return t;
}

TEST_F(CudaOpsTest, ArgMaxAndArgMin) {
  struct Case {
    Shape x;
    int64_t axis, keepdims, select_last;
  };
  const std::vector<Case> cases{
      {{2, 50257}, -1, 1, 0},  // a vocabulary's logits: one block of 1024 threads per row
      {{4, 300}, 1, 0, 1},     // rows of 256 threads
      {{2, 7, 5}, 1, 1, 0},    // columns: one thread each
      {{3, 9}, 1, 0, 1},       // short rows
      {{6}, 0, 0, 0},
  };
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (const Case& c : cases) {
      for (bool ties : {false, true}) {
        OpTester t(op, 13);
        t.Attr("axis", c.axis).Attr("keepdims", c.keepdims).Attr("select_last_index", c.select_last);
        t.Input("data", ties ? Ties(c.x, 40) : RandomTensor(kF32, c.x, 41)).OutputName("reduced");
        CompareOnCuda(t);
      }
    }
    // float16 logits: the CUDA kernel on float16 against the CPU on the same values in float32 (exactly the same
    // order and ties).
    const Tensor half = RandomTensor(kF16, {2, 50257}, 42, -4, 4);
    OpTester on_cuda(op, 13);
    on_cuda.Attr("axis", int64_t{-1}).Input("data", half).OutputName("reduced");
    OpTester on_cpu(op, 13);
    on_cpu.Attr("axis", int64_t{-1}).Input("data", Float16ToFloat(half)).OutputName("reduced");
    EXPECT_EQ(CompareTensors(on_cpu.RunOn("cpu")[0], on_cuda.RunOn("cuda")[0], 0, 0), "") << op << " float16";
  }
}

// Indices for ScatterElements along `axis` of `data`: for each position of the other axes, distinct rows of the
// axis (a permutation's first `count`), every other one negative (counted from the back).
Tensor DistinctIndices(const Shape& data, const Shape& indices, size_t axis, uint32_t seed) {
  Tensor t = Tensor::Allocate(DataType::kInt64, indices);
  const int64_t inner = indices.SizeFrom(axis + 1), count = indices[axis], outer = indices.SizeTo(axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> rows(static_cast<size_t>(data[axis]));
      for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
      for (size_t r = rows.size(); r-- > 1;) {
        seed = seed * 1664525u + 1013904223u;
        std::swap(rows[r], rows[(seed >> 8) % (r + 1)]);
      }
      for (int64_t j = 0; j < count; ++j) {
        const int64_t row = rows[static_cast<size_t>(j)];
        t.Data<int64_t>()[(o * count + j) * inner + i] = (j % 2 == 1) ? row - data[axis] : row;
      }
    }
  return t;
}

TEST_F(CudaOpsTest, ScatterElementsAndScatterND) {
  for (DataType type : {kF32, kI64, kF16}) {
    for (size_t axis : {0u, 1u, 2u}) {
      const Shape data{4, 5, 6};
      std::vector<int64_t> dims{4, 5, 6};
      dims[axis] = 2;
      const Shape shape(dims);
      OpTester t("ScatterElements", 16);
      t.Attr("axis", static_cast<int64_t>(axis));
      t.Input("data", RandomTensor(type, data, 43, -5, 5))
          .Input("indices", DistinctIndices(data, shape, axis, 44))
          .Input("updates", RandomTensor(type, shape, 45, -5, 5))
          .OutputName("output");
      CompareOnCuda(t);
    }
    // The cache write of a decoding step: one row along axis 2 at a position held on the device.
    OpTester cache("ScatterElements", 16);
    Tensor position = Tensor::FromVector<int64_t>({1, 2, 1, 4}, std::vector<int64_t>(8, 5));
    cache.Attr("axis", int64_t{2});
    cache.Input("data", RandomTensor(type, {1, 2, 12, 4}, 46)).Input("indices", position);
    cache.Input("updates", RandomTensor(type, {1, 2, 1, 4}, 47)).OutputName("output");
    CompareOnCuda(cache);
    OpTester nd("ScatterND", 16);
    nd.Input("data", RandomTensor(type, {4, 5, 3}, 48, -5, 5))
        .Input("indices", Tensor::FromVector<int64_t>({3, 2}, {0, 1, 3, -1, 2, 2}))
        .Input("updates", RandomTensor(type, {3, 3}, 49, -5, 5))
        .OutputName("output");
    CompareOnCuda(nd);
  }
  // A reduction stays on the CPU.
  OpTester add("ScatterElements", 16);
  add.Attr("reduction", std::string("add"));
  add.Input("data", RandomTensor(kF32, {3, 3}, 50)).Input("indices", Tensor::FromVector<int64_t>({1, 3}, {0, 1, 2}));
  add.Input("updates", RandomTensor(kF32, {1, 3}, 51)).OutputName("output");
  add.CompareWithCpu({"cuda"});
}

// Gemm with a constant B (as Hugging Face's Conv1D exports: addmm) on one to four rows: launch::SmallRowsProduct, with
// and without transB and a bias; five rows and a C of Y's shape take cuBLAS.
TEST_F(CudaOpsTest, GemmOfAFewRowsWithConstantWeights) {
  struct Case {
    int64_t m, k, n;
    bool trans_b;
    int c;  // 0 none, 1 column bias, 2 C of Y's shape
  };
  for (const Case& c : std::vector<Case>{{1, 768, 2304, false, 1}, {2, 64, 48, true, 1}, {4, 32, 40, false, 0},
                                         {3, 16, 24, true, 0}, {5, 32, 16, false, 1}, {1, 32, 16, false, 2}}) {
    for (DataType type : {kF32, kF16}) {
      OpTester t("Gemm", 13);
      if (c.trans_b) t.Attr("transB", int64_t{1});
      t.Input("A", RandomTensor(type, {c.m, c.k}, 52));
      t.Input("B", RandomTensor(type, c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, 53), true);
      if (c.c == 1) t.Input("C", RandomTensor(type, {c.n}, 54), true);
      if (c.c == 2) t.Input("C", RandomTensor(type, {c.m, c.n}, 55), true);
      t.OutputName("Y");
      if (type == kF32) {
        t.Tolerance(1e-2, 1e-2);  // cuBLAS's rows in TF32
        CompareOnCuda(t);
        continue;
      }
      OpTester f("Gemm", 13);  // the float32 reference of the float16 product
      if (c.trans_b) f.Attr("transB", int64_t{1});
      const std::vector<Tensor> actual = t.RunOn("cuda");
      f.Input("A", Float16ToFloat(RandomTensor(type, {c.m, c.k}, 52)));
      f.Input("B", Float16ToFloat(RandomTensor(type, c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, 53)), true);
      if (c.c == 1) f.Input("C", Float16ToFloat(RandomTensor(type, {c.n}, 54)), true);
      if (c.c == 2) f.Input("C", Float16ToFloat(RandomTensor(type, {c.m, c.n}, 55)), true);
      f.OutputName("Y");
      EXPECT_EQ(CompareTensors(f.RunOn("cpu")[0], Float16ToFloat(actual[0]), 2e-2, 2e-3), "")
          << "float16 " << c.m << "x" << c.k << "x" << c.n;
    }
  }
}

// The transposed copy of a MatMul's constant weights that products of a few rows use is made by the first such
// product, not at session creation: a session that first multiplies many rows (cuBLAS), then one row from four
// threads at once (the copy made once, under the kernel's lock, while the other threads wait or take it), gives the
// CPU EP's results throughout.
TEST_F(CudaOpsTest, FewRowsProductsMakeTheirTransposedWeightsOnFirstUse) {
  GraphBuilder builder;
  builder.FloatInitializer("w", {64, 48}, RandomTensor(kF32, {64, 48}, 61).ToVector<float>());
  builder.Input("x", {-1, 64}).Node("MatMul", {"x", "w"}, {"y"}).Output("y");
  const std::string model = builder.Serialize();
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"automatic_cuda_graphs", "0"}});
  Session cuda = MakeSession(model, options, TestEnv());
  const Tensor many = RandomTensor(kF32, {64, 64}, 62);
  EXPECT_EQ(CompareTensors(cpu.Run({{"x", Value(many)}})[0].tensor(), cuda.Run({{"x", Value(many)}})[0].tensor(), 1e-4,
                           1e-4),
            "");
  std::vector<Tensor> rows, want, got(4);
  for (uint32_t i = 0; i < 4; ++i) {
    rows.push_back(RandomTensor(kF32, {1, 64}, 63 + i));
    want.push_back(cpu.Run({{"x", Value(rows[i])}})[0].tensor());
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { got[i] = cuda.Run({{"x", Value(rows[i])}})[0].tensor(); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(CompareTensors(want[i], got[i], 1e-4, 1e-4), "") << "thread " << i;
  EXPECT_EQ(CompareTensors(want[0], cuda.Run({{"x", Value(rows[0])}})[0].tensor(), 1e-4, 1e-4), "") << "again";
}

}  // namespace
}  // namespace tessera::test
