// ReduceSum, ReduceMean, ReduceMax, ReduceMin (float32 / float16). Axes come from the `axes` attribute
// (before opset 13 for ReduceSum, 18 for the others) or from host input 1. ArgMax and ArgMin (float32 / float16
// in, int64 out): a generation loop picks its next token on the device with them.
//
// Dimensions of size 1 are dropped and neighbours of the same kind (reduced or kept) merged, so that the
// common cases become [outer, length, inner] (e.g. ResNet's mean over H and W: rows of H*W; a mean over
// the last axis: rows); anything else runs the general kernel.
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

struct Segment {
  int64_t size;
  bool reduced;
};

std::vector<Segment> MergedSegments(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<Segment> segments;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    if (!segments.empty() && segments.back().reduced == reduced[d])
      segments.back().size *= shape[d];
    else
      segments.push_back({shape[d], reduced[d]});
  }
  return segments;
}

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const KernelInfo& info, launch::ReduceOp op, bool axes_from_input)
      : ep_(CudaEpOf(info)),
        op_(op),
        axes_from_input_(axes_from_input),
        attribute_axes_(info.node().GetInts("axes")),
        keep_dims_(info.node().GetInt("keepdims", 1) != 0),
        noop_with_empty_axes_(info.node().GetInt("noop_with_empty_axes", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const launch::ElementType type = FloatElementType(ctx, x.type());
    std::vector<int64_t> axes = attribute_axes_;
    if (axes_from_input_) axes = ctx.HasInput(1) ? HostInt64s(ctx, ctx.Input(1), "axes") : std::vector<int64_t>{};
    const size_t rank = x.shape().rank();
    if (axes.empty() && noop_with_empty_axes_) {
      Tensor& y = ctx.Output(0, x.type(), x.shape());
      CopyOnDevice(ctx, x, y);
      return;
    }
    std::vector<bool> reduced(rank, axes.empty());
    for (int64_t a : axes) reduced[static_cast<size_t>(NormalizeAxis(a, static_cast<int64_t>(rank), "axes"))] = true;
    std::vector<int64_t> out_dims;
    int64_t reduced_count = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (reduced[d]) reduced_count *= x.shape()[d];
      if (!reduced[d]) out_dims.push_back(x.shape()[d]);
      else if (keep_dims_) out_dims.push_back(1);
    }
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    if (reduced_count == 0) {
      if (op_ != launch::ReduceOp::kSum)
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": reducing an empty axis");
      CheckCuda(cudaMemsetAsync(y.raw_data(), 0, y.SizeInBytes(), StreamOf(ctx)), ctx.node(), ": memset");
      return;
    }
    Launch(ctx, type, x, y, MergedSegments(x.shape(), reduced), reduced);
  }

 private:
  void Launch(const KernelContext& ctx, launch::ElementType type, const Tensor& x, Tensor& y,
              const std::vector<Segment>& s, const std::vector<bool>& reduced) const {
    const bool has_reduced = std::any_of(s.begin(), s.end(), [](const Segment& g) { return g.reduced; });
    if (!has_reduced) {  // only axes of size 1 reduced: a copy
      CopyOnDevice(ctx, x, y);
      return;
    }
    int64_t outer = 1, length = 1, inner = 1;
    size_t i = 0;
    if (i < s.size() && !s[i].reduced) outer = s[i++].size;
    if (i < s.size() && s[i].reduced) length = s[i++].size;
    if (i < s.size() && !s[i].reduced) inner = s[i++].size;
    if (i == s.size()) {
      CheckLaunch(ctx, launch::ReduceMiddle(op_, type, x.raw_data(), y.raw_data(), outer, length, inner, StreamOf(ctx)),
                  "reduction launch");
      return;
    }
    CheckLaunch(ctx, launch::ReduceGeneral(op_, type, x.raw_data(), y.raw_data(), General(x.shape(), reduced),
                                           StreamOf(ctx)),
                "reduction launch");
  }

  static launch::ReduceGeometry General(const Shape& shape, const std::vector<bool>& reduced) {
    launch::ReduceGeometry g;
    g.outputs = 1;
    g.reduced = 1;
    int64_t stride = 1;
    std::vector<int64_t> strides(shape.rank());
    for (size_t d = shape.rank(); d-- > 0;) {
      strides[d] = stride;
      stride *= shape[d];
    }
    for (size_t d = 0; d < shape.rank(); ++d) {
      if (reduced[d]) {
        g.reduced_dims[g.reduced_rank] = shape[d];
        g.reduced_strides[g.reduced_rank++] = strides[d];
        g.reduced *= shape[d];
      } else {
        g.kept_dims[g.kept_rank] = shape[d];
        g.kept_strides[g.kept_rank++] = strides[d];
        g.outputs *= shape[d];
      }
    }
    return g;
  }

  static void CopyOnDevice(const KernelContext& ctx, const Tensor& x, Tensor& y) {
    if (y.SizeInBytes() == 0) return;
    CheckCuda(cudaMemcpyAsync(y.raw_data(), x.raw_data(), y.SizeInBytes(), cudaMemcpyDeviceToDevice, StreamOf(ctx)),
              ctx.node(), ": copy");
  }

  const CudaExecutionProvider& ep_;
  launch::ReduceOp op_;
  bool axes_from_input_;
  std::vector<int64_t> attribute_axes_;
  bool keep_dims_;
  bool noop_with_empty_axes_;
};

class ArgReduceKernel : public Kernel {
 public:
  ArgReduceKernel(const KernelInfo& info, bool is_max)
      : ep_(CudaEpOf(info)),
        is_max_(is_max),
        axis_(info.node().GetInt("axis", 0)),
        keep_dims_(info.node().GetInt("keepdims", 1) != 0),
        select_last_(info.node().GetInt("select_last_index", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const launch::ElementType type = FloatElementType(ctx, x.type());
    const Shape& shape = x.shape();
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(shape.rank()), "axis"));
    if (shape[axis] == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot take the index over empty axis ", axis_,
           " of ", shape.ToString());
    std::vector<int64_t> dims;
    for (size_t d = 0; d < shape.rank(); ++d) {
      if (d != axis) dims.push_back(shape[d]);
      else if (keep_dims_) dims.push_back(1);
    }
    Tensor& y = ctx.Output(0, DataType::kInt64, Shape(dims));
    if (y.NumElements() == 0) return;
    int64_t* indices = static_cast<int64_t*>(y.raw_data());
    const int64_t outer = shape.SizeTo(axis), length = shape[axis], inner = shape.SizeFrom(axis + 1);
    const size_t workspace_bytes = launch::ArgReduceWorkspace(outer, length, inner);
    Tensor workspace;
    if (workspace_bytes > 0)
      workspace = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(workspace_bytes)}, ctx.allocator());
    CheckLaunch(ctx,
                launch::ArgReduce(is_max_, type, x.raw_data(), indices, outer, length, inner, select_last_,
                                  workspace_bytes > 0 ? workspace.raw_data() : nullptr, StreamOf(ctx)),
                "ArgMax/ArgMin launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  bool is_max_;
  int64_t axis_;
  bool keep_dims_, select_last_;
};

void RegisterReduce(KernelRegistry& registry, const char* op, launch::ReduceOp kind, int axes_input_since) {
  registry.Register(MakeDef(op, 1, axes_input_since - 1, FloatTypes()), [kind](const KernelInfo& info) {
    return std::make_unique<ReduceKernel>(info, kind, false);
  });
  KernelDef def = MakeDef(op, axes_input_since, INT_MAX, FloatTypes());
  def.host_inputs = {1};
  registry.Register(std::move(def), [kind](const KernelInfo& info) {
    return std::make_unique<ReduceKernel>(info, kind, true);
  });
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  RegisterReduce(registry, "ReduceSum", launch::ReduceOp::kSum, 13);
  RegisterReduce(registry, "ReduceMean", launch::ReduceOp::kMean, 18);
  RegisterReduce(registry, "ReduceMax", launch::ReduceOp::kMax, 18);
  RegisterReduce(registry, "ReduceMin", launch::ReduceOp::kMin, 18);
  for (const bool is_max : {true, false})
    registry.Register(MakeDef(is_max ? "ArgMax" : "ArgMin", 1, INT_MAX, FloatTypes()),
                      [is_max](const KernelInfo& info) { return std::make_unique<ArgReduceKernel>(info, is_max); });
}

}  // namespace tessera::cuda
