// ScatterElements and ScatterND (reduction "none"; nodes with a reduction stay on the CPU, see NodeIsSupported), any
// element type, int32 or int64 indices on the device.
//
// In place: the output may share the data input's buffer (KernelDef::in_place_inputs = {0}). The executor hands the
// kernel such an output when an IoBinding binds a model output to the same tensor as the model input it updates (a
// key/value cache written at the current position, docs/PIPELINES.md); the data copy is then skipped and only the
// updates are written.
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

std::vector<int64_t> DenseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool IndicesAreInt64(const KernelContext& ctx, const Tensor& indices) {
  if (indices.type() != DataType::kInt64 && indices.type() != DataType::kInt32)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": indices must be int64 or int32, got ",
         DataTypeName(indices.type()));
  return indices.type() == DataType::kInt64;
}

// The output holding the data: the data's own buffer when the executor bound it there, else a copy.
Tensor& DataInOutput(KernelContext& ctx, const Tensor& data, const Tensor& updates) {
  if (updates.type() != data.type())
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": updates ", updates.Describe(),
         " do not have the type of data ", data.Describe());
  if (data.shape().rank() > static_cast<size_t>(launch::kMaxRank))
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": rank ", data.shape().rank(), " exceeds the CUDA kernel's ",
         launch::kMaxRank);
  Tensor& out = ctx.Output(0, data.type(), data.shape());
  if (out.raw_data() != data.raw_data() && out.SizeInBytes() > 0)
    CheckCuda(cudaMemcpyAsync(out.raw_data(), data.raw_data(), out.SizeInBytes(), cudaMemcpyDeviceToDevice,
                              StreamOf(ctx)),
              ctx.node(), ": copying the data");
  return out;
}

class ScatterElementsKernel : public Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInfo& info) : ep_(CudaEpOf(info)), axis_(info.node().GetInt("axis", 0)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& data = ctx.Input(0);
    const Tensor& indices = ctx.Input(1);
    const Tensor& updates = ctx.Input(2);
    const bool int64_indices = IndicesAreInt64(ctx, indices);
    const size_t rank = data.shape().rank();
    if (indices.shape() != updates.shape() || indices.shape().rank() != rank)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": indices ", indices.shape().ToString(),
           " and updates ", updates.shape().ToString(), " must have one shape of the data's rank ", rank);
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(rank), "axis"));
    for (size_t d = 0; d < rank; ++d)
      if (d != axis && indices.shape()[d] > data.shape()[d])
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": indices ", indices.shape().ToString(),
             " exceed the data ", data.shape().ToString(), " along axis ", d);
    Tensor& out = DataInOutput(ctx, data, updates);
    launch::ScatterElementsGeometry g;
    g.rank = static_cast<int>(rank);
    g.axis = static_cast<int>(axis);
    g.axis_dim = data.shape()[axis];
    const std::vector<int64_t> strides = DenseStrides(data.shape());
    for (size_t d = 0; d < rank; ++d) {
      g.dims[d] = indices.shape()[d];
      g.data_strides[d] = strides[d];
    }
    CheckLaunch(ctx,
                launch::ScatterElements(static_cast<int>(SizeOf(data.type())), out.raw_data(), indices.raw_data(),
                                        int64_indices, updates.raw_data(), g, StreamOf(ctx)),
                "ScatterElements launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  int64_t axis_;
};

class ScatterNdKernel : public Kernel {
 public:
  explicit ScatterNdKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& data = ctx.Input(0);
    const Tensor& indices = ctx.Input(1);
    const Tensor& updates = ctx.Input(2);
    const bool int64_indices = IndicesAreInt64(ctx, indices);
    const Shape& index_shape = indices.shape();
    if (index_shape.rank() == 0 || index_shape[index_shape.rank() - 1] > static_cast<int64_t>(data.shape().rank()))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": indices ", index_shape.ToString(),
           " must end in a tuple size of at most the data's rank ", data.shape().rank());
    const size_t tuple_size = static_cast<size_t>(index_shape[index_shape.rank() - 1]);
    std::vector<int64_t> expected(index_shape.dims().begin(), index_shape.dims().end() - 1);
    expected.insert(expected.end(), data.shape().dims().begin() + static_cast<std::ptrdiff_t>(tuple_size),
                    data.shape().dims().end());
    if (updates.shape() != Shape(expected))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": updates ", updates.shape().ToString(),
           " should have shape ", Shape(expected).ToString());
    Tensor& out = DataInOutput(ctx, data, updates);
    launch::ScatterNdGeometry g;
    g.tuple_size = static_cast<int>(tuple_size);
    g.tuples = index_shape.SizeTo(index_shape.rank() - 1);
    g.slice = data.shape().SizeFrom(tuple_size);
    const std::vector<int64_t> strides = DenseStrides(data.shape());
    for (size_t d = 0; d < tuple_size; ++d) {
      g.data_dims[d] = data.shape()[d];
      g.data_strides[d] = strides[d];
    }
    CheckLaunch(ctx,
                launch::ScatterNd(static_cast<int>(SizeOf(data.type())), out.raw_data(), indices.raw_data(),
                                  int64_indices, updates.raw_data(), g, StreamOf(ctx)),
                "ScatterND launch");
  }

 private:
  const CudaExecutionProvider& ep_;
};

}  // namespace

void RegisterScatterKernels(KernelRegistry& registry) {
  KernelDef elements = MakeDef("ScatterElements", 11, INT_MAX, AllDeviceTypes());
  elements.in_place_inputs = {0};
  registry.Register<ScatterElementsKernel>(std::move(elements));
  KernelDef nd = MakeDef("ScatterND", 11, INT_MAX, AllDeviceTypes());
  nd.in_place_inputs = {0};
  registry.Register<ScatterNdKernel>(std::move(nd));
}

}  // namespace tessera::cuda
