#include "providers/cuda/library_warmup.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>
#include <set>

#include "tessera/ep/logging.h"

namespace tessera::cuda {
namespace {

// GPUs whose warm-up this process has started.
std::mutex started_mutex;
std::set<int> started;

bool Claim(int ordinal) {
  std::lock_guard<std::mutex> lock(started_mutex);
  return started.insert(ordinal).second;
}

// One kind of convolution a session's preparation runs start with, through cuDNN's legacy API with
// IMPLICIT_PRECOMP_GEMM over a [1, 16, 8, 8] map: plain, then fused with bias and ReLU
// (cudnnConvolutionBiasActivationForward).
struct ConvKind {
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  cudnnMathType_t math;
  int kernel;  // 1 or 3 (3x3 with padding 1)
};

// Each kind of call loads engines of its own the first time: a session's first float16 NHWC convolution waited
// ~70 ms for cuDNN's engines, its first fused 1x1 one another ~127 ms (cuDNN API log, ResNet-50 fp16, H200, session
// 27). The kinds run one after the other on one handle; the caller gives kinds that load different engines to
// different threads, so that those loads overlap.
void WarmUpConvolutions(int ordinal, std::vector<ConvKind> kinds) {
  if (cudaSetDevice(ordinal) != cudaSuccess) return;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  void* memory = nullptr;
  constexpr int kC = 16, kHw = 8;
  constexpr size_t kMap = kC * kHw * kHw * sizeof(float), kFilter = kC * kC * 3 * 3 * sizeof(float);
  constexpr size_t kWorkspace = size_t{4} << 20;
  constexpr size_t kBytes = 2 * kMap + kFilter + kC * sizeof(float) + kWorkspace;
  bool ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
            cudaMalloc(&memory, kBytes) == cudaSuccess && cudaMemsetAsync(memory, 0, kBytes, stream) == cudaSuccess &&
            cudnnCreate(&cudnn) == CUDNN_STATUS_SUCCESS && cudnnSetStream(cudnn, stream) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&bias) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateActivationDescriptor(&relu) == CUDNN_STATUS_SUCCESS &&
            cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0) ==
                CUDNN_STATUS_SUCCESS;
  char* base = static_cast<char*>(memory);
  void* const x_data = base;
  void* const y_data = base + kMap;
  void* const w_data = base + 2 * kMap;
  void* const bias_data = base + 2 * kMap + kFilter;
  void* const workspace = base + 2 * kMap + kFilter + kC * sizeof(float);
  const float one = 1.0f, zero = 0.0f;
  const cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  for (const ConvKind& k : kinds) {
    const int pad = k.kernel / 2;
    size_t needed = 0;
    ok = ok && cudnnSetTensor4dDescriptor(x, k.format, k.type, 1, kC, kHw, kHw) == CUDNN_STATUS_SUCCESS &&
         cudnnSetTensor4dDescriptor(y, k.format, k.type, 1, kC, kHw, kHw) == CUDNN_STATUS_SUCCESS &&
         cudnnSetTensor4dDescriptor(bias, k.format, k.type, 1, kC, 1, 1) == CUDNN_STATUS_SUCCESS &&
         cudnnSetFilter4dDescriptor(w, k.type, k.format, kC, kC, k.kernel, k.kernel) == CUDNN_STATUS_SUCCESS &&
         cudnnSetConvolution2dDescriptor(conv, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
             CUDNN_STATUS_SUCCESS &&
         cudnnSetConvolutionMathType(conv, k.math) == CUDNN_STATUS_SUCCESS &&
         cudnnGetConvolutionForwardWorkspaceSize(cudnn, x, w, conv, y, algorithm, &needed) == CUDNN_STATUS_SUCCESS &&
         needed <= kWorkspace &&
         cudnnConvolutionForward(cudnn, &one, x, x_data, w, w_data, conv, algorithm, workspace, needed, &zero, y,
                                 y_data) == CUDNN_STATUS_SUCCESS &&
         cudnnConvolutionBiasActivationForward(cudnn, &one, x, x_data, w, w_data, conv, algorithm, workspace, needed,
                                               &zero, y, y_data, bias, bias_data, relu, y,
                                               y_data) == CUDNN_STATUS_SUCCESS;
  }
  ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
  if (!ok) Log(LogLevel::kVerbose, "CUDA EP: cuDNN's warm-up calls on GPU ", ordinal, " failed (ignored)");
  if (relu) cudnnDestroyActivationDescriptor(relu);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (bias) cudnnDestroyTensorDescriptor(bias);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (x) cudnnDestroyTensorDescriptor(x);
  if (cudnn) cudnnDestroy(cudnn);
  if (stream) cudaStreamSynchronize(stream);
  if (memory) cudaFree(memory);
  if (stream) cudaStreamDestroy(stream);
}

// One [64, 64] x [64, 64] product through cuBLASLt with its default algorithm in each precision a session's
// products use: float32, TF32 and float16 (float32 accumulation).
void WarmUpCublasLt(int ordinal) {
  if (cudaSetDevice(ordinal) != cudaSuccess) return;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* memory = nullptr;
  constexpr int kN = 64;
  constexpr size_t kMatrix = kN * kN * sizeof(float);
  bool ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
            cudaMalloc(&memory, 3 * kMatrix) == cudaSuccess &&
            cudaMemsetAsync(memory, 0, 3 * kMatrix, stream) == cudaSuccess && cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS;
  struct Case {
    cudaDataType_t data;
    cublasComputeType_t compute;
  };
  const Case cases[] = {{CUDA_R_32F, CUBLAS_COMPUTE_32F},
                        {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
                        {CUDA_R_16F, CUBLAS_COMPUTE_32F}};
  const float one = 1.0f, zero = 0.0f;
  char* base = static_cast<char*>(memory);
  for (const Case& c : cases) {
    if (!ok) break;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t layout = nullptr;
    ok = cublasLtMatmulDescCreate(&op, c.compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutCreate(&layout, c.data, kN, kN, kN) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmul(lt, op, &one, base, layout, base + kMatrix, layout, &zero, base + 2 * kMatrix, layout,
                        base + 2 * kMatrix, layout, nullptr, nullptr, 0, stream) == CUBLAS_STATUS_SUCCESS;
    if (layout) cublasLtMatrixLayoutDestroy(layout);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
  if (!ok) Log(LogLevel::kVerbose, "CUDA EP: cuBLASLt's warm-up calls on GPU ", ordinal, " failed (ignored)");
  if (lt) cublasLtDestroy(lt);
  if (stream) cudaStreamSynchronize(stream);
  if (memory) cudaFree(memory);
  if (stream) cudaStreamDestroy(stream);
}

}  // namespace

LibraryWarmup::LibraryWarmup(int ordinal, bool enabled) {
  if (!enabled || !Claim(ordinal)) return;
  constexpr cudnnDataType_t kHalf = CUDNN_DATA_HALF, kFloat = CUDNN_DATA_FLOAT;
  constexpr cudnnTensorFormat_t kNhwc = CUDNN_TENSOR_NHWC, kNchw = CUDNN_TENSOR_NCHW;
  constexpr cudnnMathType_t kTensorOps = CUDNN_TENSOR_OP_MATH, kDefault = CUDNN_DEFAULT_MATH;
  threads_.emplace_back(WarmUpConvolutions, ordinal, std::vector<ConvKind>{{kHalf, kNhwc, kTensorOps, 3}});
  threads_.emplace_back(WarmUpConvolutions, ordinal, std::vector<ConvKind>{{kHalf, kNhwc, kTensorOps, 1}});
  threads_.emplace_back(WarmUpConvolutions, ordinal,
                        std::vector<ConvKind>{{kFloat, kNhwc, kDefault, 3}, {kFloat, kNhwc, kDefault, 1}});
  threads_.emplace_back(WarmUpConvolutions, ordinal, std::vector<ConvKind>{{kFloat, kNchw, kDefault, 3}});
  threads_.emplace_back(WarmUpCublasLt, ordinal);
}

void LibraryWarmup::Wait() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

LibraryWarmup::~LibraryWarmup() { Wait(); }

}  // namespace tessera::cuda
