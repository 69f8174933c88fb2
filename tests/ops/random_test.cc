// Random generators: shapes, types, sample statistics of large draws, and repeatability with a seed.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

struct Moments {
  double mean = 0, variance = 0;
};

template <typename T>
Moments MomentsOf(const Tensor& t) {
  Moments m;
  for (T v : t.Span<T>()) m.mean += static_cast<double>(v);
  m.mean /= static_cast<double>(t.NumElements());
  for (T v : t.Span<T>()) m.variance += (static_cast<double>(v) - m.mean) * (static_cast<double>(v) - m.mean);
  m.variance /= static_cast<double>(t.NumElements());
  return m;
}

Tensor RunGenerator(OpTester t) { return t.OutputName("output").RunOn("cpu")[0]; }

TEST(RandomTest, UniformHasTheRangeMeanAndVarianceOfItsBounds) {
  OpTester t("RandomUniform", 1);
  t.Attr("shape", std::vector<int64_t>{400, 250}).Attr("low", -1.0f).Attr("high", 3.0f).Attr("seed", 5.0f);
  const Tensor y = RunGenerator(t);
  ASSERT_EQ(y.type(), DataType::kFloat);
  ASSERT_EQ(y.shape(), (Shape{400, 250}));
  for (float v : y.Span<float>()) ASSERT_TRUE(v >= -1.0f && v < 3.0f) << v;
  const Moments m = MomentsOf<float>(y);
  EXPECT_NEAR(m.mean, 1.0, 0.02);
  EXPECT_NEAR(m.variance, 16.0 / 12.0, 0.02);
}

TEST(RandomTest, NormalHasItsMeanAndScale) {
  OpTester t("RandomNormal", 1);
  t.Attr("shape", std::vector<int64_t>{100000}).Attr("mean", 2.0f).Attr("scale", 0.5f).Attr("seed", 1.0f);
  t.Attr("dtype", int64_t{11});
  const Tensor y = RunGenerator(t);
  ASSERT_EQ(y.type(), DataType::kDouble);
  const Moments m = MomentsOf<double>(y);
  EXPECT_NEAR(m.mean, 2.0, 0.01);
  EXPECT_NEAR(m.variance, 0.25, 0.01);
}

TEST(RandomTest, LikeFormsTakeShapeAndTypeFromTheirInput) {
  OpTester uniform("RandomUniformLike", 1);
  uniform.Input("input", RandomTensor(DataType::kDouble, {3, 7}, 61));
  const Tensor u = RunGenerator(uniform);
  EXPECT_EQ(u.type(), DataType::kDouble);
  EXPECT_EQ(u.shape(), (Shape{3, 7}));
  OpTester normal("RandomNormalLike", 1);
  normal.Attr("dtype", int64_t{1}).Input("input", RandomTensor(DataType::kInt32, {2, 5}, 62, 0, 10));
  const Tensor n = RunGenerator(normal);
  EXPECT_EQ(n.type(), DataType::kFloat);
  EXPECT_EQ(n.shape(), (Shape{2, 5}));
}

TEST(RandomTest, SeededOpsRepeatAndUnseededOnesDoNot) {
  auto draw = [](bool seeded) {
    OpTester t("RandomUniform", 1);
    t.Attr("shape", std::vector<int64_t>{64});
    if (seeded) t.Attr("seed", 3.0f);
    return RunGenerator(t).ToVector<float>();
  };
  EXPECT_EQ(draw(true), draw(true));
  EXPECT_NE(draw(false), draw(false));
}

TEST(RandomTest, BernoulliFollowsItsProbabilities) {
  std::vector<float> p(30000);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i % 3 == 0 ? 0.0f : (i % 3 == 1 ? 1.0f : 0.3f);
  OpTester t("Bernoulli", 15);
  t.Attr("seed", 9.0f).Input("input", Make<float>({30000}, p));
  const Tensor y = RunGenerator(t);
  ASSERT_EQ(y.type(), DataType::kFloat);
  double ones_at_p = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const float v = y.Data<float>()[i];
    if (i % 3 == 2) {
      ones_at_p += v;
    } else {
      ASSERT_EQ(v, i % 3 == 0 ? 0.0f : 1.0f) << i;
    }
  }
  EXPECT_NEAR(ones_at_p / 10000, 0.3, 0.02);
  OpTester as_bool("Bernoulli", 15);
  as_bool.Attr("dtype", int64_t{9}).Input("input", Make<double>({2}, {0.0, 1.0}));
  as_bool.Output("output", Make<bool>({2}, {false, true}));
  as_bool.Run({"cpu"});
}

TEST(RandomTest, MultinomialSamplesFromTheSoftmaxOfItsInput) {
  OpTester t("Multinomial", 7);
  t.Attr("sample_size", int64_t{20000}).Attr("seed", 4.0f).Attr("dtype", int64_t{7});
  t.Input("input", Make<float>({2, 3}, {std::log(0.2f), std::log(0.8f), -INFINITY, 0.0f, -INFINITY, -INFINITY}));
  const Tensor y = RunGenerator(t);
  ASSERT_EQ(y.shape(), (Shape{2, 20000}));
  double ones = 0;
  for (int64_t s = 0; s < 20000; ++s) {
    const int64_t first = y.Data<int64_t>()[s];
    ASSERT_TRUE(first == 0 || first == 1) << first;
    ones += first;
    ASSERT_EQ(y.Data<int64_t>()[20000 + s], 0);
  }
  EXPECT_NEAR(ones / 20000, 0.8, 0.015);
}

}  // namespace
}  // namespace tessera::test
