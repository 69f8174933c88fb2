#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessera/data_type.h"
#include "tessera/shape.h"
#include "tessera/status.h"

namespace tessera {
namespace {

TEST(DataTypeTest, SizesAndNames) {
  EXPECT_EQ(SizeOf(DataType::kFloat), 4u);
  EXPECT_EQ(SizeOf(DataType::kBFloat16), 2u);
  EXPECT_EQ(SizeOf(DataType::kBool), 1u);
  EXPECT_EQ(SizeOf(DataType::kComplex128), 16u);
  EXPECT_STREQ(DataTypeName(DataType::kInt64), "int64");
  EXPECT_THROW(SizeOf(DataType::kUndefined), Error);
  EXPECT_TRUE(IsKnownDataType(16));
  EXPECT_FALSE(IsKnownDataType(17));
}

TEST(DataTypeTest, Float16RoundTripsEveryFiniteHalf) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const Float16 h{static_cast<uint16_t>(bits)};
    const float f = ToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(ToFloat(ToFloat16(f))));
      continue;
    }
    EXPECT_EQ(ToFloat16(f).bits, h.bits) << std::hex << bits;
  }
}

TEST(DataTypeTest, Float16RoundsToNearestEven) {
  EXPECT_EQ(ToFloat(ToFloat16(1.0f)), 1.0f);
  EXPECT_EQ(ToFloat(ToFloat16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(ToFloat(ToFloat16(65520.0f))));
  EXPECT_EQ(ToFloat(ToFloat16(1.0f + 1.0f / 2048.0f)), 1.0f);  // halfway: ties to even
  EXPECT_EQ(ToFloat(ToFloat16(1.0f + 3.0f / 2048.0f)), 1.0f + 2.0f / 1024.0f);
  EXPECT_EQ(ToFloat(ToFloat16(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(ToFloat(ToFloat16(-0.0f)), 0.0f);
  EXPECT_TRUE(std::signbit(ToFloat(ToFloat16(-0.0f))));
}

TEST(DataTypeTest, BFloat16) {
  EXPECT_EQ(ToFloat(ToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(ToFloat(ToBFloat16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(ToFloat(ToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_NEAR(ToFloat(ToBFloat16(3.14159f)), 3.14159f, 0.02f);
}

TEST(ShapeTest, CountsAndErrors) {
  EXPECT_EQ(Shape({2, 3, 4}).NumElements(), 24);
  EXPECT_EQ(Shape().NumElements(), 1);
  EXPECT_EQ(Shape({2, 0, 4}).NumElements(), 0);
  EXPECT_EQ(Shape({2, 3, 4}).SizeFrom(1), 12);
  EXPECT_EQ(Shape({2, 3, 4}).SizeTo(2), 6);
  EXPECT_EQ(Shape({1, 3}).ToString(), "[1,3]");
  EXPECT_THROW(Shape({-1, 3}).NumElements(), Error);
  EXPECT_THROW(Shape({int64_t{1} << 40, int64_t{1} << 40}).NumElements(), Error);
  EXPECT_EQ(NormalizeAxis(-1, 4), 3);
  EXPECT_THROW(NormalizeAxis(4, 4), Error);
}

}  // namespace
}  // namespace tessera
