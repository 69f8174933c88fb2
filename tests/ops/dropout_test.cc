// Dropout: inference passes data through; training mode drops and rescales with a repeatable seed.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

Tensor AllTrue(const Shape& shape) { return Make<bool>(shape, std::vector<bool>(shape.NumElements(), true)); }

TEST(DropoutTest, InferencePassesDataThroughWithFullMask) {
  const Tensor x = RandomTensor(DataType::kFloat, {3, 4}, 51);
  for (int opset : {7, 10, 12, 13}) {
    SCOPED_TRACE(opset);
    OpTester t("Dropout", opset);
    t.Input("data", x).Output("output", x);
    if (opset >= 10) t.Output("mask", AllTrue(x.shape()));
    t.Run();
  }
  // Before opset 10 the mask has the data's type.
  OpTester typed_mask("Dropout", 7);
  typed_mask.Input("data", x).Output("output", x);
  typed_mask.Output("mask", Make<float>(x.shape(), std::vector<float>(x.NumElements(), 1.0f)));
  typed_mask.Run();
  OpTester legacy("Dropout", 6);
  legacy.Attr("is_test", int64_t{0}).Attr("ratio", 0.3f).Input("data", x).Output("output", x);
  legacy.Run();
  OpTester not_training("Dropout", 13);
  not_training.Input("data", x).Input("ratio", Make<float>({}, {0.7f})).Input("training_mode", Make<bool>({}, {false}));
  not_training.Output("output", x).Output("mask", AllTrue(x.shape()));
  not_training.Run();
}

TEST(DropoutTest, TrainingDropsAboutRatioAndScalesTheRest) {
  const Tensor x = RandomTensor(DataType::kFloat, {200, 100}, 52, 1.0, 2.0);
  auto run = [&] {
    OpTester t("Dropout", 13);
    t.Attr("seed", int64_t{7}).Input("data", x).Input("ratio", Make<float>({}, {0.25f}));
    t.Input("training_mode", Make<bool>({}, {true})).OutputName("output").OutputName("mask");
    return t.RunOn("cpu");
  };
  const std::vector<Tensor> first = run();
  int64_t kept = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const bool keep = first[1].Data<bool>()[i];
    kept += keep;
    const float expected = keep ? x.Data<float>()[i] / 0.75f : 0.0f;
    ASSERT_NEAR(first[0].Data<float>()[i], expected, 1e-6f) << i;
  }
  EXPECT_NEAR(static_cast<double>(kept) / x.NumElements(), 0.75, 0.01);
  const std::vector<Tensor> second = run();
  EXPECT_EQ(first[1].ToVector<bool>(), second[1].ToVector<bool>());
}

TEST(DropoutTest, ZeroRatioTrainingIsIdentityAndBadRatioFails) {
  const Tensor x = RandomTensor(DataType::kFloat, {5}, 53);
  OpTester zero("Dropout", 13);
  zero.Input("data", x).Input("ratio", Make<float>({}, {0.0f})).Input("training_mode", Make<bool>({}, {true}));
  zero.Output("output", x).Output("mask", AllTrue(x.shape()));
  zero.Run();
  OpTester bad("Dropout", 13);
  bad.Input("data", x).Input("ratio", Make<float>({}, {1.0f})).Input("training_mode", Make<bool>({}, {true}));
  bad.OutputName("output").ExpectFailure("ratio");
  bad.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
