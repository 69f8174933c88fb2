// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Expand, ConstantOfShape, Constant, Range,
// EyeLike: expected values written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;

Tensor F(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor I64(Shape shape, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }
Tensor I32(Shape shape, const std::vector<int32_t>& v) { return Tensor::FromVector<int32_t>(std::move(shape), v); }
Tensor Str(Shape shape, const std::vector<std::string>& v) {
  return Tensor::FromVector<std::string>(std::move(shape), v);
}
// 0, 1, 2, ... as floats.
Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return F(std::move(shape), v);
}
Tensor Vec(const Ints& v) { return I64(Shape{static_cast<int64_t>(v.size())}, v); }

TEST(ShapeOpsTest, ShapeWholeAndSliced) {
  OpTester("Shape", 13).Input("x", Iota({2, 3, 4})).Output("y", Vec({2, 3, 4})).Run();
  OpTester("Shape", 15).Attr("start", int64_t{-1}).Input("x", Iota({2, 3, 4})).Output("y", Vec({4})).Run();
  OpTester("Shape", 15).Attr("end", int64_t{-1}).Input("x", Iota({2, 3, 4})).Output("y", Vec({2, 3})).Run();
  OpTester("Shape", 15)
      .Attr("start", int64_t{1})
      .Attr("end", int64_t{2})
      .Input("x", Iota({2, 3, 4}))
      .Output("y", Vec({3}))
      .Run();
  // Out-of-range bounds clamp.
  OpTester("Shape", 15)
      .Attr("start", int64_t{-10})
      .Attr("end", int64_t{10})
      .Input("x", Iota({2, 3, 4}))
      .Output("y", Vec({2, 3, 4}))
      .Run();
  OpTester("Shape", 15).Input("x", F({}, {1.0f})).Output("y", Vec({})).Run();
}

TEST(ShapeOpsTest, Size) {
  OpTester("Size", 13).Input("x", Iota({2, 3, 4})).Output("y", I64({}, {24})).Run();
  OpTester("Size", 13).Input("x", F({0, 3}, {})).Output("y", I64({}, {0})).Run();
}

TEST(ShapeOpsTest, ReshapeInfersMinusOneAndCopiesZero) {
  OpTester("Reshape", 14).Input("x", Iota({2, 3, 4})).Input("s", Vec({0, -1})).Output("y", Iota({2, 12})).Run();
  OpTester("Reshape", 14).Input("x", Iota({2, 3, 4})).Input("s", Vec({-1, 2, 2})).Output("y", Iota({6, 2, 2})).Run();
  OpTester("Reshape", 13).Input("x", Iota({1})).Input("s", Vec({}), true).Output("y", Iota({})).Run();
}

TEST(ShapeOpsTest, ReshapeAllowZeroKeepsZeroDims) {
  OpTester("Reshape", 14)
      .Attr("allowzero", int64_t{1})
      .Input("x", F({0, 3}, {}))
      .Input("s", Vec({3, 0}))
      .Output("y", F({3, 0}, {}))
      .Run();
  // Without allowzero the 0 copies the input's dim 0 (3 here).
  OpTester("Reshape", 14).Input("x", Iota({3, 2})).Input("s", Vec({0, 2})).Output("y", Iota({3, 2})).Run();
}

TEST(ShapeOpsTest, ReshapeStrings) {
  OpTester("Reshape", 14)
      .Input("x", Str({2, 2}, {"a", "b", "c", "d"}))
      .Input("s", Vec({4}))
      .Output("y", Str({4}, {"a", "b", "c", "d"}))
      .Run({"cpu"});
}

TEST(ShapeOpsTest, ReshapeErrorsNameTheNode) {
  OpTester("Reshape", 14)
      .Input("x", Iota({2, 3}))
      .Input("s", Vec({4, 2}))
      .Output("y", Iota({4, 2}))
      .ExpectFailure("Reshape_node")
      .Run({"cpu"});
  OpTester("Reshape", 14)
      .Input("x", Iota({2, 3}))
      .Input("s", Vec({-1, -1}))
      .Output("y", Iota({6}))
      .ExpectFailure("more than one -1")
      .Run({"cpu"});
  OpTester("Reshape", 14)
      .Attr("allowzero", int64_t{1})
      .Input("x", F({0, 3}, {}))
      .Input("s", Vec({0, -1}))
      .Output("y", F({0, 3}, {}))
      .ExpectFailure("allowzero")
      .Run({"cpu"});
}

TEST(ShapeOpsTest, Flatten) {
  OpTester("Flatten", 13).Input("x", Iota({2, 3, 4})).Output("y", Iota({2, 12})).Run();
  OpTester("Flatten", 13).Attr("axis", int64_t{0}).Input("x", Iota({2, 3, 4})).Output("y", Iota({1, 24})).Run();
  OpTester("Flatten", 13).Attr("axis", int64_t{-1}).Input("x", Iota({2, 3, 4})).Output("y", Iota({6, 4})).Run();
  OpTester("Flatten", 13).Attr("axis", int64_t{3}).Input("x", Iota({2, 3, 4})).Output("y", Iota({24, 1})).Run();
  OpTester("Flatten", 13)
      .Attr("axis", int64_t{4})
      .Input("x", Iota({2, 3, 4}))
      .Output("y", Iota({24, 1}))
      .ExpectFailure("out of range")
      .Run({"cpu"});
}

TEST(ShapeOpsTest, SqueezeWithAttributeInputAndDefault) {
  OpTester("Squeeze", 11).Attr("axes", Ints{0, -1}).Input("x", Iota({1, 3, 1})).Output("y", Iota({3})).Run();
  OpTester("Squeeze", 13).Input("x", Iota({1, 3, 1})).Input("a", Vec({-1})).Output("y", Iota({1, 3})).Run();
  OpTester("Squeeze", 13).Input("x", Iota({1, 3, 1, 2})).Output("y", Iota({3, 2})).Run();
  OpTester("Squeeze", 13).Input("x", Iota({1, 1})).Output("y", Iota({})).Run();
  OpTester("Squeeze", 13)
      .Input("x", Iota({1, 3}))
      .Input("a", Vec({1}))
      .Output("y", Iota({3}))
      .ExpectFailure("cannot squeeze axis 1")
      .Run({"cpu"});
}

TEST(ShapeOpsTest, UnsqueezeWithAttributeAndInput) {
  OpTester("Unsqueeze", 11).Attr("axes", Ints{0, 3}).Input("x", Iota({3, 4})).Output("y", Iota({1, 3, 4, 1})).Run();
  OpTester("Unsqueeze", 13).Input("x", Iota({3, 4})).Input("a", Vec({-1, 0})).Output("y", Iota({1, 3, 4, 1})).Run();
  OpTester("Unsqueeze", 13).Input("x", Iota({})).Input("a", Vec({0})).Output("y", Iota({1})).Run();
  OpTester("Unsqueeze", 13)
      .Input("x", Iota({3}))
      .Input("a", Vec({0, -3}))
      .Output("y", Iota({1, 1, 3}))
      .ExpectFailure("twice")
      .Run({"cpu"});
}

TEST(ShapeOpsTest, IdentityPassesTensorsThrough) {
  OpTester("Identity", 16).Input("x", Iota({2, 3})).Output("y", Iota({2, 3})).Run();
  OpTester("Identity", 16).Input("x", Str({2}, {"p", "q"})).Output("y", Str({2}, {"p", "q"})).Run({"cpu"});
}

TEST(ShapeOpsTest, ExpandBroadcastsBothWays) {
  // [3,1] -> [2,3,4]: rows repeat across the new leading dim and the last dim.
  std::vector<float> expected;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) expected.push_back(static_cast<float>(r));
  OpTester("Expand", 13).Input("x", Iota({3, 1})).Input("s", Vec({2, 1, 4})).Output("y", F({2, 3, 4}, expected)).Run();
  // A target of lower rank with ones keeps the input's dims.
  OpTester("Expand", 13)
      .Input("x", Iota({2, 1}))
      .Input("s", Vec({3}))
      .Output("y", F({2, 3}, {0, 0, 0, 1, 1, 1}))
      .Run();
  OpTester("Expand", 13).Input("x", Iota({2, 3})).Input("s", Vec({1, 1})).Output("y", Iota({2, 3})).Run();
  OpTester("Expand", 13).Input("x", F({}, {7})).Input("s", Vec({2, 0})).Output("y", F({2, 0}, {})).Run();
  OpTester("Expand", 13)
      .Input("x", Iota({2, 3}))
      .Input("s", Vec({4, 3}))
      .Output("y", Iota({4, 3}))
      .ExpectFailure("cannot expand")
      .Run({"cpu"});
}

TEST(ShapeOpsTest, ConstantOfShape) {
  OpTester("ConstantOfShape", 9)
      .Attr("value", I32({1}, {5}))
      .Input("s", Vec({2, 3}))
      .Output("y", I32({2, 3}, {5, 5, 5, 5, 5, 5}))
      .Run();
  OpTester("ConstantOfShape", 9).Input("s", Vec({3})).Output("y", F({3}, {0, 0, 0})).Run();
  OpTester("ConstantOfShape", 9).Attr("value", F({1}, {2.5f})).Input("s", Vec({}), true).Output("y", F({}, {2.5f})).Run();
  OpTester("ConstantOfShape", 9).Input("s", Vec({0, 4})).Output("y", F({0, 4}, {})).Run();
}

TEST(ShapeOpsTest, ConstantFromEachValueAttribute) {
  OpTester("Constant", 13).Attr("value", Iota({2, 2})).Output("y", Iota({2, 2})).Run();
  OpTester("Constant", 13).Attr("value_float", 1.5f).Output("y", F({}, {1.5f})).Run();
  OpTester("Constant", 13).Attr("value_floats", std::vector<float>{1, 2}).Output("y", F({2}, {1, 2})).Run();
  OpTester("Constant", 13).Attr("value_int", int64_t{-3}).Output("y", I64({}, {-3})).Run();
  OpTester("Constant", 13).Attr("value_ints", Ints{4, 5, 6}).Output("y", Vec({4, 5, 6})).Run();
  OpTester("Constant", 13).Attr("value_string", std::string("hi")).Output("y", Str({}, {"hi"})).Run({"cpu"});
}

// Range-27: float16 and bfloat16, computed in float (stash_type 1, the default) or in the type's own arithmetic.
TEST(ShapeOpsTest, RangeInHalfTypesWithStashType) {
  auto half = [](std::vector<float> v) {
    Tensor t = Tensor::Allocate(DataType::kFloat16, Shape{static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.Data<Float16>()[i] = ToFloat16(v[i]);
    return t;
  };
  auto scalar = [&](float v) { return half({v}).Reshaped(Shape{}); };
  // 2048 + i: exact in float, and float16 steps of 2 above 2048 round 2049 to 2048 (ties to even) and 2051 to 2052.
  OpTester("Range", 27)
      .Input("a", scalar(2048)).Input("b", scalar(2052)).Input("c", scalar(1))
      .Output("y", half({2048, 2049, 2050, 2051}))
      .Run({"cpu"});
  OpTester("Range", 27)
      .Attr("stash_type", int64_t{10})
      .Input("a", scalar(0.5f)).Input("b", scalar(2.0f)).Input("c", scalar(0.5f))
      .Output("y", half({0.5f, 1.0f, 1.5f}))
      .Run({"cpu"});
  OpTester bad("Range", 27);
  bad.Attr("stash_type", int64_t{11}).Input("a", scalar(0)).Input("b", scalar(2)).Input("c", scalar(1));
  bad.OutputName("y").ExpectFailure("stash_type");
  bad.Run({"cpu"});
}

TEST(ShapeOpsTest, Range) {
  OpTester("Range", 11)
      .Input("a", I64({}, {10}))
      .Input("b", I64({}, {4}))
      .Input("c", I64({}, {-2}))
      .Output("y", Vec({10, 8, 6}))
      .Run();
  OpTester("Range", 11)
      .Input("a", I32({}, {3}))
      .Input("b", I32({}, {9}))
      .Input("c", I32({}, {3}))
      .Output("y", I32({2}, {3, 6}))
      .Run();
  OpTester("Range", 11)
      .Input("a", I32({}, {0}))
      .Input("b", I32({}, {7}))
      .Input("c", I32({}, {3}))
      .Output("y", I32({3}, {0, 3, 6}))
      .Run();
  OpTester("Range", 11)
      .Input("a", F({}, {0.0f}))
      .Input("b", F({}, {1.0f}))
      .Input("c", F({}, {0.3f}))
      .Output("y", F({4}, {0.0f, 0.3f, 0.6f, 0.9f}))
      .Tolerance(1e-6, 1e-6)
      .Run();
  OpTester("Range", 11)
      .Input("a", I64({}, {5}))
      .Input("b", I64({}, {5}))
      .Input("c", I64({}, {1}))
      .Output("y", Vec({}))
      .Run();
}

TEST(ShapeOpsTest, EyeLike) {
  OpTester("EyeLike", 9)
      .Attr("k", int64_t{1})
      .Input("x", Iota({3, 4}))
      .Output("y", F({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}))
      .Run();
  OpTester("EyeLike", 9)
      .Attr("k", int64_t{-1})
      .Attr("dtype", int64_t{7})
      .Input("x", Iota({3, 2}))
      .Output("y", I64({3, 2}, {0, 0, 1, 0, 0, 1}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
