// ConvTranspose on the CUDA EP through cuDNN's backward-data convolution: the input gradient of the Conv whose filter
// is ConvTranspose's W [C_in][C_out / group][kernel...] (cuDNN's K = C_in, C = C_out / group). 1 to 3 spatial dims
// (1-D as 2-D with a unit height), groups, strides, dilations, pads, auto_pad, output_shape and output_padding
// (tessera/ep/conv_transpose_geometry.h); float32 (tensor cores only when use_tf32 allows) and float16 (tensor cores).
// Symmetric non-negative pads go to cuDNN itself; otherwise cuDNN computes the unpadded result into scratch memory
// and launch::CropOrExtend takes the output's window of it (zeros where output_padding reaches past it). The bias is
// added by cudnnAddTensor. Per (X, W) shape the descriptors and cuDNN's heuristic algorithm choice are made once;
// in eager runs a step's cuDNN calls replay from a step graph (step_graphs.h).
#include <cudnn.h>

#include <climits>
#include <map>
#include <memory>
#include <mutex>

#include "providers/cuda/cuda_handles.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/cudnn_descriptors.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"
#include "tessera/ep/conv_transpose_geometry.h"

namespace tessera::cuda {
namespace {

// The most scratch memory an algorithm may take (cuDNN ranks faster algorithms first; one over it is skipped).
constexpr size_t kWorkspaceLimit = size_t{256} << 20;

struct ConvTransposePlan {
  TensorDescriptor x;       // cuDNN's dy: X [N, C_in, spatial...]
  TensorDescriptor result;  // cuDNN's dx: Y, or the unpadded result when the window is cropped or extended
  TensorDescriptor y;       // Y, for the bias
  TensorDescriptor bias;    // [1, C_out, 1...]
  FilterDescriptor w;
  ConvDescriptor conv;
  cudnnConvolutionBwdDataAlgo_t algorithm = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t workspace_bytes = 0;
  bool windowed = false;  // cuDNN writes `full_dims`; CropOrExtend takes Y from it at `offset`
  std::vector<int64_t> full_dims, out_dims, offset;
  StepGraphs steps;
};

std::vector<int> Ints(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

class ConvTransposeKernel : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attrs_(ReadConvTransposeAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    if (w.type() != x.type() || (bias != nullptr && bias->type() != x.type()))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X, W and B must have one element type");
    const launch::ElementType type = FloatElementType(ctx, x.type());
    const ConvTransposeShapes s = ResolveConvTransposeShapes(ctx.node(), attrs_, x.shape(), w.shape(), bias);
    if (s.rank() > 3)
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel takes 1 to 3 spatial dims, not ",
           s.rank());
    Tensor& y = ctx.Output(0, x.type(), s.y);
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": empty input ", x.shape().ToString());
    const cudaStream_t stream = StreamOf(ctx);
    const ConvTransposePlan& plan = PlanFor(s, x.type(), stream);
    Tensor full;
    if (plan.windowed) full = Tensor::Allocate(x.type(), Shape(plan.full_dims), ctx.allocator());
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    void* workspace = lease.workspace(plan.workspace_bytes);
    StepKey key(stream);
    key.Add(x.raw_data()).Add(w.raw_data()).Add(y.raw_data()).Add(workspace);
    key.Add(bias != nullptr ? bias->raw_data() : nullptr).Add(full.defined() ? full.raw_data() : nullptr);
    plan.steps.Run(ctx, ep_, &lease, key, StepLibrary::kCudnn,
                   [&](cudaStream_t on, const LibraryHandles::Lease* handles) {
                     cudnnHandle_t cudnn = handles->cudnn();
                     const float one = 1.0f, zero = 0.0f;
                     void* target = full.defined() ? full.raw_data() : y.raw_data();
                     CheckCudnn(cudnnConvolutionBackwardData(cudnn, &one, plan.w.handle, w.raw_data(), plan.x.handle,
                                                             x.raw_data(), plan.conv.handle, plan.algorithm, workspace,
                                                             plan.workspace_bytes, &zero, plan.result.handle, target),
                                ctx.node(), ": cudnnConvolutionBackwardData");
                     if (full.defined())
                       CheckLaunch(ctx,
                                   launch::CropOrExtend(type, full.raw_data(), y.raw_data(),
                                                        static_cast<int>(plan.out_dims.size()), plan.out_dims.data(),
                                                        plan.full_dims.data(), plan.offset.data(), y.NumElements(), on),
                                   "ConvTranspose window");
                     if (bias != nullptr)
                       CheckCudnn(cudnnAddTensor(cudnn, &one, plan.bias.handle, bias->raw_data(), &one, plan.y.handle,
                                                 y.raw_data()),
                                  ctx.node(), ": cudnnAddTensor (bias)");
                   });
  }

 private:
  const ConvTransposePlan& PlanFor(const ConvTransposeShapes& s, DataType type, cudaStream_t stream) const {
    std::vector<int64_t> key = s.y.dims();
    key.insert(key.end(), s.input.begin(), s.input.end());
    key.insert(key.end(), s.kernel.begin(), s.kernel.end());
    key.push_back(static_cast<int64_t>(type));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    return *plans_.emplace(key, Build(s, type, stream)).first->second;
  }

  std::unique_ptr<ConvTransposePlan> Build(const ConvTransposeShapes& s, DataType type, cudaStream_t stream) const {
    auto plan = std::make_unique<ConvTransposePlan>();
    const cudnnDataType_t data = type == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    // 1-D runs as 2-D with a unit height.
    const bool one_d = s.rank() == 1;
    const auto spatial = [&](const std::vector<int64_t>& v, int64_t unit) {
      std::vector<int64_t> out = v;
      if (one_d) out.insert(out.begin(), unit);
      return out;
    };
    const std::vector<int64_t> input = spatial(s.input, 1), kernel = spatial(s.kernel, 1);
    const std::vector<int64_t> strides = spatial(s.strides, 1), dilations = spatial(s.dilations, 1);
    const std::vector<int64_t> pad_begin = spatial(s.pad_begin, 0), pad_end = spatial(s.pad_end, 0);
    const std::vector<int64_t> output = spatial(s.output, 1);
    bool symmetric = true;
    for (size_t i = 0; i < pad_begin.size(); ++i) symmetric = symmetric && pad_begin[i] == pad_end[i] && pad_begin[i] >= 0;
    plan->windowed = !symmetric;
    std::vector<int64_t> pads(pad_begin.size(), 0), result{s.batch, s.out_channels};
    for (size_t i = 0; i < input.size(); ++i) {
      if (symmetric) pads[i] = pad_begin[i];
      const int64_t full = strides[i] * (input[i] - 1) + (kernel[i] - 1) * dilations[i] + 1;
      result.push_back(symmetric ? output[i] : full);
    }
    std::vector<int64_t> x_dims{s.batch, s.in_channels}, y_dims{s.batch, s.out_channels};
    x_dims.insert(x_dims.end(), input.begin(), input.end());
    y_dims.insert(y_dims.end(), output.begin(), output.end());
    std::vector<int64_t> w_dims{s.in_channels, s.out_channels / s.group};
    w_dims.insert(w_dims.end(), kernel.begin(), kernel.end());
    SetTensor(plan->x, data, Ints(x_dims));
    SetTensor(plan->result, data, Ints(result));
    SetTensor(plan->y, data, Ints(y_dims));
    std::vector<int64_t> bias_dims(y_dims.size(), 1);
    bias_dims[1] = s.out_channels;
    SetTensor(plan->bias, data, Ints(bias_dims));
    CheckCudnn(cudnnCreateFilterDescriptor(&plan->w.handle), "cudnnCreateFilterDescriptor");
    const std::vector<int> w_ints = Ints(w_dims);
    CheckCudnn(cudnnSetFilterNdDescriptor(plan->w.handle, data, CUDNN_TENSOR_NCHW, static_cast<int>(w_ints.size()),
                                          w_ints.data()),
               "cudnnSetFilterNdDescriptor");
    CheckCudnn(cudnnCreateConvolutionDescriptor(&plan->conv.handle), "cudnnCreateConvolutionDescriptor");
    const std::vector<int> pad_ints = Ints(pads), stride_ints = Ints(strides), dilation_ints = Ints(dilations);
    CheckCudnn(cudnnSetConvolutionNdDescriptor(plan->conv.handle, static_cast<int>(pad_ints.size()), pad_ints.data(),
                                               stride_ints.data(), dilation_ints.data(), CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               "cudnnSetConvolutionNdDescriptor");
    CheckCudnn(cudnnSetConvolutionGroupCount(plan->conv.handle, static_cast<int>(s.group)),
               "cudnnSetConvolutionGroupCount");
    // float32: tensor cores (TF32) only when use_tf32 allows; float16: tensor cores always.
    const cudnnMathType_t math = type == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                                 : ep_.options().use_tf32  ? CUDNN_DEFAULT_MATH
                                                           : CUDNN_FMA_MATH;
    CheckCudnn(cudnnSetConvolutionMathType(plan->conv.handle, math), "cudnnSetConvolutionMathType");
    ChooseAlgorithm(*plan, type, stream);
    if (plan->windowed) {
      plan->full_dims = result;
      plan->out_dims = y_dims;
      plan->offset.assign(y_dims.size(), 0);
      for (size_t i = 0; i < pad_begin.size(); ++i) plan->offset[i + 2] = pad_begin[i];
    }
    return plan;
  }

  // cuDNN's heuristic ranking: the first algorithm that takes these descriptors within the workspace limit (and
  // without tensor cores for float32 when use_tf32 = 0), with the math type cuDNN ranked it under.
  void ChooseAlgorithm(ConvTransposePlan& plan, DataType type, cudaStream_t stream) const {
    const bool fma_only = type == DataType::kFloat && !ep_.options().use_tf32;
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    CheckCudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(lease.cudnn(), plan.w.handle, plan.x.handle,
                                                           plan.conv.handle, plan.result.handle,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, results),
               "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    for (int i = 0; i < count; ++i) {
      if (results[i].status != CUDNN_STATUS_SUCCESS || results[i].memory > kWorkspaceLimit) continue;
      if (fma_only && results[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
      plan.algorithm = results[i].algo;
      CheckCudnn(cudnnSetConvolutionMathType(plan.conv.handle, results[i].mathType), "cudnnSetConvolutionMathType");
      CheckCudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(lease.cudnn(), plan.w.handle, plan.x.handle,
                                                              plan.conv.handle, plan.result.handle, plan.algorithm,
                                                              &plan.workspace_bytes),
                 "cudnnGetConvolutionBackwardDataWorkspaceSize");
      return;
    }
    Fail(ErrorCode::kNotImplemented, kEpName, ": cuDNN has no backward-data algorithm for this ConvTranspose");
  }

  const CudaExecutionProvider& ep_;
  ConvTransposeAttributes attrs_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::unique_ptr<ConvTransposePlan>> plans_;
};

}  // namespace

void RegisterConvTransposeKernels(KernelRegistry& registry) {
  registry.Register<ConvTransposeKernel>(MakeDef("ConvTranspose", 1, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
