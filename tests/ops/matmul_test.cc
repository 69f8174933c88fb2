// MatMul and Gemm against naive double-precision references on random inputs.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

double At(const Tensor& t, int64_t i) {
  return t.type() == DataType::kFloat ? double(t.Data<float>()[i]) : t.Data<double>()[i];
}

void Set(Tensor& t, int64_t i, double v) {
  if (t.type() == DataType::kFloat) t.Data<float>()[i] = static_cast<float>(v);
  else t.Data<double>()[i] = v;
}

// numpy.matmul semantics, written out directly: promote 1-D operands, broadcast batch dims.
Tensor NaiveMatMul(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> ad = a.shape().dims(), bd = b.shape().dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const size_t rank = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), rank - ad.size(), 1);
  bd.insert(bd.begin(), rank - bd.size(), 1);
  const int64_t m = ad[rank - 2], k = ad[rank - 1], n = bd[rank - 1];
  std::vector<int64_t> batch(rank - 2);
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batch[i] = std::max(ad[i], bd[i]), batches *= batch[i];
  std::vector<int64_t> out = batch;
  if (a.shape().rank() > 1) out.push_back(m);
  if (b.shape().rank() > 1) out.push_back(n);
  Tensor y = Tensor::Allocate(a.type(), Shape(out));
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t a_off = 0, b_off = 0, rest = bi, a_stride = m * k, b_stride = k * n;
    for (int64_t i = static_cast<int64_t>(rank) - 3; i >= 0; --i) {
      const int64_t idx = rest % batch[i];
      rest /= batch[i];
      a_off += (ad[i] == 1 ? 0 : idx) * a_stride;
      b_off += (bd[i] == 1 ? 0 : idx) * b_stride;
      a_stride *= ad[i];
      b_stride *= bd[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < k; ++kk) acc += At(a, a_off + i * k + kk) * At(b, b_off + kk * n + j);
        Set(y, (bi * m + i) * n + j, acc);
      }
  }
  return y;
}

void CheckMatMul(const Shape& a_shape, const Shape& b_shape, bool constant_b = false,
                 DataType type = DataType::kFloat) {
  Tensor a = RandomTensor(type, a_shape, 11), b = RandomTensor(type, b_shape, 12);
  OpTester t("MatMul", 13);
  t.Input("A", a).Input("B", b, constant_b).Output("Y", NaiveMatMul(a, b));
  if (type == DataType::kFloat) t.Tolerance(1e-4, 1e-4);
  t.Run();
}

TEST(MatMulOpTest, TwoD) { CheckMatMul({5, 7}, {7, 3}); }
TEST(MatMulOpTest, BatchTimesWeights) { CheckMatMul({2, 3, 4, 9}, {9, 6}, true); }
TEST(MatMulOpTest, BroadcastBatch) { CheckMatMul({3, 1, 4, 5}, {2, 5, 6}); }
TEST(MatMulOpTest, BroadcastBatchConstant) { CheckMatMul({1, 4, 5}, {3, 5, 2}, true); }
TEST(MatMulOpTest, VectorTimesMatrix) { CheckMatMul({5}, {2, 5, 3}); }
TEST(MatMulOpTest, MatrixTimesVector) { CheckMatMul({2, 4, 5}, {5}); }
TEST(MatMulOpTest, VectorDot) { CheckMatMul({8}, {8}); }
TEST(MatMulOpTest, LargerConstant) { CheckMatMul({64, 96}, {96, 130}, true); }
// One row times a 2-D B (RowTimesMatrix: the depth split over the threads, rows of B four at a time, a ragged end).
TEST(MatMulOpTest, OneRowTimesMatrix) {
  CheckMatMul({1, 301}, {301, 70}, true);
  CheckMatMul({1, 1, 203}, {203, 96});
  CheckMatMul({203}, {203, 65}, true);
}
TEST(MatMulOpTest, Double) { CheckMatMul({2, 3, 4}, {2, 4, 5}, false, DataType::kDouble); }

TEST(MatMulOpTest, Int64) {
  Tensor a = Tensor::FromVector<int64_t>({2, 2}, {1, 2, 3, 4}), b = Tensor::FromVector<int64_t>({2}, {5, -1});
  OpTester t("MatMul", 13);
  t.Input("A", a).Input("B", b).Output("Y", Tensor::FromVector<int64_t>({2}, {3, 11}));
  t.Run();
}

TEST(MatMulOpTest, EmptyInnerDimensionGivesZeros) {
  OpTester t("MatMul", 13);
  t.Input("A", Tensor::Allocate(DataType::kFloat, {2, 0})).Input("B", Tensor::Allocate(DataType::kFloat, {0, 3}));
  t.Output("Y", Tensor::FromVector<float>({2, 3}, std::vector<float>(6, 0.0f)));
  t.Run();
}

TEST(MatMulOpTest, InnerMismatchFails) {
  OpTester t("MatMul", 13);
  t.Input("A", RandomTensor(DataType::kFloat, {2, 3}, 1)).Input("B", RandomTensor(DataType::kFloat, {4, 2}, 2));
  t.OutputName("Y").ExpectFailure("inner dimensions differ");
  t.Run({"cpu"});
}

struct GemmCase {
  GemmCase(int64_t m_, int64_t k_, int64_t n_) : m(m_), k(k_), n(n_) {}
  int64_t m, k, n;
  bool trans_a = false, trans_b = false, constant_b = false;
  float alpha = 1.0f, beta = 1.0f;
  std::optional<Shape> c;  // nullopt: no C input
};

void CheckGemm(const GemmCase& g, DataType type = DataType::kFloat) {
  Tensor a = RandomTensor(type, g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k}, 21);
  Tensor b = RandomTensor(type, g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n}, 22);
  Tensor y = Tensor::Allocate(type, {g.m, g.n});
  Tensor c = g.c ? RandomTensor(type, *g.c, 23) : Tensor();
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t kk = 0; kk < g.k; ++kk)
        acc += At(a, g.trans_a ? kk * g.m + i : i * g.k + kk) * At(b, g.trans_b ? j * g.k + kk : kk * g.n + j);
      double cv = 0;
      if (g.c) {
        const std::vector<int64_t>& cd = g.c->dims();
        const int64_t ci = cd.size() == 2 ? (cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j)
                           : cd.size() == 1 ? (cd[0] == 1 ? 0 : j) : 0;
        cv = At(c, ci);
      }
      Set(y, i * g.n + j, g.alpha * acc + g.beta * cv);
    }
  OpTester t("Gemm", 13);
  if (g.trans_a) t.Attr("transA", int64_t{1});
  if (g.trans_b) t.Attr("transB", int64_t{1});
  if (g.alpha != 1.0f) t.Attr("alpha", g.alpha);
  if (g.beta != 1.0f) t.Attr("beta", g.beta);
  t.Input("A", a).Input("B", b, g.constant_b);
  if (g.c) t.Input("C", c);
  t.Output("Y", y);
  if (type == DataType::kFloat) t.Tolerance(1e-4, 1e-4);
  t.Run();
}

TEST(GemmOpTest, Plain) { CheckGemm(GemmCase(4, 5, 6)); }

TEST(GemmOpTest, FullyConnectedBiasRow) {
  GemmCase g(3, 20, 7);
  g.trans_b = true, g.constant_b = true, g.c = Shape{7};
  CheckGemm(g);
}

TEST(GemmOpTest, TransposedAlphaBetaColumnC) {
  GemmCase g(5, 4, 3);
  g.trans_a = true, g.trans_b = true, g.alpha = 0.5f, g.beta = -2.0f, g.c = Shape{5, 1};
  CheckGemm(g);
}

TEST(GemmOpTest, FullCScalarCAndConstant) {
  GemmCase full(6, 3, 4);
  full.c = Shape{6, 4}, full.beta = 0.25f, full.constant_b = true;
  CheckGemm(full);
  GemmCase scalar(2, 3, 4);
  scalar.c = Shape{}, scalar.alpha = 3.0f;
  CheckGemm(scalar);
}

TEST(GemmOpTest, ColumnBiasWithUnitScales) {
  GemmCase g(5, 4, 3);
  g.c = Shape{5, 1};
  CheckGemm(g);
}

TEST(GemmOpTest, Double) {
  GemmCase g(3, 4, 5);
  g.trans_a = true, g.alpha = 2.0f, g.beta = 0.5f, g.c = Shape{1, 5};
  CheckGemm(g, DataType::kDouble);
}

TEST(GemmOpTest, BadCFails) {
  OpTester t("Gemm", 13);
  t.Input("A", RandomTensor(DataType::kFloat, {2, 3}, 1)).Input("B", RandomTensor(DataType::kFloat, {3, 4}, 2));
  t.Input("C", RandomTensor(DataType::kFloat, {3, 4}, 3)).OutputName("Y").ExpectFailure("does not broadcast");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
