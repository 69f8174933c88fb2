// Elementwise math, comparison, logical and variadic operators, checked against a naive reference
// that broadcasts by explicit index arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ops/op_tester.h"
#include "providers/cpu/common/broadcast.h"

namespace tessera::test {
namespace {

Shape ReferenceBroadcastShape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.rank() >= rank ? a[d + a.rank() - rank] : 1;
    const int64_t db = d + b.rank() >= rank ? b[d + b.rank() - rank] : 1;
    dims[d] = da == 1 ? db : da;
  }
  return Shape(dims);
}

// The flat index into `in` of output element `flat` of shape `out` (in broadcasts to out).
int64_t SourceIndex(int64_t flat, const Shape& out, const Shape& in) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.rank(); d-- > out.rank() - in.rank();) {
    const int64_t coordinate = flat % out[d];
    flat /= out[d];
    const int64_t in_dim = in[d - (out.rank() - in.rank())];
    if (in_dim != 1) index += coordinate * stride;
    stride *= in_dim;
  }
  return index;
}

// out[i] = fn(a[..], b[..]) with numpy broadcasting, computed the slow, obvious way.
template <typename O, typename A, typename B, typename Fn>
Tensor Reference(const Tensor& a, const Tensor& b, Fn fn) {
  const Shape out_shape = ReferenceBroadcastShape(a.shape(), b.shape());
  Tensor out = Tensor::Allocate(DataTypeOf<O>(), out_shape);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    out.Data<O>()[i] = static_cast<O>(fn(a.Data<A>()[SourceIndex(i, out_shape, a.shape())],
                                         b.Data<B>()[SourceIndex(i, out_shape, b.shape())]));
  }
  return out;
}

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

void CheckBinary(const std::string& op, const Tensor& a, const Tensor& b, const Tensor& expected, int opset = 14) {
  SCOPED_TRACE(op + " " + a.Describe() + " , " + b.Describe());
  OpTester t(op, opset);
  t.Input("A", a).Input("B", b).Output("C", expected);
  t.Run();
}

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair>& BroadcastCases() {
  static const std::vector<ShapePair> cases = {
      {{2, 3}, {2, 3}},           // same shape
      {{}, {2, 3}},               // scalar lhs
      {{2, 3}, {}},               // scalar rhs
      {{2, 3}, {3}},              // row
      {{2, 3}, {2, 1}},           // column
      {{2, 1}, {1, 3}},           // both sides
      {{2, 3, 4}, {3, 1}},        // rank mismatch
      {{4, 1, 5}, {2, 1, 3, 1}},  // rank mismatch, both sides
      {{1, 1}, {1}},              // all ones
      {{0, 3}, {3}},              // zero-size
      {{2, 0}, {2, 1}},           // zero-size, broadcast along the empty dim
      {{300, 200}, {200}},        // large: parallel path, row
      {{64, 1, 1024}, {1, 3, 1}}, // large: parallel path, both sides
  };
  return cases;
}

TEST(ElementwiseTest, AddSubMulDivFloatBroadcasting) {
  uint32_t seed = 1;
  for (const ShapePair& c : BroadcastCases()) {
    const Tensor a = RandomTensor(DataType::kFloat, c.a, seed++);
    const Tensor b = RandomTensor(DataType::kFloat, c.b, seed++, 0.5, 2.0);
    CheckBinary("Add", a, b, Reference<float, float, float>(a, b, [](float x, float y) { return x + y; }));
    CheckBinary("Sub", a, b, Reference<float, float, float>(a, b, [](float x, float y) { return x - y; }));
    CheckBinary("Mul", a, b, Reference<float, float, float>(a, b, [](float x, float y) { return x * y; }));
    CheckBinary("Div", a, b, Reference<float, float, float>(a, b, [](float x, float y) { return x / y; }));
  }
}

TEST(ElementwiseTest, AddSupportsEveryNumericType) {
  const Shape sa{3, 4}, sb{4};
  CheckBinary("Add", RandomTensor(DataType::kDouble, sa, 1), RandomTensor(DataType::kDouble, sb, 2),
              Reference<double, double, double>(RandomTensor(DataType::kDouble, sa, 1),
                                                RandomTensor(DataType::kDouble, sb, 2), std::plus<double>()));
  const Tensor i32a = RandomTensor(DataType::kInt32, sa, 3, -100, 100), i32b = RandomTensor(DataType::kInt32, sb, 4, -100, 100);
  CheckBinary("Add", i32a, i32b, Reference<int32_t, int32_t, int32_t>(i32a, i32b, std::plus<int32_t>()));
  const Tensor i64a = RandomTensor(DataType::kInt64, sa, 5, -1e9, 1e9), i64b = RandomTensor(DataType::kInt64, sb, 6, -1e9, 1e9);
  CheckBinary("Mul", i64a, i64b, Reference<int64_t, int64_t, int64_t>(i64a, i64b, std::multiplies<int64_t>()));
  const Tensor u8a = RandomTensor(DataType::kUInt8, sa, 7, 0, 100), u8b = RandomTensor(DataType::kUInt8, sb, 8, 0, 100);
  CheckBinary("Add", u8a, u8b, Reference<uint8_t, uint8_t, uint8_t>(u8a, u8b, std::plus<int>()));
  const Tensor i8a = RandomTensor(DataType::kInt8, sa, 9, -60, 60), i8b = RandomTensor(DataType::kInt8, sb, 10, -60, 60);
  CheckBinary("Sub", i8a, i8b, Reference<int8_t, int8_t, int8_t>(i8a, i8b, std::minus<int>()));
}

TEST(ElementwiseTest, Float16AndBFloat16ComputeInFloat) {
  const Tensor a = Make<Float16>({2, 2}, {ToFloat16(1.5f), ToFloat16(-2.0f), ToFloat16(0.25f), ToFloat16(1000.0f)});
  const Tensor b = Make<Float16>({2}, {ToFloat16(0.5f), ToFloat16(4.0f)});
  CheckBinary("Add", a, b, Make<Float16>({2, 2}, {ToFloat16(2.0f), ToFloat16(2.0f), ToFloat16(0.75f), ToFloat16(1004.0f)}));
  CheckBinary("Div", a, b, Make<Float16>({2, 2}, {ToFloat16(3.0f), ToFloat16(-0.5f), ToFloat16(0.5f), ToFloat16(250.0f)}));
  const Tensor c = Make<BFloat16>({3}, {ToBFloat16(1.0f), ToBFloat16(2.0f), ToBFloat16(-3.0f)});
  CheckBinary("Mul", c, c, Make<BFloat16>({3}, {ToBFloat16(1.0f), ToBFloat16(4.0f), ToBFloat16(9.0f)}));
}

TEST(ElementwiseTest, IntegerArithmeticWrapsAndDividesTowardZero) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  CheckBinary("Add", Make<int32_t>({2}, {kMax, -5}), Make<int32_t>({2}, {1, 2}), Make<int32_t>({2}, {kMin, -3}));
  CheckBinary("Div", Make<int32_t>({4}, {7, -7, 7, kMin}), Make<int32_t>({4}, {2, 2, -2, -1}),
              Make<int32_t>({4}, {3, -3, -3, kMin}));
}

TEST(ElementwiseTest, IntegerDivisionByZeroFailsNamingTheNode) {
  OpTester t("Div", 14);
  t.Input("A", Make<int32_t>({2}, {1, 2})).Input("B", Make<int32_t>({2}, {1, 0})).OutputName("C");
  t.ExpectFailure("division by zero");
  t.Run();
  OpTester named("Div", 14);
  named.Input("A", Make<int64_t>({1}, {1})).Input("B", Make<int64_t>({1}, {0})).OutputName("C");
  named.ExpectFailure("Div_node");
  named.Run({"cpu"});
}

TEST(ElementwiseTest, IncompatibleShapesFailNamingNodeAndShapes) {
  for (const std::string& part : {std::string("Add_node"), std::string("[2,3]"), std::string("[4]")}) {
    OpTester t("Add", 14);
    t.Input("A", RandomTensor(DataType::kFloat, {2, 3}, 1)).Input("B", RandomTensor(DataType::kFloat, {4}, 2));
    t.OutputName("C").ExpectFailure(part);
    t.Run({"cpu"});
  }
}

TEST(ElementwiseTest, MismatchedInputTypesFail) {
  OpTester t("Sub", 14);
  t.Input("A", Make<float>({1}, {1})).Input("B", Make<double>({1}, {1})).OutputName("C").ExpectFailure("Sub");
  t.Run({"cpu"});
}

TEST(ElementwiseTest, UnsupportedTypeFailsAtSessionCreation) {
  OpTester t("Add", 14);
  t.Input("A", Make<bool>({1}, {true})).Input("B", Make<bool>({1}, {false})).OutputName("C").ExpectFailure("Add");
  t.Run({"cpu"});
}

TEST(ElementwiseTest, ModFollowsDivisorSignUnlessFmod) {
  const Tensor a = Make<int32_t>({4}, {7, -7, 7, -7});
  const Tensor b = Make<int32_t>({4}, {3, 3, -3, -3});
  CheckBinary("Mod", a, b, Make<int32_t>({4}, {1, 2, -2, -1}), 13);
  OpTester fmod("Mod", 13);
  fmod.Attr("fmod", int64_t{1}).Input("A", a).Input("B", b).Output("C", Make<int32_t>({4}, {1, -1, 1, -1}));
  fmod.Run();
  OpTester floats("Mod", 13);
  floats.Attr("fmod", int64_t{1})
      .Input("A", Make<float>({3}, {5.5f, -5.5f, 5.5f}))
      .Input("B", Make<float>({1}, {2.0f}))
      .Output("C", Make<float>({3}, {1.5f, -1.5f, 1.5f}));
  floats.Run();
  OpTester invalid("Mod", 13);
  invalid.Input("A", Make<float>({1}, {1})).Input("B", Make<float>({1}, {1})).OutputName("C").ExpectFailure("fmod");
  invalid.Run({"cpu"});
}

// Mod-28 defines floating-point Mod with fmod = 0: a - floor(a / b) * b, a zero result with b's sign, b = +-inf
// giving a (same sign) or b.
TEST(ElementwiseTest, FloatModWithFloorFromOpset28) {
  const float inf = std::numeric_limits<float>::infinity();
  OpTester t("Mod", 28);
  t.Input("A", Make<float>({7}, {5.5f, -5.5f, 5.5f, 4.0f, 0.0f, 3.0f, -3.0f}))
      .Input("B", Make<float>({7}, {2.0f, 2.0f, -2.0f, -2.0f, -1.0f, -inf, -inf}))
      .Output("C", Make<float>({7}, {1.5f, 0.5f, -0.5f, -0.0f, -0.0f, -inf, -3.0f}));
  t.Run({"cpu"});
  const Tensor c = t.RunOn("cpu")[0];
  EXPECT_TRUE(std::signbit(c.Data<float>()[3]) && std::signbit(c.Data<float>()[4]));  // zeros take b's sign
}

TEST(ElementwiseTest, PowWithMixedBaseAndExponentTypes) {
  const Tensor base = RandomTensor(DataType::kFloat, {3, 4}, 1, 0.1, 3.0);
  const Tensor exponent = RandomTensor(DataType::kFloat, {4}, 2, -2.0, 2.0);
  CheckBinary("Pow", base, exponent,
              Reference<float, float, float>(base, exponent, [](float x, float y) { return std::pow(x, y); }), 15);
  const Tensor int_exponent = Make<int64_t>({4}, {0, 1, 2, 3});
  CheckBinary("Pow", base, int_exponent,
              Reference<float, float, int64_t>(base, int_exponent, [](float x, int64_t y) { return std::pow(x, float(y)); }), 15);
  CheckBinary("Pow", Make<int32_t>({5}, {2, -3, 10, 1, -1}), Make<int32_t>({5}, {10, 3, 0, -4, -3}),
              Make<int32_t>({5}, {1024, -27, 1, 1, -1}), 15);
  CheckBinary("Pow", Make<int64_t>({2}, {4, 9}), Make<float>({1}, {0.5f}), Make<int64_t>({2}, {2, 3}), 15);
  CheckBinary("Pow", Make<double>({2}, {1.5, -2}), Make<int32_t>({1}, {3}), Make<double>({2}, {3.375, -8}), 15);
}

TEST(ElementwiseTest, PowScalarSquareAndRootFastPaths) {
  const Tensor x = RandomTensor(DataType::kFloat, {200, 300}, 3, 0.0, 4.0);
  for (float e : {2.0f, 0.5f, 3.0f}) {
    const Tensor exponent = Make<float>({}, {e});
    CheckBinary("Pow", x, exponent,
                Reference<float, float, float>(x, exponent, [](float b, float p) { return std::pow(b, p); }), 15);
  }
}

TEST(ElementwiseTest, ComparisonsBroadcastAndReturnBool) {
  const Tensor a = RandomTensor(DataType::kInt32, {3, 4}, 1, -3, 3);
  const Tensor b = RandomTensor(DataType::kInt32, {3, 1}, 2, -3, 3);
  CheckBinary("Equal", a, b, Reference<bool, int32_t, int32_t>(a, b, std::equal_to<int32_t>()), 13);
  CheckBinary("Less", a, b, Reference<bool, int32_t, int32_t>(a, b, std::less<int32_t>()), 13);
  CheckBinary("Greater", a, b, Reference<bool, int32_t, int32_t>(a, b, std::greater<int32_t>()), 13);
  CheckBinary("LessOrEqual", a, b, Reference<bool, int32_t, int32_t>(a, b, std::less_equal<int32_t>()), 16);
  CheckBinary("GreaterOrEqual", a, b, Reference<bool, int32_t, int32_t>(a, b, std::greater_equal<int32_t>()), 16);
  const Tensor f = RandomTensor(DataType::kFloat, {2, 3, 4}, 3);
  const Tensor g = RandomTensor(DataType::kFloat, {4}, 4);
  CheckBinary("Less", f, g, Reference<bool, float, float>(f, g, std::less<float>()), 13);
  CheckBinary("Equal", f, f, Reference<bool, float, float>(f, f, std::equal_to<float>()), 13);
  const Tensor p = RandomTensor(DataType::kBool, {5}, 5);
  const Tensor q = RandomTensor(DataType::kBool, {2, 5}, 6);
  CheckBinary("Equal", p, q, Reference<bool, bool, bool>(p, q, std::equal_to<bool>()), 13);
}

TEST(ElementwiseTest, LogicalOperators) {
  const Tensor p = Make<bool>({4}, {true, true, false, false});
  const Tensor q = Make<bool>({2, 1}, {true, false});
  CheckBinary("And", p, q, Reference<bool, bool, bool>(p, q, [](bool x, bool y) { return x && y; }), 7);
  CheckBinary("Or", p, q, Reference<bool, bool, bool>(p, q, [](bool x, bool y) { return x || y; }), 7);
  CheckBinary("Xor", p, q, Reference<bool, bool, bool>(p, q, [](bool x, bool y) { return x != y; }), 7);
  OpTester n("Not", 7);
  n.Input("X", p).Output("Y", Make<bool>({4}, {false, false, true, true}));
  n.Run();
}

TEST(ElementwiseTest, WhereBroadcastsAllThreeInputs) {
  const Tensor condition = Make<bool>({2, 1}, {true, false});
  const Tensor x = Make<float>({3}, {1, 2, 3});
  const Tensor y = Make<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  OpTester t("Where", 16);
  t.Input("C", condition).Input("X", x).Input("Y", y).Output("Z", Make<float>({2, 3}, {1, 2, 3, 40, 50, 60}));
  t.Run();

  OpTester strings("Where", 16);
  strings.Input("C", Make<bool>({3}, {true, false, true}))
      .Input("X", Make<std::string>({}, {"yes"}))
      .Input("Y", Make<std::string>({1, 3}, {"a", "b", "c"}))
      .Output("Z", Make<std::string>({1, 3}, {"yes", "b", "yes"}));
  strings.Run({"cpu"});

  const Tensor big_condition = RandomTensor(DataType::kBool, {40, 1, 1000}, 1);
  const Tensor big_x = RandomTensor(DataType::kInt64, {3, 1}, 2, -100, 100);
  const Tensor big_y = RandomTensor(DataType::kInt64, {1000}, 3, -100, 100);
  const Shape out_shape{40, 3, 1000};
  Tensor expected = Tensor::Allocate(DataType::kInt64, out_shape);
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const bool c = big_condition.Data<bool>()[SourceIndex(i, out_shape, big_condition.shape())];
    expected.Data<int64_t>()[i] = c ? big_x.Data<int64_t>()[SourceIndex(i, out_shape, big_x.shape())]
                                    : big_y.Data<int64_t>()[SourceIndex(i, out_shape, big_y.shape())];
  }
  OpTester large("Where", 16);
  large.Input("C", big_condition).Input("X", big_x).Input("Y", big_y).Output("Z", expected);
  large.Run();
}

TEST(ElementwiseTest, VariadicMaxMinSumMean) {
  const Tensor a = Make<float>({2, 3}, {1, 5, 3, -1, 0, 8});
  const Tensor b = Make<float>({3}, {2, 2, 2});
  const Tensor c = Make<float>({2, 1}, {4, -4});
  auto run = [&](const std::string& op, const Tensor& expected) {
    OpTester t(op, 13);
    t.Input("a", a).Input("b", b).Input("c", c).Output("y", expected);
    t.Run();
  };
  run("Max", Make<float>({2, 3}, {4, 5, 4, 2, 2, 8}));
  run("Min", Make<float>({2, 3}, {1, 2, 2, -4, -4, -4}));
  run("Sum", Make<float>({2, 3}, {7, 11, 9, -3, -2, 6}));
  run("Mean", Make<float>({2, 3}, {7.f / 3, 11.f / 3, 3, -1, -2.f / 3, 2}));

  OpTester single("Sum", 13);
  single.Input("a", a).Output("y", a);
  single.Run();

  const float nan = std::numeric_limits<float>::quiet_NaN();
  OpTester with_nan("Max", 13);
  with_nan.Input("a", Make<float>({2}, {nan, 1})).Input("b", Make<float>({2}, {0, nan})).Output("y", Make<float>({2}, {nan, nan}));
  with_nan.Run();

  OpTester ints("Min", 13);
  ints.Input("a", Make<int64_t>({3}, {1, -7, 3})).Input("b", Make<int64_t>({1}, {0})).Output("y", Make<int64_t>({3}, {0, -7, 0}));
  ints.Run();
}

// Unary ops: expected = fn(x) element by element (computed in double, stored as float).
template <typename Fn>
void CheckUnaryFloat(const std::string& op, int opset, const Tensor& x, Fn fn) {
  SCOPED_TRACE(op);
  Tensor expected = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) expected.Data<float>()[i] = static_cast<float>(fn(double(x.Data<float>()[i])));
  OpTester t(op, opset);
  t.Input("X", x).Output("Y", expected);
  t.Run();
}

TEST(ElementwiseTest, UnaryMathMatchesStandardLibrary) {
  const Tensor x = RandomTensor(DataType::kFloat, {4, 50}, 11, -3.0, 3.0);
  const Tensor positive = RandomTensor(DataType::kFloat, {4, 50}, 12, 0.01, 10.0);
  CheckUnaryFloat("Neg", 13, x, [](double v) { return -v; });
  CheckUnaryFloat("Abs", 13, x, [](double v) { return std::fabs(v); });
  CheckUnaryFloat("Sqrt", 13, positive, [](double v) { return std::sqrt(v); });
  CheckUnaryFloat("Exp", 13, x, [](double v) { return std::exp(v); });
  CheckUnaryFloat("Log", 13, positive, [](double v) { return std::log(v); });
  CheckUnaryFloat("Reciprocal", 13, positive, [](double v) { return 1 / v; });
  CheckUnaryFloat("Floor", 13, x, [](double v) { return std::floor(v); });
  CheckUnaryFloat("Ceil", 13, x, [](double v) { return std::ceil(v); });
  CheckUnaryFloat("Sign", 13, x, [](double v) { return double((v > 0) - (v < 0)); });
  CheckUnaryFloat("Erf", 13, x, [](double v) { return std::erf(v); });
  CheckUnaryFloat("Sin", 7, x, [](double v) { return std::sin(v); });
  CheckUnaryFloat("Cos", 7, x, [](double v) { return std::cos(v); });
  const Tensor large = RandomTensor(DataType::kFloat, {100, 1000}, 13, -5.0, 5.0);
  CheckUnaryFloat("Exp", 13, large, [](double v) { return std::exp(v); });
}

// Exp, Tanh and Erf use branch-free float approximations; check them over the whole range at 1e-6.
TEST(ElementwiseTest, ExpTanhAndErfAreAccurateOverTheFloatRange) {
  std::vector<float> values;
  for (float v = -110.0f; v <= 95.0f; v += 0.0371f) values.push_back(v);
  for (float v = -4.0f; v <= 4.0f; v += 0.00123f) values.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-7f, 3e-5f, 0.6249f, 0.6251f, 88.7f, 89.5f, -103.9f}) values.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) values.push_back(v);
  const Tensor x = Make<float>({static_cast<int64_t>(values.size())}, values);
  for (const std::string op : {"Exp", "Tanh", "Erf"}) {
    Tensor expected = Tensor::Allocate(DataType::kFloat, x.shape());
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      const double y = op == "Exp" ? std::exp(v) : (op == "Tanh" ? std::tanh(v) : std::erf(v));
      expected.Data<float>()[i] = static_cast<float>(y);
    }
    OpTester t(op, 13);
    t.Input("X", x).Output("Y", expected).Tolerance(1e-38, 1e-6);
    t.Run({"cpu"});
  }
}

TEST(ElementwiseTest, RoundHalvesToEven) {
  OpTester t("Round", 11);
  t.Input("X", Make<float>({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f}))
      .Output("Y", Make<float>({7}, {0, 2, 2, -0.0f, -2, 2, -3}));
  t.Run();
}

TEST(ElementwiseTest, IntegerUnaryOps) {
  OpTester neg("Neg", 13);
  neg.Input("X", Make<int32_t>({3}, {5, -7, 0})).Output("Y", Make<int32_t>({3}, {-5, 7, 0}));
  neg.Run();
  OpTester abs("Abs", 13);
  abs.Input("X", Make<int64_t>({3}, {5, -7, 0})).Output("Y", Make<int64_t>({3}, {5, 7, 0}));
  abs.Run();
  OpTester sign("Sign", 13);
  sign.Input("X", Make<int8_t>({3}, {5, -7, 0})).Output("Y", Make<int8_t>({3}, {1, -1, 0}));
  sign.Run();
}

TEST(ElementwiseTest, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Make<float>({4}, {1.0f, nan, inf, -inf});
  OpTester is_nan("IsNaN", 13);
  is_nan.Input("X", x).Output("Y", Make<bool>({4}, {false, true, false, false}));
  is_nan.Run();
  OpTester is_inf("IsInf", 10);
  is_inf.Input("X", x).Output("Y", Make<bool>({4}, {false, false, true, true}));
  is_inf.Run();
  OpTester positive_only("IsInf", 10);
  positive_only.Attr("detect_negative", int64_t{0}).Input("X", x).Output("Y", Make<bool>({4}, {false, false, true, false}));
  positive_only.Run();
}

TEST(ElementwiseTest, InverseAndHyperbolicTrigonometry) {
  const Tensor x = RandomTensor(DataType::kFloat, {3, 40}, 14, -0.95, 0.95);
  const Tensor above_one = RandomTensor(DataType::kFloat, {3, 40}, 15, 1.0, 5.0);
  CheckUnaryFloat("Tan", 7, x, [](double v) { return std::tan(v); });
  CheckUnaryFloat("Asin", 7, x, [](double v) { return std::asin(v); });
  CheckUnaryFloat("Acos", 7, x, [](double v) { return std::acos(v); });
  CheckUnaryFloat("Atan", 7, x, [](double v) { return std::atan(v); });
  CheckUnaryFloat("Sinh", 9, x, [](double v) { return std::sinh(v); });
  CheckUnaryFloat("Cosh", 9, x, [](double v) { return std::cosh(v); });
  CheckUnaryFloat("Asinh", 9, x, [](double v) { return std::asinh(v); });
  CheckUnaryFloat("Acosh", 9, above_one, [](double v) { return std::acosh(v); });
  CheckUnaryFloat("Atanh", 9, x, [](double v) { return std::atanh(v); });
}

TEST(ElementwiseTest, BitShiftBothDirectionsAndOversizedShifts) {
  OpTester left("BitShift", 11);
  left.Attr("direction", std::string("LEFT"))
      .Input("X", Make<uint8_t>({4}, {1, 3, 255, 7}))
      .Input("Y", Make<uint8_t>({4}, {1, 2, 1, 8}))
      .Output("Z", Make<uint8_t>({4}, {2, 12, 254, 0}));
  left.Run();
  OpTester right("BitShift", 11);
  right.Attr("direction", std::string("RIGHT"))
      .Input("X", Make<uint64_t>({3}, {1ull << 63, 96, 5}))
      .Input("Y", Make<uint64_t>({1}, {4}))
      .Output("Z", Make<uint64_t>({3}, {1ull << 59, 6, 0}));
  right.Run();
  OpTester bad("BitShift", 11);
  bad.Attr("direction", std::string("UP")).Input("X", Make<uint32_t>({1}, {1})).Input("Y", Make<uint32_t>({1}, {1}));
  bad.OutputName("Z").ExpectFailure("direction");
  bad.Run({"cpu"});
}

// BitShift-28 on signed integers: arithmetic right shifts, left shifts past the sign bit dropped, out-of-range
// (negative or too large) amounts give the sign extension alone.
TEST(ElementwiseTest, BitShiftOnSignedIntegersFromOpset28) {
  OpTester right("BitShift", 28);
  right.Attr("direction", std::string("RIGHT"))
      .Input("X", Make<int8_t>({5}, {-128, -7, 64, -1, 5}))
      .Input("Y", Make<int8_t>({5}, {1, 1, 6, 9, -1}))
      .Output("Z", Make<int8_t>({5}, {-64, -4, 1, -1, 0}));
  right.Run({"cpu"});
  OpTester left("BitShift", 28);
  left.Attr("direction", std::string("LEFT"))
      .Input("X", Make<int64_t>({4}, {1, -3, int64_t{1} << 62, -1}))
      .Input("Y", Make<int64_t>({4}, {63, 2, 1, 64}))
      .Output("Z", Make<int64_t>({4}, {std::numeric_limits<int64_t>::min(), -12, std::numeric_limits<int64_t>::min(), 0}));
  left.Run({"cpu"});
  OpTester before("BitShift", 27);  // signed types only from opset 28
  before.Attr("direction", std::string("LEFT")).Input("X", Make<int32_t>({1}, {1})).Input("Y", Make<int32_t>({1}, {1}));
  before.OutputName("Z").ExpectFailure("BitShift");
  before.Run({"cpu"});
}

TEST(ElementwiseTest, NarrowAndUnsignedIntegerTypes) {
  CheckBinary("Mul", Make<int16_t>({2}, {300, -200}), Make<int16_t>({2}, {300, 200}),
              Make<int16_t>({2}, {static_cast<int16_t>(90000), static_cast<int16_t>(-40000)}));
  CheckBinary("Mul", Make<uint16_t>({1}, {65535}), Make<uint16_t>({1}, {65535}), Make<uint16_t>({1}, {1}));
  CheckBinary("Sub", Make<uint32_t>({2}, {5, 0}), Make<uint32_t>({2}, {3, 1}), Make<uint32_t>({2}, {2, 0xFFFFFFFFu}));
  CheckBinary("Div", Make<uint64_t>({2}, {~0ull, 9}), Make<uint64_t>({1}, {2}), Make<uint64_t>({2}, {~0ull / 2, 4}));
  CheckBinary("Mod", Make<int16_t>({4}, {7, -7, 7, -7}), Make<int16_t>({4}, {3, 3, -3, -3}),
              Make<int16_t>({4}, {1, 2, -2, -1}), 13);
  CheckBinary("Mod", Make<uint32_t>({2}, {7, 9}), Make<uint32_t>({1}, {4}), Make<uint32_t>({2}, {3, 1}), 13);
  CheckBinary("Less", Make<uint64_t>({2}, {1, ~0ull}), Make<uint64_t>({1}, {2}), Make<bool>({2}, {true, false}));
  OpTester max("Max", 13);
  max.Input("a", Make<uint64_t>({2}, {1, ~0ull})).Input("b", Make<uint64_t>({1}, {5}));
  max.Output("m", Make<uint64_t>({2}, {5, ~0ull}));
  max.Run();
  OpTester min("Min", 13);
  min.Input("a", Make<int16_t>({2}, {-300, 7})).Input("b", Make<int16_t>({2}, {4, 4}));
  min.Output("m", Make<int16_t>({2}, {-300, 4}));
  min.Run();
  CheckBinary("Pow", Make<float>({2}, {2, 3}), Make<uint32_t>({2}, {3, 2}), Make<float>({2}, {8, 9}), 15);
}

TEST(ElementwiseTest, EqualComparesStrings) {
  CheckBinary("Equal", Make<std::string>({3}, {"a", "bc", ""}), Make<std::string>({3}, {"a", "b", ""}),
              Make<bool>({3}, {true, false, true}), 19);
}

TEST(ElementwiseTest, ShrinkFloatsAndIntegers) {
  OpTester soft("Shrink", 9);
  soft.Attr("lambd", 1.5f).Attr("bias", 1.5f);
  soft.Input("input", Make<float>({5}, {-2, -1, 0, 1, 2})).Output("output", Make<float>({5}, {-0.5f, 0, 0, 0, 0.5f}));
  soft.Run();
  OpTester hard("Shrink", 9);
  hard.Attr("lambd", 1.5f);
  hard.Input("input", Make<int32_t>({5}, {-2, -1, 0, 1, 2})).Output("output", Make<int32_t>({5}, {-2, 0, 0, 0, 2}));
  hard.Run();
}

// Before opset 7, B broadcasts to A only with broadcast = 1, aligned at `axis` or at A's last dims.
TEST(ElementwiseTest, LegacyBroadcastAttributesBeforeOpset7) {
  const Tensor a = RandomTensor(DataType::kFloat, {2, 3, 4}, 31);
  const Tensor row = RandomTensor(DataType::kFloat, {4}, 32);
  OpTester suffix("Add", 6);
  suffix.Attr("broadcast", int64_t{1}).Input("A", a).Input("B", row);
  suffix.Output("C", Reference<float, float, float>(a, row, std::plus<float>()));
  suffix.Run();
  const Tensor channel = Make<float>({3}, {10, 20, 30});
  OpTester axis("Mul", 6);
  axis.Attr("broadcast", int64_t{1}).Attr("axis", int64_t{1}).Input("A", a).Input("B", channel);
  axis.Output("C", Reference<float, float, float>(a, channel.Reshaped({3, 1}), std::multiplies<float>()));
  axis.Run();
  OpTester scalar("Sub", 1);
  scalar.Attr("broadcast", int64_t{1}).Attr("consumed_inputs", std::vector<int64_t>{0, 0});
  scalar.Input("A", a).Input("B", Make<float>({1}, {1}));
  scalar.Output("C", Reference<float, float, float>(a, Make<float>({}, {1}), std::minus<float>()));
  scalar.Run();
  OpTester pow("Pow", 1);
  pow.Attr("broadcast", int64_t{1}).Input("X", Make<float>({2, 2}, {1, 2, 3, 4})).Input("Y", Make<float>({2}, {2, 1}));
  pow.Output("Z", Make<float>({2, 2}, {1, 2, 9, 4}));
  pow.Run();
  OpTester unflagged("Add", 6);
  unflagged.Input("A", a).Input("B", row).OutputName("C").ExpectFailure("broadcast");
  unflagged.Run({"cpu"});
  OpTester mismatched("Add", 6);
  mismatched.Attr("broadcast", int64_t{1}).Attr("axis", int64_t{0}).Input("A", a).Input("B", row);
  mismatched.OutputName("C").ExpectFailure("axis 0");
  mismatched.Run({"cpu"});
}

TEST(BroadcastPlanTest, CollapsesToOneContiguousInnerRun) {
  const Shape out{8, 3, 16, 16};
  const Shape bias{3, 1, 1};
  const cpu::BroadcastPlan<2> plan(out, {&out, &bias});
  EXPECT_EQ(plan.size(), 8 * 3 * 16 * 16);
  EXPECT_EQ(plan.inner_stride(0), 1);
  EXPECT_EQ(plan.inner_stride(1), 0);
  int64_t spans = 0;
  plan.ForEachSpan(0, plan.size(), [&](int64_t o, const std::array<int64_t, 2>& in, int64_t n) {
    EXPECT_EQ(n, 256);                 // H*W merged into one run
    EXPECT_EQ(in[0], o);               // the full operand follows the output
    EXPECT_EQ(in[1], (o / 256) % 3);   // the bias advances once per run
    ++spans;
  });
  EXPECT_EQ(spans, 8 * 3);
}

TEST(BroadcastPlanTest, SpansStartAndEndInsideRows) {
  const Shape out{4, 5};
  const Shape column{4, 1};
  const cpu::BroadcastPlan<2> plan(out, {&out, &column});
  std::vector<std::array<int64_t, 4>> seen;
  plan.ForEachSpan(3, 12, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t n) {
    seen.push_back({o, in[0], in[1], n});
  });
  const std::vector<std::array<int64_t, 4>> expected = {{3, 3, 0, 2}, {5, 5, 1, 5}, {10, 10, 2, 2}};
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace tessera::test
