// ai.tessera::FusedMatMul (Y = activation(alpha * (A x B) + bias) + addend) against MatMul on the CPU EP
// followed by the epilogue computed here: the oneDNN post-op paths (2-D folded and batched, bias as oneDNN bias
// and as a post-op after alpha), an addend that widens the result, and a 1-D B whose addend is added afterwards.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct FusedMatMulCase {
  Shape a, b;
  bool constant_b = true;
  float alpha = 1.0f;
  bool bias = false;
  std::string activation;
  std::optional<Shape> addend;
};

double Activate(const std::string& name, double x) {
  if (name == "Relu") return std::max(x, 0.0);
  if (name == "Gelu") return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  if (name == "GeluTanh")
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  return x;
}

// Index into `t` (which broadcasts to `out`) of output element `i`.
int64_t BroadcastIndex(const Shape& t, const Shape& out, int64_t i) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.rank(); d-- > 0;) {
    const int64_t coord = i % out[d];
    i /= out[d];
    const size_t lead = out.rank() - t.rank();
    if (d < lead) continue;
    const int64_t size = t[d - lead];
    if (size != 1) index += coord * stride;
    stride *= size;
  }
  return index;
}

Tensor Expected(const FusedMatMulCase& c, const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& addend) {
  OpTester matmul("MatMul", 13);
  matmul.Input("A", a).Input("B", b, c.constant_b).OutputName("Y");
  const Tensor product = matmul.RunOn("cpu")[0];
  const int64_t n = product.shape()[product.shape().rank() - 1];
  Shape out = product.shape();
  if (c.addend && c.addend->rank() > out.rank()) out = *c.addend;  // the widening case of the tests below
  Tensor y = Tensor::Allocate(DataType::kFloat, out);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    const int64_t p = BroadcastIndex(product.shape(), out, i);
    double v = c.alpha * double(product.Data<float>()[p]);
    if (c.bias) v += bias.Data<float>()[p % n];
    v = Activate(c.activation, v);
    if (c.addend) v += addend.Data<float>()[BroadcastIndex(*c.addend, out, i)];
    y.Data<float>()[i] = static_cast<float>(v);
  }
  return y;
}

void Check(const FusedMatMulCase& c) {
  const Tensor a = RandomTensor(DataType::kFloat, c.a, 1);
  const Tensor b = RandomTensor(DataType::kFloat, c.b, 2);
  const Tensor bias = RandomTensor(DataType::kFloat, Shape{c.b[c.b.rank() - 1]}, 3);
  const Tensor addend = c.addend ? RandomTensor(DataType::kFloat, *c.addend, 4, -2.0, 2.0) : Tensor();
  OpTester t("FusedMatMul", 1, "ai.tessera");
  if (c.alpha != 1.0f) t.Attr("alpha", c.alpha);
  if (!c.activation.empty()) t.Attr("activation", c.activation);
  t.Input("A", a).Input("B", b, c.constant_b);
  if (c.bias) t.Input("bias", bias, true);
  else if (c.addend) t.OmittedInput();
  if (c.addend) t.Input("addend", addend);
  t.Output("Y", Expected(c, a, b, bias, addend)).Tolerance(1e-4, 1e-4).Run();
}

TEST(FusedMatMulTest, ConstantWeightsWithBiasAndGelu) {
  Check({Shape{2, 3, 16}, Shape{16, 24}, true, 1.0f, true, "Gelu", std::nullopt});
}

TEST(FusedMatMulTest, RuntimeWeightsWithBiasAndGeluTanh) {
  Check({Shape{5, 16}, Shape{16, 8}, false, 1.0f, true, "GeluTanh", std::nullopt});
}

TEST(FusedMatMulTest, ScaleThenBiasReluAndResidual) {
  Check({Shape{2, 4, 8}, Shape{8, 6}, true, 0.5f, true, "Relu", Shape{2, 4, 6}});
}

TEST(FusedMatMulTest, BiasAndRowBroadcastResidual) {
  Check({Shape{2, 4, 8}, Shape{8, 6}, true, 1.0f, true, "", Shape{6}});
}

TEST(FusedMatMulTest, BatchedProductWithScaleAndBroadcastMask) {
  Check({Shape{2, 3, 5, 8}, Shape{2, 3, 8, 5}, false, 0.125f, false, "", Shape{2, 1, 1, 5}});
}

TEST(FusedMatMulTest, ScalarAddendOnBatchedProduct) {
  Check({Shape{2, 3, 4, 8}, Shape{8, 5}, true, 1.0f, true, "Relu", Shape{}});
}

TEST(FusedMatMulTest, AddendThatWidensTheResult) {
  Check({Shape{3, 8}, Shape{8, 6}, true, 1.0f, true, "Relu", Shape{2, 3, 6}});
}

TEST(FusedMatMulTest, VectorWeightsWithAddend) {
  Check({Shape{4, 8}, Shape{8}, true, 2.0f, false, "Relu", Shape{4}});
}

// One row (RowTimesMatrix; the product itself is checked against a double reference in matmul_test.cc, here the
// epilogue after it).
TEST(FusedMatMulTest, OneRowWithScaleBiasReluAndResidual) {
  Check({Shape{1, 1, 130}, Shape{130, 72}, true, 0.5f, true, "Relu", Shape{1, 1, 72}});
  Check({Shape{1, 130}, Shape{130, 72}, false, 1.0f, true, "Gelu", Shape{72}});
}

TEST(FusedMatMulTest, RejectsBiasOfWrongLength) {
  OpTester t("FusedMatMul", 1, "ai.tessera");
  t.Input("A", RandomTensor(DataType::kFloat, Shape{2, 4}, 1)).Input("B", RandomTensor(DataType::kFloat, Shape{4, 3}, 2));
  t.Input("bias", RandomTensor(DataType::kFloat, Shape{4}, 3)).OutputName("Y");
  t.ExpectFailure("must be 1-D with N = 3").Run();
}

}  // namespace
}  // namespace tessera::test
