// What the first call of each convolution geometry costs through cuDNN's legacy API, and whether calls made ahead
// on other threads (other handles) take that cost off the thread that comes later. MobileNetV2 fp16's convolutions
// as a replayed Tessera session runs them (NHWC float16, IMPLICIT_PRECOMP_GEMM, tensor cores, bias fused through
// cudnnConvolutionBiasActivationForward): in its warm-cache session creation each new geometry's first call took
// 5-9 ms, one after another (bench/results/gpu-2026-11-29-session35/lease1).
//
// Built with the CUDA plugin (target tessera_legacy_conv_first_calls); on the GPU host, one process per mode:
//   build-gpu/tessera_legacy_conv_first_calls serial           every geometry's first call on the main thread
//   build-gpu/tessera_legacy_conv_first_calls ahead THREADS    first calls on THREADS worker threads (a handle
//                                                              each), then the main thread's first calls
//   build-gpu/tessera_legacy_conv_first_calls other-handle     first calls on handle A, then on handle B (same thread)
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "probe_checks.h"

namespace {

using probe::Check;
using probe::Clock;
using probe::Ms;

struct Geometry {
  int c, k, hw, kernel, stride;  // input channels, output channels, input height = width, filter size, stride
};

// MobileNetV2's convolutions other than the depthwise ones (Tessera runs those with its own kernel).
const Geometry kGeometries[] = {
    {3, 32, 224, 3, 2},  {32, 16, 112, 1, 1}, {16, 96, 112, 1, 1},  {96, 24, 56, 1, 1},   {24, 144, 56, 1, 1},
    {144, 24, 56, 1, 1}, {144, 32, 28, 1, 1}, {32, 192, 28, 1, 1},  {192, 32, 28, 1, 1},  {192, 64, 14, 1, 1},
    {64, 384, 14, 1, 1}, {384, 64, 14, 1, 1}, {384, 96, 14, 1, 1},  {96, 576, 14, 1, 1},  {576, 96, 14, 1, 1},
    {576, 160, 7, 1, 1}, {160, 960, 7, 1, 1}, {960, 160, 7, 1, 1},  {960, 320, 7, 1, 1},  {320, 1280, 7, 1, 1},
};
constexpr int kCount = sizeof(kGeometries) / sizeof(kGeometries[0]);

// A handle, a stream and device buffers big enough for every geometry.
struct Caller {
  cudnnHandle_t cudnn = nullptr;
  cudaStream_t stream = nullptr;
  void *x = nullptr, *y = nullptr, *w = nullptr, *bias = nullptr, *workspace = nullptr;
  static constexpr size_t kMap = size_t{2} << 20, kWorkspace = size_t{16} << 20;

  void Create() {
    CUDA(cudaSetDevice(0));
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDNN(cudnnCreate(&cudnn));
    CUDNN(cudnnSetStream(cudnn, stream));
    for (void** p : {&x, &y, &w, &bias}) {
      CUDA(cudaMalloc(p, kMap));
      CUDA(cudaMemsetAsync(*p, 0, kMap, stream));
    }
    CUDA(cudaMalloc(&workspace, kWorkspace));
    CUDA(cudaStreamSynchronize(stream));
  }

  // One call of `g`, waited for.
  void Call(const Geometry& g) {
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    CUDNN(cudnnCreateTensorDescriptor(&xd));
    CUDNN(cudnnCreateTensorDescriptor(&yd));
    CUDNN(cudnnCreateTensorDescriptor(&bd));
    CUDNN(cudnnCreateFilterDescriptor(&wd));
    CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    CUDNN(cudnnCreateActivationDescriptor(&ad));
    const int pad = g.kernel / 2, out = (g.hw + 2 * pad - g.kernel) / g.stride + 1;
    CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, g.c, g.hw, g.hw));
    CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, g.k, out, out));
    CUDNN(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, g.k, 1, 1));
    CUDNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, g.k, g.c, g.kernel, g.kernel));
    CUDNN(cudnnSetConvolution2dDescriptor(cd, pad, pad, g.stride, g.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT));
    CUDNN(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    CUDNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    size_t needed = 0;
    CUDNN(cudnnGetConvolutionForwardWorkspaceSize(cudnn, xd, wd, cd, yd, algo, &needed));
    Check(needed <= kWorkspace, "workspace");
    const float one = 1.0f, zero = 0.0f;
    CUDNN(cudnnConvolutionBiasActivationForward(cudnn, &one, xd, x, wd, w, cd, algo, workspace, needed, &zero, yd, y,
                                                bd, bias, ad, yd, y));
    CUDA(cudaStreamSynchronize(stream));
    cudnnDestroyActivationDescriptor(ad);
    cudnnDestroyConvolutionDescriptor(cd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyTensorDescriptor(bd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyTensorDescriptor(xd);
  }
};

// Times the first and the second call of every geometry on `caller`, one after another.
void TimeCalls(Caller& caller, const char* label) {
  double first = 0, second = 0;
  std::printf("%s:", label);
  for (const Geometry& g : kGeometries) {
    Clock::time_point a = Clock::now();
    caller.Call(g);
    Clock::time_point b = Clock::now();
    caller.Call(g);
    Clock::time_point c = Clock::now();
    first += Ms(a, b);
    second += Ms(b, c);
    std::printf(" %.1f", Ms(a, b));
  }
  std::printf("\n%s: first calls %.1f ms in all, second calls %.1f ms\n", label, first, second);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "serial";
  const Clock::time_point start = Clock::now();
  CUDA(cudaFree(nullptr));
  const Clock::time_point context = Clock::now();
  std::printf("context %.1f ms\n", Ms(start, context));
  // The libraries' first call (sub-library and engine loading) is paid first, on the main thread, with a geometry
  // not in the list, so that the rows below are each geometry's own first-call cost.
  Caller main_caller;
  main_caller.Create();
  Clock::time_point a = Clock::now();
  main_caller.Call({8, 8, 8, 1, 1});
  main_caller.Call({8, 8, 8, 3, 1});
  std::printf("library first calls %.1f ms\n", Ms(a, Clock::now()));
  if (mode == "serial") {
    TimeCalls(main_caller, "main thread");
  } else if (mode == "ahead") {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
    std::atomic<int> next{0};
    a = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        Caller worker;
        worker.Create();
        for (int i = next++; i < kCount; i = next++) worker.Call(kGeometries[i]);
      });
    for (std::thread& t : workers) t.join();
    std::printf("first calls on %d worker threads: %.1f ms wall\n", threads, Ms(a, Clock::now()));
    TimeCalls(main_caller, "main thread after them");
  } else if (mode == "other-handle") {
    TimeCalls(main_caller, "handle A");
    Caller other;
    other.Create();
    TimeCalls(other, "handle B");
  } else {
    std::fprintf(stderr, "usage: %s serial | ahead THREADS | other-handle\n", argv[0]);
    return 2;
  }
  std::printf("total %.1f ms\n", Ms(start, Clock::now()));
  return 0;
}
