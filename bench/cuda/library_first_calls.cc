// What the CUDA libraries cost a process the first time, measured one call at a time: the CUDA context,
// cuDNN's and cuBLAS's handles, the first convolution through cuDNN's legacy API (which loads cuDNN's
// sub-libraries and kernels), a second algorithm's first call, the same call once warm, the first cuBLAS GEMM.
// These are the floors under a session's creation time (docs/CUDA.md "Session creation").
//
// Built with the CUDA plugin (target tessera_library_first_calls); on the GPU host:
//   build-gpu/tessera_library_first_calls [background]   ("background": cuDNN's first convolution runs on a second
// thread while the main thread creates cuBLAS and makes its first GEMM, as a session could overlap them)
// bench/cuda/cudnn_first_use.cc times the graph API's first plans per ResNet-50 geometry instead.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "probe_checks.h"

namespace {

using probe::Clock;
using probe::Ms;

const Clock::time_point kStart = Clock::now();

#define CUBLAS(x) ::probe::Check((x) == CUBLAS_STATUS_SUCCESS, #x)

template <typename F>
double Timed(const char* what, F&& f) {
  const Clock::time_point a = Clock::now();
  f();
  const Clock::time_point b = Clock::now();
  std::printf("%10.3f ms  %-60s (at %.1f ms)\n", Ms(a, b), what, Ms(kStart, b));
  std::fflush(stdout);
  return Ms(a, b);
}

// One float16 NHWC 3x3 convolution of [1,64,56,56] with bias and ReLU through cuDNN's legacy API.
struct Conv {
  cudnnHandle_t cudnn = nullptr;
  cudaStream_t stream = nullptr;
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t relu;
  void *dx, *dy, *dw, *db, *ws;

  void Create() {
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDNN(cudnnCreate(&cudnn));
    CUDNN(cudnnSetStream(cudnn, stream));
    CUDNN(cudnnCreateTensorDescriptor(&x));
    CUDNN(cudnnCreateTensorDescriptor(&y));
    CUDNN(cudnnCreateTensorDescriptor(&b));
    CUDNN(cudnnCreateFilterDescriptor(&w));
    CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    CUDNN(cudnnCreateActivationDescriptor(&relu));
    CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 64, 56, 56));
    CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 64, 56, 56));
    CUDNN(cudnnSetTensor4dDescriptor(b, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 64, 1, 1));
    CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 64, 64, 3, 3));
    CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH));
    CUDNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
    CUDA(cudaMalloc(&dx, 64 * 56 * 56 * 2));
    CUDA(cudaMalloc(&dy, 64 * 56 * 56 * 2));
    CUDA(cudaMalloc(&dw, 64 * 64 * 9 * 2));
    CUDA(cudaMalloc(&db, 64 * 2));
    CUDA(cudaMalloc(&ws, 64 << 20));
    CUDA(cudaMemset(dx, 0, 64 * 56 * 56 * 2));
    CUDA(cudaMemset(dw, 0, 64 * 64 * 9 * 2));
    CUDA(cudaMemset(db, 0, 64 * 2));
  }

  void Run(cudnnConvolutionFwdAlgo_t algo) {
    const float one = 1, zero = 0;
    CUDNN(cudnnConvolutionBiasActivationForward(cudnn, &one, x, dx, w, dw, conv, algo, ws, 64 << 20, &zero, y, dy, b,
                                                db, relu, y, dy));
    CUDA(cudaStreamSynchronize(stream));
  }
};

void CublasPart() {
  cublasHandle_t cublas;
  cublasLtHandle_t lt;
  Timed("cublasCreate", [&] { CUBLAS(cublasCreate(&cublas)); });
  Timed("cublasLtCreate", [&] { CUBLAS(cublasLtCreate(&lt)); });
  void *a, *b, *c;
  CUDA(cudaMalloc(&a, 768 * 768 * 2));
  CUDA(cudaMalloc(&b, 768 * 768 * 2));
  CUDA(cudaMalloc(&c, 768 * 768 * 2));
  const float one = 1, zero = 0;
  const auto gemm = [&] {
    CUBLAS(cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, 768, 768, 768, &one, a, CUDA_R_16F, 768, b, CUDA_R_16F, 768,
                        &zero, c, CUDA_R_16F, 768, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUDA(cudaDeviceSynchronize());
  };
  Timed("first cublasGemmEx fp16 768^3", gemm);
  Timed("second cublasGemmEx fp16 768^3", gemm);
}

}  // namespace

int main(int argc, char** argv) {
  const bool background = argc > 1 && std::strcmp(argv[1], "background") == 0;
  Timed("cudaFree(0): the CUDA context", [] { CUDA(cudaFree(nullptr)); });
  Conv conv;
  const auto cudnn_part = [&] {
    Timed("cudnnCreate + descriptors + buffers", [&] { conv.Create(); });
    Timed("first conv+bias+relu, IMPLICIT_PRECOMP_GEMM (fp16 NHWC)",
          [&] { conv.Run(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM); });
    Timed("second conv+bias+relu, same algorithm", [&] { conv.Run(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM); });
    Timed("first conv+bias+relu, IMPLICIT_GEMM", [&] { conv.Run(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM); });
    int count = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    Timed("cudnnGetConvolutionForwardAlgorithm_v7", [&] {
      CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(conv.cudnn, conv.x, conv.w, conv.conv, conv.y, 8, &count, perf));
    });
  };
  if (background) {
    const Clock::time_point a = Clock::now();
    std::thread t(cudnn_part);
    CublasPart();
    t.join();
    std::printf("%10.3f ms  cuDNN on a second thread while cuBLAS started, both done\n", Ms(a, Clock::now()));
  } else {
    cudnn_part();
    CublasPart();
  }
  std::printf("%10.3f ms  total since main\n", Ms(kStart, Clock::now()));
  return 0;
}
