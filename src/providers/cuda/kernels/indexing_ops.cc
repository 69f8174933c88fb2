// Gather, Slice, Expand (device data; shape-like inputs read on the host), Shape (host output, from the
// input's shape alone) and ConstantOfShape (host shape input, device output).
#include <climits>
#include <cstring>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/range_count.h"
#include "providers/cuda/cuda_graph.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "tessera/ep/shape_kernel.h"

namespace tessera::cuda {

namespace {

int64_t CheckedAxis(const KernelContext& ctx, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

// Fills `out` (row-major over out_dims) from `in` + offset elements with per-dimension element strides.
void StridedGather(const KernelContext& ctx, const Tensor& in, int64_t offset, const std::vector<int64_t>& strides,
                   Tensor& out) {
  if (out.NumElements() == 0) return;
  const size_t element = SizeOf(in.type());
  if (out.shape().rank() > static_cast<size_t>(launch::kMaxRank))
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": rank ", out.shape().rank(),
         " exceeds the CUDA kernel's ", launch::kMaxRank);
  const char* base = static_cast<const char*>(in.raw_data()) + offset * static_cast<int64_t>(element);
  CheckLaunch(ctx,
              launch::Transpose(static_cast<int>(element), base, out.raw_data(), static_cast<int>(out.shape().rank()),
                                out.shape().dims().data(), strides.data(), out.NumElements(), StreamOf(ctx)),
              "strided copy launch");
}

std::vector<int64_t> DenseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : ep_(CudaEpOf(info)), axis_(info.node().GetInt("axis", 0)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& data = ctx.Input(0);
    const Tensor& indices = ctx.Input(1);
    if (indices.type() != DataType::kInt64 && indices.type() != DataType::kInt32)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": indices must be int64 or int32, got ",
           DataTypeName(indices.type()));
    if (data.shape().rank() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": data must have rank >= 1");
    const size_t axis = static_cast<size_t>(CheckedAxis(ctx, axis_, data.shape().rank()));
    std::vector<int64_t> dims(data.shape().dims().begin(), data.shape().dims().begin() + axis);
    dims.insert(dims.end(), indices.shape().dims().begin(), indices.shape().dims().end());
    dims.insert(dims.end(), data.shape().dims().begin() + axis + 1, data.shape().dims().end());
    Tensor& out = ctx.Output(0, data.type(), Shape(dims));
    if (out.NumElements() == 0) return;
    const int element_size = static_cast<int>(SizeOf(data.type()));
    const int64_t outer = data.shape().SizeTo(axis), axis_dim = data.shape()[axis];
    const int64_t inner = data.shape().SizeFrom(axis + 1), count = indices.NumElements();
    const cudaStream_t stream = StreamOf(ctx);
    if (!indices.memory_info().IsHostReadable()) {
      CheckLaunch(ctx,
                  launch::Gather(element_size, data.raw_data(), indices.raw_data(), indices.type() == DataType::kInt64,
                                 out.raw_data(), outer, axis_dim, inner, count, stream),
                  "Gather launch");
      return;
    }
    // Indices a host node computed (shape arithmetic): few enough to travel in the launch, else copied.
    const std::vector<int64_t> values = HostInt64s(ctx, indices, "indices");
    if (count <= launch::kInlineIndices) {
      launch::InlineIndices inline_indices;
      std::copy(values.begin(), values.end(), inline_indices.values);
      CheckLaunch(ctx,
                  launch::GatherInline(element_size, data.raw_data(), inline_indices, out.raw_data(), outer, axis_dim,
                                       inner, count, stream),
                  "Gather launch");
      return;
    }
    Tensor on_device = Tensor::Allocate(DataType::kInt64, Shape{count}, ctx.allocator());
    if (WholeRunCaptureOnThisThread()) {
      // Host indices derive from shapes, fixed for the graph: uploaded now rather than by a node reading `values`
      // (gone at replay); a captured run's allocations live as long as its graph.
      UploadOutsideCapture(on_device.raw_data(), values.data(), values.size() * sizeof(int64_t));
    } else {
      // From pageable memory, cudaMemcpyAsync has staged the values when it returns: `values` may go.
      CheckCuda(cudaMemcpyAsync(on_device.raw_data(), values.data(), values.size() * sizeof(int64_t),
                                cudaMemcpyHostToDevice, stream),
                ctx.node(), ": copying host indices");
    }
    CheckLaunch(ctx,
                launch::Gather(element_size, data.raw_data(), on_device.raw_data(), true, out.raw_data(), outer,
                               axis_dim, inner, count, stream),
                "Gather launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  int64_t axis_;
};

// Slice: per sliced axis a start, an end and a step (opset 10+ from host inputs, before from attributes),
// clamped as the ONNX spec says; the result is a strided view of the input, copied densely.
class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {
    const Node& node = info.node();
    if (node.opset < 10) {
      starts_ = node.GetInts("starts");
      ends_ = node.GetInts("ends");
      axes_ = node.GetInts("axes");
    }
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const bool from_inputs = ctx.node().opset >= 10;
    const std::vector<int64_t> starts = from_inputs ? HostInt64s(ctx, ctx.Input(1), "starts") : starts_;
    const std::vector<int64_t> ends = from_inputs ? HostInt64s(ctx, ctx.Input(2), "ends") : ends_;
    std::vector<int64_t> axes = from_inputs && ctx.HasInput(3) ? HostInt64s(ctx, ctx.Input(3), "axes") : axes_;
    std::vector<int64_t> steps = from_inputs && ctx.HasInput(4) ? HostInt64s(ctx, ctx.Input(4), "steps")
                                                                : std::vector<int64_t>(starts.size(), 1);
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": starts, ends, axes and steps differ in length");
    std::vector<int64_t> dims = x.shape().dims();
    std::vector<int64_t> strides = DenseStrides(x.shape());
    int64_t offset = 0;
    for (size_t j = 0; j < starts.size(); ++j) {
      const size_t axis = static_cast<size_t>(CheckedAxis(ctx, axes[j], dims.size()));
      const int64_t count = Resolve(ctx, x.shape()[axis], starts[j], ends[j], steps[j], offset, strides[axis]);
      dims[axis] = count;
    }
    Tensor& y = ctx.Output(0, x.type(), Shape(dims));
    StridedGather(ctx, x, offset, strides, y);
  }

 private:
  // The element count along one axis; adds the start to `offset` and scales `stride` by the step.
  static int64_t Resolve(const KernelContext& ctx, int64_t dim, int64_t start, int64_t end, int64_t step,
                         int64_t& offset, int64_t& stride) {
    if (step == 0) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": a step is 0");
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    if (count > 0) offset += start * stride;
    stride *= step;
    return count;
  }

  const CudaExecutionProvider& ep_;
  std::vector<int64_t> starts_, ends_, axes_;
};

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape shape = cpu::BroadcastShapes(ctx.node(), x.shape(), Shape(HostInt64s(ctx, ctx.Input(1), "shape")));
    Tensor& y = ctx.Output(0, x.type(), shape);
    const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, shape, x.shape(), Shape{});
    StridedGather(ctx, x, 0, std::vector<int64_t>(index.a_strides, index.a_strides + shape.rank()), y);
  }

 private:
  const CudaExecutionProvider& ep_;
};

class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {
    const Node& node = info.node();
    if (node.HasAttribute("value")) value_ = node.GetTensor("value");
    else value_ = Tensor::FromVector<float>({1}, {0.0f});
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    Tensor& y = ctx.Output(0, value_.type(), Shape(HostInt64s(ctx, ctx.Input(0), "shape")));
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::Fill(static_cast<int>(SizeOf(value_.type())), y.raw_data(), y.NumElements(), value_.raw_data(),
                             StreamOf(ctx)),
                "ConstantOfShape launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  Tensor value_;
};

// Range: start, limit and delta are read on the host (shape computations produce them there); the values are
// written on the device, so what consumes them stays on the device (and in a captured graph).
class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor &start = ctx.Input(0), &limit = ctx.Input(1), &delta = ctx.Input(2);
    for (const Tensor* t : {&start, &limit, &delta})
      if (t->type() != start.type() || t->NumElements() != 1)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": start, limit and delta must be scalars of one type, ",
             "got ", start.Describe(), ", ", limit.Describe(), ", ", delta.Describe());
    const auto count = [&]<typename T>() {
      const T first = start.Data<T>()[0], step = delta.Data<T>()[0];
      if (step == T{0}) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": delta must not be zero");
      return RangeCount(first, limit.Data<T>()[0], step);
    };
    int64_t n = 0;
    switch (start.type()) {
      case DataType::kFloat: n = count.template operator()<float>(); break;
      case DataType::kDouble: n = count.template operator()<double>(); break;
      case DataType::kInt16: n = count.template operator()<int16_t>(); break;
      case DataType::kInt32: n = count.template operator()<int32_t>(); break;
      case DataType::kInt64: n = count.template operator()<int64_t>(); break;
      default:
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(start.type()),
             " is not supported");
    }
    Tensor& y = ctx.Output(0, start.type(), Shape{n});
    if (n == 0) return;
    CheckLaunch(ctx,
                launch::Range(ScalarTypeOf(ctx, start.type()), y.raw_data(), n, start.raw_data(), delta.raw_data(),
                              StreamOf(ctx)),
                "Range launch");
  }

 private:
  const CudaExecutionProvider& ep_;
};

}  // namespace

void RegisterIndexingKernels(KernelRegistry& registry) {
  KernelDef gather = MakeDef("Gather", 1, INT_MAX, AllDeviceTypes());
  gather.input_types[1] = {DataType::kInt64, DataType::kInt32};
  gather.host_or_device_inputs = {1};
  registry.Register<GatherKernel>(std::move(gather));
  registry.Register<SliceKernel>(MakeDef("Slice", 1, 9, AllDeviceTypes()));
  KernelDef slice = MakeDef("Slice", 10, INT_MAX, AllDeviceTypes());
  slice.host_inputs = {1, 2, 3, 4};
  registry.Register<SliceKernel>(std::move(slice));
  KernelDef expand = MakeDef("Expand", 8, INT_MAX, AllDeviceTypes());
  expand.host_inputs = {1};
  registry.Register<ExpandKernel>(std::move(expand));
  KernelDef shape = MakeDef("Shape", 1, INT_MAX, AllDeviceTypes());
  shape.host_outputs = {0};
  shape.host_or_device_inputs = {0};  // only the shape is read
  registry.Register<ShapeOfInputKernel>(std::move(shape));  // tessera/ep/shape_kernel.h: no device work
  KernelDef constant_of_shape = MakeDef("ConstantOfShape", 9, INT_MAX, {DataType::kInt64});
  constant_of_shape.host_inputs = {0};
  registry.Register<ConstantOfShapeKernel>(std::move(constant_of_shape));
  KernelDef range = MakeDef("Range", 11, INT_MAX,
                            {DataType::kFloat, DataType::kDouble, DataType::kInt16, DataType::kInt32, DataType::kInt64});
  range.host_inputs = {0, 1, 2};
  registry.Register<RangeKernel>(std::move(range));
}

}  // namespace tessera::cuda
