// Cast and CastLike between numeric types, bool, 16-bit floats and strings.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

void CheckCast(const Tensor& x, const Tensor& expected, int opset = 13) {
  SCOPED_TRACE(std::string(DataTypeName(x.type())) + " -> " + DataTypeName(expected.type()));
  OpTester t("Cast", opset);
  t.Attr("to", static_cast<int64_t>(expected.type())).Input("input", x).Output("output", expected);
  t.Run();
}

TEST(CastTest, FloatToIntegersTruncatesTowardZero) {
  const Tensor x = Make<float>({2, 3}, {1.9f, -1.9f, 0.0f, 100.5f, -7.0f, 3.0f});
  CheckCast(x, Make<int32_t>({2, 3}, {1, -1, 0, 100, -7, 3}));
  CheckCast(x, Make<int64_t>({2, 3}, {1, -1, 0, 100, -7, 3}));
  CheckCast(x, Make<int8_t>({2, 3}, {1, -1, 0, 100, -7, 3}));
  CheckCast(x, Make<int16_t>({2, 3}, {1, -1, 0, 100, -7, 3}));
  CheckCast(Make<float>({3}, {0.5f, 200.9f, 255.0f}), Make<uint8_t>({3}, {0, 200, 255}));
}

TEST(CastTest, IntegersToFloatsAndBetweenIntegers) {
  const Tensor x = Make<int64_t>({4}, {-3, 0, 7, 1 << 20});
  CheckCast(x, Make<float>({4}, {-3, 0, 7, 1 << 20}));
  CheckCast(x, Make<double>({4}, {-3, 0, 7, 1 << 20}));
  CheckCast(x, Make<int32_t>({4}, {-3, 0, 7, 1 << 20}));
  CheckCast(Make<int32_t>({2}, {300, -1}), Make<uint8_t>({2}, {44, 255}));  // wraps modulo 256
  CheckCast(Make<uint32_t>({2}, {4000000000u, 5}), Make<uint64_t>({2}, {4000000000ull, 5}));
}

// BitCast (opset 26): the same bytes as another type of the same width; other widths fail by name.
TEST(CastTest, BitCastKeepsTheBits) {
  OpTester("BitCast", 26)
      .Attr("to", int64_t{static_cast<int64_t>(DataType::kInt32)})
      .Input("x", Tensor::FromVector<float>({3}, {1.0f, -2.0f, 0.0f}))
      .Output("y", Tensor::FromVector<int32_t>({3}, {0x3f800000, static_cast<int32_t>(0xc0000000u), 0}))
      .Run({"cpu"});
  OpTester("BitCast", 26)
      .Attr("to", int64_t{static_cast<int64_t>(DataType::kUInt8)})
      .Input("x", Tensor::FromVector<int8_t>({2, 2}, {-1, 1, -128, 127}))
      .Output("y", Tensor::FromVector<uint8_t>({2, 2}, {255, 1, 128, 127}))
      .Run({"cpu"});
  OpTester widths("BitCast", 26);
  widths.Attr("to", int64_t{static_cast<int64_t>(DataType::kInt64)}).Input("x", Tensor::FromVector<float>({1}, {1}));
  widths.OutputName("y").ExpectFailure("the widths must match");
  widths.Run({"cpu"});
  OpTester unknown("BitCast", 26);
  unknown.Attr("to", int64_t{17}).Input("x", Tensor::FromVector<uint8_t>({1}, {1}));  // float8e4m3fn
  unknown.OutputName("y").ExpectFailure("unknown element type 17");
  unknown.Run({"cpu"});
}

TEST(CastTest, BoolConversions) {
  CheckCast(Make<float>({4}, {0.0f, 0.5f, -2.0f, 0.0f}), Make<bool>({4}, {false, true, true, false}));
  CheckCast(Make<int64_t>({3}, {0, 36, -1}), Make<bool>({3}, {false, true, true}));
  CheckCast(Make<bool>({2}, {true, false}), Make<float>({2}, {1.0f, 0.0f}));
  CheckCast(Make<bool>({2}, {true, false}), Make<int32_t>({2}, {1, 0}));
}

TEST(CastTest, SixteenBitFloats) {
  const Tensor x = Make<float>({4}, {1.0f, -2.5f, 0.099975586f, 65504.0f});
  CheckCast(x, Make<Float16>({4}, {ToFloat16(1.0f), ToFloat16(-2.5f), ToFloat16(0.099975586f), ToFloat16(65504.0f)}));
  CheckCast(Make<Float16>({2}, {ToFloat16(0.5f), ToFloat16(-3.0f)}), Make<double>({2}, {0.5, -3.0}));
  CheckCast(Make<BFloat16>({2}, {ToBFloat16(1.5f), ToBFloat16(-4.0f)}), Make<float>({2}, {1.5f, -4.0f}));
  CheckCast(Make<Float16>({2}, {ToFloat16(1.5f), ToFloat16(-4.0f)}), Make<BFloat16>({2}, {ToBFloat16(1.5f), ToBFloat16(-4.0f)}));
  CheckCast(Make<double>({1}, {2.25}), Make<BFloat16>({1}, {ToBFloat16(2.25f)}));
  CheckCast(Make<Float16>({2}, {ToFloat16(7.9f), ToFloat16(-7.9f)}), Make<int32_t>({2}, {7, -7}));
}

TEST(CastTest, NumbersToStrings) {
  const float inf = std::numeric_limits<float>::infinity();
  CheckCast(Make<float>({6}, {0.9767611f, 0.039187793f, -3.0f, 1e-5f, inf, -inf}),
            Make<std::string>({6}, {"0.9767611", "0.039187793", "-3", "1e-05", "INF", "-INF"}));
  CheckCast(Make<float>({1}, {std::numeric_limits<float>::quiet_NaN()}), Make<std::string>({1}, {"NaN"}));
  CheckCast(Make<int64_t>({2}, {-42, 1234567890123}), Make<std::string>({2}, {"-42", "1234567890123"}));
  CheckCast(Make<bool>({2}, {true, false}), Make<std::string>({2}, {"1", "0"}));
  CheckCast(Make<double>({1}, {0.1}), Make<std::string>({1}, {"0.1"}));
}

TEST(CastTest, StringsToNumbers) {
  const float inf = std::numeric_limits<float>::infinity();
  CheckCast(Make<std::string>({7}, {"3.14", "1e-5", "1E8", "-INF", "+inf", "INF", "-0.5"}),
            Make<float>({7}, {3.14f, 1e-5f, 1e8f, -inf, inf, inf, -0.5f}));
  OpTester nan("Cast", 13);
  nan.Attr("to", static_cast<int64_t>(DataType::kDouble));
  nan.Input("input", Make<std::string>({2}, {"NaN", "nan"}));
  nan.Output("output", Make<double>({2}, {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()}));
  nan.Run();
  CheckCast(Make<std::string>({3}, {"1000", "-7", "100.5"}), Make<int32_t>({3}, {1000, -7, 100}));
  CheckCast(Make<std::string>({1}, {"9007199254740993"}), Make<int64_t>({1}, {9007199254740993}));
  CheckCast(Make<std::string>({3}, {"1", "0", "true"}), Make<bool>({3}, {true, false, true}));
}

TEST(CastTest, UnparsableStringFailsNamingTheNodeAndValue) {
  OpTester t("Cast", 13);
  t.Attr("to", static_cast<int64_t>(DataType::kFloat)).Input("input", Make<std::string>({2}, {"1", "Hello"}));
  t.OutputName("output").ExpectFailure("'Hello'");
  t.Run({"cpu"});
}

TEST(CastTest, SameTypeAndLargeTensors) {
  const Tensor x = RandomTensor(DataType::kFloat, {300, 200}, 9, -1000, 1000);
  CheckCast(x, x);
  Tensor expected = Tensor::Allocate(DataType::kInt32, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) expected.Data<int32_t>()[i] = static_cast<int32_t>(x.Data<float>()[i]);
  CheckCast(x, expected, 19);
}

TEST(CastTest, UnsupportedTargetTypeFails) {
  OpTester t("Cast", 13);
  t.Attr("to", int64_t{14}).Input("input", Make<float>({1}, {1})).OutputName("output").ExpectFailure("Cast");
  t.Run({"cpu"});
}

TEST(CastTest, OpsetSixForm) { CheckCast(Make<int64_t>({2}, {3, -4}), Make<double>({2}, {3, -4}), 6); }

TEST(CastTest, CastLikeTakesTheTypeOfItsSecondInput) {
  OpTester t("CastLike", 15);
  t.Input("input", Make<float>({3}, {1.5f, -2.5f, 3.0f})).Input("target_type", Make<int64_t>({}, {0}));
  t.Output("output", Make<int64_t>({3}, {1, -2, 3}));
  t.Run();
  OpTester to_string("CastLike", 19);
  to_string.Input("input", Make<int32_t>({2}, {7, -8})).Input("like", Make<std::string>({1}, {""}), true);
  to_string.Output("output", Make<std::string>({2}, {"7", "-8"}));
  to_string.Run();
}

}  // namespace
}  // namespace tessera::test
