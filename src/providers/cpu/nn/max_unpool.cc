// MaxUnpool (opset 9, 11): scatters X into a zero tensor at the flat indices I produced by MaxPool
// (indices count over the whole output tensor, batch and channel included, as MaxPool computes them).
// The default output shape is (in - 1) * stride - pad_begin - pad_end + kernel. When output_shape is
// given, indices still address the default shape (that is what MaxPool produced) and each value keeps
// its coordinates in the larger output_shape (the extra rows and columns stay zero).
#include <algorithm>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

class MaxUnpool : public Kernel {
 public:
  explicit MaxUnpool(const KernelInfo& info)
      : kernel_(info.node().GetInts("kernel_shape")),
        pads_(info.node().GetInts("pads")),
        strides_(info.node().GetInts("strides")) {
    if (kernel_.empty()) Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": kernel_shape is required");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& indices = ctx.Input(1);
    if (indices.type() != DataType::kInt64 || indices.shape() != x.shape())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": I must be int64 with X's shape ",
           x.shape().ToString(), ", got ", indices.Describe());
    const Shape pooled_from = DefaultOutputShape(ctx, x.shape());
    const Shape out_shape = GivenOutputShape(ctx, pooled_from);
    Tensor& y = ctx.Output(0, x.type(), out_shape);
    const int64_t total = pooled_from.NumElements();
    const int64_t* idx = indices.Data<int64_t>();
    VisitNumericType(ctx.node(), x.type(), [&]<typename T>() {
      const T* xd = static_cast<const T*>(x.raw_data());
      T* yd = static_cast<T*>(y.raw_data());
      std::fill_n(yd, y.NumElements(), Narrow<T>(0));
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        if (idx[i] < 0 || idx[i] >= total)
          Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": index ", idx[i], " is outside the output of ",
               total, " elements");
        yd[Reindex(idx[i], pooled_from, out_shape)] = xd[i];
      }
    });
  }

 private:
  // The flat index `index` into shape `from` re-encoded with the same coordinates in shape `to`.
  static int64_t Reindex(int64_t index, const Shape& from, const Shape& to) {
    if (from == to) return index;
    int64_t result = 0, stride = 1;
    for (size_t d = from.rank(); d-- > 0;) {
      result += (index % from[d]) * stride;
      index /= from[d];
      stride *= to[d];
    }
    return result;
  }

  Shape DefaultOutputShape(const KernelContext& ctx, const Shape& in) const {
    const size_t spatial = kernel_.size();
    if (in.rank() != spatial + 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", in.ToString(), " does not match kernel_shape");
    Shape shape = in;
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t stride = d < strides_.size() ? strides_[d] : 1;
      const int64_t pad = pads_.size() == 2 * spatial ? pads_[d] + pads_[d + spatial] : 0;
      shape[d + 2] = (in[d + 2] - 1) * stride - pad + kernel_[d];
    }
    return shape;
  }

  static Shape GivenOutputShape(const KernelContext& ctx, const Shape& pooled_from) {
    const Tensor* given = ctx.OptionalInput(2);
    if (!given) return pooled_from;
    Shape shape(ReadIntParameter(ctx.node(), *given, "output_shape"));
    bool fits = shape.rank() == pooled_from.rank();
    for (size_t d = 0; fits && d < shape.rank(); ++d) fits = shape[d] >= pooled_from[d] && (d >= 2 || shape[d] == pooled_from[d]);
    if (!fits)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": output_shape ", shape.ToString(),
           " cannot hold the unpooled shape ", pooled_from.ToString());
    return shape;
  }

  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

void RegisterMaxUnpoolKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "MaxUnpool";
  def.since_version = 9;
  def.host_inputs = {2};
  registry.Register<MaxUnpool>(std::move(def));
}

}  // namespace tessera::cpu
