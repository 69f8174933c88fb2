// Conv through cuDNN's convolution API (1-D, 2-D, 3-D; groups; bias; symmetric padding).
//
// Per input shape the kernel builds a plan (descriptors and the algorithm chosen as
// cudnn_conv_algo_search says) once, behind a mutex, and reuses it for every later run with that
// shape. EXHAUSTIVE times the candidate algorithms on the run's real buffers the first time a shape is
// seen, which blocks the host for that run only.
#include <climits>
#include <map>
#include <memory>
#include <mutex>

#include "providers/cpu/common/window_geometry.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

// Workspace ceilings for the algorithm search; use_max_workspace lets cuDNN use far more scratch
// memory for faster algorithms.
constexpr size_t kSmallWorkspaceBytes = size_t{32} << 20;
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

template <typename Handle, cudnnStatus_t (*Destroy)(Handle)>
struct Descriptor {
  Handle handle = nullptr;
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (handle != nullptr) Destroy(handle);
  }
};

using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDescriptor = Descriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;

struct ConvPlan {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvDescriptor conv;
  cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace_bytes = 0;
};

// The node's geometry resolved for one input shape, in cuDNN's terms (1-D padded to 2-D).
struct ConvGeometry {
  std::vector<int> x_dims, w_dims, y_dims, pads, strides, dilations;
  Shape y_shape;
  int64_t group = 1;
};

std::vector<int> ToInts(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

std::vector<int> PackedStrides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

void SetTensor(TensorDescriptor& d, cudnnDataType_t type, const std::vector<int>& dims) {
  CheckCudnn(cudnnCreateTensorDescriptor(&d.handle), "cudnnCreateTensorDescriptor");
  const std::vector<int> strides = PackedStrides(dims);
  CheckCudnn(cudnnSetTensorNdDescriptor(d.handle, type, static_cast<int>(dims.size()), dims.data(), strides.data()),
             "cudnnSetTensorNdDescriptor");
}

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        attributes_(cpu::ReadWindowAttributes(info.node())),
        group_(info.node().GetInt("group", 1)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    if (w.type() != x.type() || (bias != nullptr && bias->type() != x.type()))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X, W and B must have one element type");
    FloatElementType(ctx, x.type());
    const ConvGeometry geometry = Resolve(ctx, x.shape(), w.shape());
    Tensor& y = ctx.Output(0, x.type(), geometry.y_shape);
    if (y.NumElements() == 0) return;
    const cudaStream_t stream = StreamOf(ctx);
    const ConvPlan& plan = PlanFor(ctx, geometry, x, w, y, stream);
    const float one = 1.0f, zero = 0.0f;
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    void* workspace = lease.workspace(plan.workspace_bytes);
    CheckCudnn(cudnnConvolutionForward(lease.cudnn(), &one, plan.x.handle, x.raw_data(), plan.w.handle, w.raw_data(),
                                       plan.conv.handle, plan.algorithm, workspace, plan.workspace_bytes,
                                       &zero, plan.y.handle, y.raw_data()),
               ctx.node().Describe(), ": cudnnConvolutionForward");
    if (bias != nullptr)
      CheckLaunch(
          ctx,
          launch::AddChannelBias(FloatElementType(ctx, x.type()), y.raw_data(), bias->raw_data(), geometry.y_shape[0],
                                 geometry.y_shape[1], geometry.y_shape.SizeFrom(2), stream),
          "bias launch");
  }

 private:
  ConvGeometry Resolve(const KernelContext& ctx, const Shape& x, const Shape& w) const {
    const Node& node = ctx.node();
    if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
           " must both have rank 3, 4 or 5");
    if (x[1] != w[1] * group_)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X has ", x[1], " channels but W ", w.ToString(),
           " with group ", group_, " expects ", w[1] * group_);
    const std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end());
    const std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
    const cpu::WindowGeometry window = cpu::ResolveWindow(attributes_, spatial, kernel, node);
    if (window.pad_begin != window.pad_end)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": asymmetric padding is not supported by the CUDA Conv");
    ConvGeometry g;
    g.group = group_;
    std::vector<int64_t> y_dims = {x[0], w[0]};
    y_dims.insert(y_dims.end(), window.output.begin(), window.output.end());
    g.y_shape = Shape(y_dims);
    g.x_dims = ToInts(x.dims());
    g.w_dims = ToInts(w.dims());
    g.y_dims = ToInts(y_dims);
    g.pads = ToInts(window.pad_begin);
    g.strides = ToInts(window.strides);
    g.dilations = ToInts(window.dilations);
    if (spatial.size() == 1) PadTo2d(g);
    return g;
  }

  // cuDNN convolves 4-D and 5-D tensors: a 1-D convolution gets a unit axis, placed last ([N,C,D,1])
  // or, with cudnn_conv1d_pad_to_nc1d, before the data axis ([N,C,1,D]).
  void PadTo2d(ConvGeometry& g) const {
    const bool unit_first = ep_.options().cudnn_conv1d_pad_to_nc1d;
    for (std::vector<int>* dims : {&g.x_dims, &g.w_dims, &g.y_dims})
      dims->insert(dims->begin() + (unit_first ? 2 : 3), 1);
    g.pads.insert(g.pads.begin() + (unit_first ? 0 : 1), 0);
    g.strides.insert(g.strides.begin() + (unit_first ? 0 : 1), 1);
    g.dilations.insert(g.dilations.begin() + (unit_first ? 0 : 1), 1);
  }

  const ConvPlan& PlanFor(const KernelContext& ctx, const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y,
                          cudaStream_t stream) const {
    std::vector<int> key = g.x_dims;
    key.insert(key.end(), g.w_dims.begin(), g.w_dims.end());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    auto plan = std::make_unique<ConvPlan>();
    Describe(g, x.type(), *plan);
    ChooseAlgorithm(ctx, x, w, y, stream, *plan);
    return *plans_.emplace(std::move(key), std::move(plan)).first->second;
  }

  void Describe(const ConvGeometry& g, DataType type, ConvPlan& plan) const {
    const cudnnDataType_t data = type == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    SetTensor(plan.x, data, g.x_dims);
    SetTensor(plan.y, data, g.y_dims);
    CheckCudnn(cudnnCreateFilterDescriptor(&plan.w.handle), "cudnnCreateFilterDescriptor");
    CheckCudnn(cudnnSetFilterNdDescriptor(plan.w.handle, data, CUDNN_TENSOR_NCHW, static_cast<int>(g.w_dims.size()),
                                          g.w_dims.data()),
               "cudnnSetFilterNdDescriptor");
    CheckCudnn(cudnnCreateConvolutionDescriptor(&plan.conv.handle), "cudnnCreateConvolutionDescriptor");
    CheckCudnn(cudnnSetConvolutionNdDescriptor(plan.conv.handle, static_cast<int>(g.pads.size()), g.pads.data(),
                                               g.strides.data(), g.dilations.data(), CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               "cudnnSetConvolutionNdDescriptor");
    CheckCudnn(cudnnSetConvolutionGroupCount(plan.conv.handle, static_cast<int>(g.group)),
               "cudnnSetConvolutionGroupCount");
    // float32: tensor cores (TF32) only when use_tf32 allows; float16: tensor cores always.
    const cudnnMathType_t math = type == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                                 : ep_.options().use_tf32  ? CUDNN_DEFAULT_MATH
                                                           : CUDNN_FMA_MATH;
    CheckCudnn(cudnnSetConvolutionMathType(plan.conv.handle, math), "cudnnSetConvolutionMathType");
  }

  size_t WorkspaceLimit() const {
    size_t limit = ep_.options().cudnn_conv_use_max_workspace ? kMaxWorkspaceBytes : kSmallWorkspaceBytes;
    if (ep_.options().gpu_mem_limit != 0) limit = std::min(limit, ep_.options().gpu_mem_limit / 4);
    return limit;
  }

  void ChooseAlgorithm(const KernelContext& ctx, const Tensor& x, const Tensor& w, Tensor& y, cudaStream_t stream,
                       ConvPlan& plan) const {
    const std::string where = ctx.node().Describe();
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    cudnnHandle_t cudnn = lease.cudnn();
    const ConvAlgoSearch search = ep_.options().cudnn_conv_algo_search;
    if (search == ConvAlgoSearch::kDefault) {
      UseDefaultAlgorithm(cudnn, where, plan);
      return;
    }
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    const size_t limit = WorkspaceLimit();
    if (search == ConvAlgoSearch::kHeuristic) {
      CheckCudnn(cudnnGetConvolutionForwardAlgorithm_v7(cudnn, plan.x.handle, plan.w.handle, plan.conv.handle,
                                                        plan.y.handle, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                                        results),
                 where, ": cudnnGetConvolutionForwardAlgorithm_v7");
    } else {
      Tensor workspace = SearchWorkspace(ctx, limit);
      CheckCudnn(cudnnFindConvolutionForwardAlgorithmEx(
                     cudnn, plan.x.handle, x.raw_data(), plan.w.handle, w.raw_data(), plan.conv.handle, plan.y.handle,
                     y.raw_data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results, workspace.raw_data(),
                     workspace.SizeInBytes()),
                 where, ": cudnnFindConvolutionForwardAlgorithmEx");
    }
    // float32 with use_tf32 = 0 must stay on FMA kernels; cuDNN also lists tensor-core variants.
    const bool fma_only = x.type() == DataType::kFloat && !ep_.options().use_tf32;
    for (int i = 0; i < count; ++i) {
      if (results[i].status != CUDNN_STATUS_SUCCESS || results[i].memory > limit) continue;
      if (fma_only && results[i].mathType != CUDNN_FMA_MATH) continue;
      plan.algorithm = results[i].algo;
      plan.workspace_bytes = results[i].memory;
      CheckCudnn(cudnnSetConvolutionMathType(plan.conv.handle, results[i].mathType), where,
                 ": cudnnSetConvolutionMathType");
      return;
    }
    UseDefaultAlgorithm(cudnn, where, plan);  // nothing suitable listed: the always-available algorithm
  }

  static void UseDefaultAlgorithm(cudnnHandle_t cudnn, const std::string& where, ConvPlan& plan) {
    plan.algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    CheckCudnn(cudnnGetConvolutionForwardWorkspaceSize(cudnn, plan.x.handle, plan.w.handle, plan.conv.handle,
                                                       plan.y.handle, plan.algorithm, &plan.workspace_bytes),
               where, ": cudnnGetConvolutionForwardWorkspaceSize");
  }

  // Scratch memory for the exhaustive search: as much as allowed, less when the device is short.
  static Tensor SearchWorkspace(const KernelContext& ctx, size_t limit) {
    for (size_t bytes = limit;; bytes /= 4) {
      try {
        return Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(bytes)}, ctx.allocator());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kOutOfMemory || bytes == 0) throw;
      }
    }
  }

  const CudaExecutionProvider& ep_;
  cpu::WindowAttributes attributes_;
  int64_t group_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int>, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register<ConvKernel>(MakeDef("Conv", 1, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
