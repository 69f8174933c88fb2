// Optimizer steps of the ai.onnx.preview.training domain against their pseudo code, written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

constexpr char kDomain[] = "ai.onnx.preview.training";

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

TEST(TrainingTest, AdagradUpdatesTwoTensors) {
  const float r = 0.1f, decay = 0.1f, norm = 0.01f, epsilon = 1e-6f;
  const int64_t t = 2;
  const std::vector<float> x = {1.0f, -2.0f, 3.0f}, g = {-1.0f, 0.5f, 2.0f}, h = {2.0f, 1.0f, 0.5f};
  std::vector<float> x_new(3), h_new(3);
  for (int i = 0; i < 3; ++i) {
    const double rate = r / (1 + t * decay);
    const double gr = norm * x[i] + g[i];
    h_new[i] = static_cast<float>(h[i] + gr * gr);
    x_new[i] = static_cast<float>(x[i] - rate * gr / (std::sqrt(h[i] + gr * gr) + epsilon));
  }
  OpTester op("Adagrad", 1, kDomain);
  op.Attr("decay_factor", decay).Attr("norm_coefficient", norm).Attr("epsilon", epsilon);
  op.Input("R", Make<float>({}, {r})).Input("T", Make<int64_t>({}, {t}));
  op.Input("X1", Make<float>({1}, {x[0]})).Input("X2", Make<float>({2}, {x[1], x[2]}));
  op.Input("G1", Make<float>({1}, {g[0]})).Input("G2", Make<float>({2}, {g[1], g[2]}));
  op.Input("H1", Make<float>({1}, {h[0]})).Input("H2", Make<float>({2}, {h[1], h[2]}));
  op.Output("X1_new", Make<float>({1}, {x_new[0]})).Output("X2_new", Make<float>({2}, {x_new[1], x_new[2]}));
  op.Output("H1_new", Make<float>({1}, {h_new[0]})).Output("H2_new", Make<float>({2}, {h_new[1], h_new[2]}));
  op.Tolerance(1e-6, 1e-5).Run({"cpu"});
}

TEST(TrainingTest, MomentumStandardAndNesterov) {
  const double r = 0.1, alpha = 0.9, beta = 0.5, norm = 0.01;
  const double x = 1.5, g = -0.5, v = 0.25;
  for (const std::string mode : {"standard", "nesterov"}) {
    for (int64_t t : {0, 3}) {
      SCOPED_TRACE(mode + " T=" + std::to_string(t));
      const double gr = norm * x + g;
      const double v_new = alpha * v + (t > 0 ? beta : 1.0) * gr;
      const double x_new = x - r * (mode == "nesterov" ? gr + alpha * v_new : v_new);
      OpTester op("Momentum", 1, kDomain);
      op.Attr("alpha", float(alpha)).Attr("beta", float(beta)).Attr("norm_coefficient", float(norm)).Attr("mode", mode);
      op.Input("R", Make<double>({}, {r})).Input("T", Make<int64_t>({}, {t}));
      op.Input("X", Make<double>({1}, {x})).Input("G", Make<double>({1}, {g})).Input("V", Make<double>({1}, {v}));
      op.Output("X_new", Make<double>({1}, {x_new})).Output("V_new", Make<double>({1}, {v_new}));
      op.Tolerance(1e-7, 1e-6).Run({"cpu"});
    }
  }
}

TEST(TrainingTest, AdamWithBiasCorrectionAndPostRegularization) {
  const double r = 0.1, alpha = 0.9, beta = 0.99, norm = 0.01, post = 0.1, epsilon = 1e-6;
  const int64_t t = 4;
  const double x = 2.0, g = 0.5, v = 0.1, h = 0.2;
  const double gr = norm * x + g;
  const double v_new = alpha * v + (1 - alpha) * gr;
  const double h_new = beta * h + (1 - beta) * gr * gr;
  const double rate = r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
  const double x_new = (1 - post) * (x - rate * v_new / (std::sqrt(h_new) + epsilon));
  OpTester op("Adam", 1, kDomain);
  op.Attr("alpha", float(alpha)).Attr("beta", float(beta)).Attr("norm_coefficient", float(norm));
  op.Attr("norm_coefficient_post", float(post)).Attr("epsilon", float(epsilon));
  op.Input("R", Make<float>({}, {float(r)})).Input("T", Make<int64_t>({}, {t}));
  op.Input("X", Make<float>({1}, {float(x)})).Input("G", Make<float>({1}, {float(g)}));
  op.Input("V", Make<float>({1}, {float(v)})).Input("H", Make<float>({1}, {float(h)}));
  op.Output("X_new", Make<float>({1}, {float(x_new)})).Output("V_new", Make<float>({1}, {float(v_new)}));
  op.Output("H_new", Make<float>({1}, {float(h_new)})).Tolerance(1e-6, 1e-5).Run({"cpu"});
}

TEST(TrainingTest, MismatchedStateShapeFails) {
  OpTester op("Adagrad", 1, kDomain);
  op.Input("R", Make<float>({}, {0.1f})).Input("T", Make<int64_t>({}, {0}));
  op.Input("X", Make<float>({2}, {1, 2})).Input("G", Make<float>({2}, {1, 2})).Input("H", Make<float>({3}, {1, 2, 3}));
  op.OutputName("X_new").OutputName("H_new").ExpectFailure("input 4");
  op.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
