// Det (opset 11): determinants of the trailing [M, M] matrices of a [..., M, M] input, by LU
// decomposition with partial pivoting in double precision.
#include <cmath>
#include <utility>
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// Determinant of the m x m row-major matrix `a` (overwritten by its LU factors).
double Determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < m; ++r)
      if (std::fabs(a[r * m + k]) > std::fabs(a[pivot * m + k])) pivot = r;
    if (a[pivot * m + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[k * m + c], a[pivot * m + c]);
      det = -det;
    }
    const double diagonal = a[k * m + k];
    det *= diagonal;
    for (int64_t r = k + 1; r < m; ++r) {
      const double factor = a[r * m + k] / diagonal;
      for (int64_t c = k + 1; c < m; ++c) a[r * m + c] -= factor * a[k * m + c];
    }
  }
  return det;
}

class Det : public Kernel {
 public:
  explicit Det(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    const size_t rank = shape.rank();
    if (rank < 2 || shape[rank - 1] != shape[rank - 2])
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input must be [..., M, M], got ", shape.ToString());
    const int64_t m = shape[rank - 1];
    Tensor& y = ctx.Output(0, x.type(), Shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 2)));
    if (x.type() == DataType::kFloat) Run(x.Data<float>(), y.Data<float>(), y.NumElements(), m);
    else Run(x.Data<double>(), y.Data<double>(), y.NumElements(), m);
  }

 private:
  template <typename T>
  static void Run(const T* x, T* y, int64_t count, int64_t m) {
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < m * m; ++j) a[static_cast<size_t>(j)] = static_cast<double>(x[i * m * m + j]);
      y[i] = static_cast<T>(Determinant(a, m));
    }
  }
};

}  // namespace

void RegisterDetKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Det";
  def.since_version = 11;
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Det>(std::move(def));
}

}  // namespace tessera::cpu
