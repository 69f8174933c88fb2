// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against a reference written out in double.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

// Input [N=2, C=3, D=2] as float, labels [2, 2].
const Tensor& Scores() {
  static const Tensor scores = RandomTensor(DataType::kFloat, {2, 3, 2}, 41, -2.0, 2.0);
  return scores;
}
const Tensor& Labels() {
  static const Tensor labels = Make<int64_t>({2, 2}, {0, 2, 1, 2});
  return labels;
}
const std::vector<float> kWeights = {0.5f, 1.0f, 2.0f};

// log_softmax over the class axis of Scores(), in double.
std::vector<double> LogSoftmax(const Tensor& x) {
  std::vector<double> out(12);
  for (int n = 0; n < 2; ++n) {
    for (int d = 0; d < 2; ++d) {
      double sum = 0;
      for (int c = 0; c < 3; ++c) sum += std::exp(x.Data<float>()[(n * 3 + c) * 2 + d]);
      for (int c = 0; c < 3; ++c) out[(n * 3 + c) * 2 + d] = x.Data<float>()[(n * 3 + c) * 2 + d] - std::log(sum);
    }
  }
  return out;
}

// The expected loss for `reduction` from log-probabilities, with optional weights and ignored label.
Tensor ExpectedLoss(const std::vector<double>& log_prob, const std::string& reduction, bool weighted,
                    std::optional<int64_t> ignore) {
  std::vector<float> losses(4);
  double total = 0, weight_sum = 0;
  for (int n = 0; n < 2; ++n) {
    for (int d = 0; d < 2; ++d) {
      const int64_t label = Labels().Data<int64_t>()[n * 2 + d];
      if (ignore && label == *ignore) continue;
      const double w = weighted ? kWeights[label] : 1.0;
      losses[n * 2 + d] = static_cast<float>(-w * log_prob[(n * 3 + label) * 2 + d]);
      total += losses[n * 2 + d];
      weight_sum += w;
    }
  }
  if (reduction == "none") return Make<float>({2, 2}, losses);
  return Make<float>({}, {static_cast<float>(reduction == "sum" ? total : total / weight_sum)});
}

TEST(LossesTest, NegativeLogLikelihoodAllReductionsWeightsAndIgnoreIndex) {
  std::vector<double> input(12);
  for (int i = 0; i < 12; ++i) input[i] = Scores().Data<float>()[i];
  for (const std::string reduction : {"none", "sum", "mean"}) {
    for (bool weighted : {false, true}) {
      for (std::optional<int64_t> ignore : {std::optional<int64_t>(), std::optional<int64_t>(2)}) {
        SCOPED_TRACE(reduction + (weighted ? " weighted" : "") + (ignore ? " ignore 2" : ""));
        OpTester t("NegativeLogLikelihoodLoss", 13);
        t.Attr("reduction", reduction).Input("input", Scores()).Input("target", Labels());
        if (ignore) t.Attr("ignore_index", *ignore);
        if (weighted) t.Input("weight", Make<float>({3}, kWeights));
        t.Output("loss", ExpectedLoss(input, reduction, weighted, ignore)).Tolerance(1e-5, 1e-5);
        t.Run();
      }
    }
  }
}

TEST(LossesTest, SoftmaxCrossEntropyWithLogProbOutput) {
  const std::vector<double> log_prob = LogSoftmax(Scores());
  std::vector<float> log_prob_f(log_prob.begin(), log_prob.end());
  for (const std::string reduction : {"none", "mean"}) {
    SCOPED_TRACE(reduction);
    OpTester t("SoftmaxCrossEntropyLoss", 13);
    t.Attr("reduction", reduction).Input("scores", Scores()).Input("labels", Labels().Reshaped({2, 2}));
    t.Input("weights", Make<float>({3}, kWeights));
    t.Output("output", ExpectedLoss(log_prob, reduction, true, std::nullopt));
    t.Output("log_prob", Make<float>({2, 3, 2}, log_prob_f)).Tolerance(1e-5, 1e-5);
    t.Run();
  }
  OpTester defaults("SoftmaxCrossEntropyLoss", 13);
  defaults.Input("scores", Scores()).Input("labels", Labels());
  defaults.Output("output", ExpectedLoss(log_prob, "mean", false, std::nullopt)).Tolerance(1e-5, 1e-5);
  defaults.Run();
}

TEST(LossesTest, OutOfRangeTargetAndBadShapesFail) {
  OpTester range("NegativeLogLikelihoodLoss", 13);
  range.Input("input", Scores()).Input("target", Make<int64_t>({2, 2}, {0, 3, 1, 1})).OutputName("loss");
  range.ExpectFailure("target value 3");
  range.Run({"cpu"});
  OpTester shape("SoftmaxCrossEntropyLoss", 13);
  shape.Input("scores", Scores()).Input("labels", Make<int64_t>({2, 3}, {0, 0, 0, 0, 0, 0})).OutputName("output");
  shape.ExpectFailure("does not match");
  shape.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
