// Concat (one copy kernel per 32 inputs, any element type) and Transpose (a gather kernel).
#include <algorithm>
#include <climits>
#include <numeric>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const KernelInfo& info) : ep_(CudaEpOf(info)), axis_(info.node().GetInt("axis")) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& first = ctx.Input(0);
    const int64_t rank = static_cast<int64_t>(first.shape().rank());
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, rank, "Concat axis"));
    std::vector<int64_t> dims = first.shape().dims();
    dims[axis] = 0;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) {
      const Tensor& t = ctx.Input(i);
      if (t.type() != first.type() || t.shape().rank() != first.shape().rank())
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " is ", t.Describe(), ", input 0 is ",
             first.Describe());
      for (size_t d = 0; d < dims.size(); ++d)
        if (d != axis && t.shape()[d] != first.shape()[d])
          Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " ", t.shape().ToString(),
               " does not match input 0 ", first.shape().ToString(), " outside the axis");
      dims[axis] += t.shape()[axis];
    }
    const Shape out_shape(dims);
    Tensor& out = ctx.Output(0, first.type(), out_shape);
    if (out.NumElements() == 0) return;
    // One launch per kMaxConcatInputs inputs, each filling its range of the output's axis.
    const int element_size = static_cast<int>(SizeOf(first.type()));
    const int64_t outer = out_shape.SizeTo(axis), inner = out_shape.SizeFrom(axis + 1);
    int64_t begin = 0;
    for (size_t base = 0; base < ctx.NumInputs(); base += launch::kMaxConcatInputs) {
      launch::ConcatParts parts;
      parts.count = static_cast<int>(std::min<size_t>(launch::kMaxConcatInputs, ctx.NumInputs() - base));
      parts.begin[0] = begin;
      for (int j = 0; j < parts.count; ++j) {
        const Tensor& t = ctx.Input(base + j);
        parts.data[j] = t.NumElements() > 0 ? t.raw_data() : nullptr;
        begin += t.shape()[axis];
        parts.begin[j + 1] = begin;
      }
      CheckLaunch(ctx, launch::Concat(element_size, out.raw_data(), outer, dims[axis], inner, parts, StreamOf(ctx)),
                  "concat launch");
    }
  }

 private:
  const CudaExecutionProvider& ep_;
  int64_t axis_;
};

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : ep_(CudaEpOf(info)), perm_(info.node().GetInts("perm")) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const size_t rank = x.shape().rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(rank);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (perm.size() != rank)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": perm has ", perm.size(), " entries for rank ", rank);
    if (rank > static_cast<size_t>(launch::kMaxRank))
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": rank ", rank, " exceeds the CUDA kernel's ",
           launch::kMaxRank);
    std::vector<int64_t> in_strides(rank, 1);
    for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * x.shape()[d];
    std::vector<int64_t> out_dims(rank), permuted_strides(rank);
    std::vector<bool> seen(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t p = perm[d];
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": perm is not a permutation of 0..", rank - 1);
      seen[p] = true;
      out_dims[d] = x.shape()[p];
      permuted_strides[d] = in_strides[p];
    }
    // Only axes of size 1 move (a decoding step's [1, 1, heads, head_size] -> [1, heads, 1, head_size]): the elements
    // keep their order, so the output is the input under another shape, without a launch.
    int64_t last_moved = -1;
    bool order_kept = true;
    for (size_t d = 0; d < rank && order_kept; ++d) {
      if (x.shape()[perm[d]] == 1) continue;
      order_kept = perm[d] > last_moved;
      last_moved = perm[d];
    }
    if (order_kept) {
      ctx.SetOutput(0, Value(x.Reshaped(Shape(out_dims))));
      return;
    }
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::Transpose(static_cast<int>(SizeOf(x.type())), x.raw_data(), y.raw_data(),
                                  static_cast<int>(rank), out_dims.data(), permuted_strides.data(), y.NumElements(),
                                  StreamOf(ctx)),
                "Transpose launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  std::vector<int64_t> perm_;
};

}  // namespace

void RegisterTensorKernels(KernelRegistry& registry) {
  registry.Register<ConcatKernel>(MakeDef("Concat", 4, INT_MAX, AllDeviceTypes()));
  registry.Register<TransposeKernel>(MakeDef("Transpose", 1, INT_MAX, AllDeviceTypes()));
}

}  // namespace tessera::cuda
