// What cuDNN costs the first time a process uses it, step by step: the measurement behind the CUDA EP's early
// cuDNN load (docs/CUDA.md "Session creation"). One fresh process per invocation:
//
//   cudnn_first_use [--preload] [--threads]
//
// prints the milliseconds of: the CUDA context, cudnnCreate, cublasCreate, cublasLtCreate, then for four convolutions of MobileNetV2/ResNet-50
// (float32 and float16, channels-last, each twice) the operation graph, the first plan of cuDNN's mode-A
// heuristics, and one execution (synchronized). --preload first loads cuDNN's sub-libraries with dlopen (timed per
// library); --threads builds the four plans at once on four threads, one cuDNN handle each.
// Build (GPU host): g++ -O2 -std=c++20 -Iinclude -Isrc -I$CUDNN_ROOT/include bench/gpu/cudnn_first_use.cc
//   src/providers/cuda/cudnn_graph.cc -Lbuild-gpu -ltessera -L$CUDNN_ROOT/lib -l:libcudnn.so.9 -lcublasLt -lcublas -lcudart -ldl
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "providers/cuda/cudnn_graph.h"

namespace cg = tessera::cuda::cudnn_graph;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

struct Case {
  const char* name;
  cudnnDataType_t type;
  int64_t n, c, h, w, k, r, stride, pad;
};

std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& d) {  // dims NCHW, memory NHWC
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

// Builds and runs one convolution; prints its step times.
void RunCase(cudnnHandle_t handle, const Case& c, const char* round) {
  const int64_t oh = (c.h + 2 * c.pad - c.r) / c.stride + 1, ow = (c.w + 2 * c.pad - c.r) / c.stride + 1;
  const std::vector<int64_t> xd = {c.n, c.c, c.h, c.w}, wd = {c.k, c.c, c.r, c.r}, yd = {c.n, c.k, oh, ow};
  auto start = Clock::now();
  auto tensor = [&](int64_t uid, const std::vector<int64_t>& d) {
    return cg::MakeTensor({uid, c.type, d, ChannelsLastStrides(d), 16, false});
  };
  cg::Descriptor tx = tensor(1, xd), tw = tensor(2, wd), ty = tensor(3, yd);
  cg::Descriptor conv = cg::MakeConvolution({{c.pad, c.pad}, {c.stride, c.stride}, {1, 1}, CUDNN_DATA_FLOAT});
  cg::Descriptor op = cg::TryMakeConvolutionForward(tx, tw, ty, conv);
  cg::Descriptor graph = cg::TryMakeOperationGraph(handle, {&op});
  const double graph_ms = Ms(start);
  start = Clock::now();
  cg::PlanFilter filter;
  filter.allow_runtime_compiled = false;
  filter.max_plans = 1;
  filter.max_workspace_bytes = 64 << 20;
  std::vector<cg::Plan> plans = graph.defined() ? cg::MakePlans(handle, graph, filter) : std::vector<cg::Plan>();
  const double plan_ms = Ms(start);
  if (plans.empty()) {
    std::printf("%s %s: no plan\n", round, c.name);
    return;
  }
  const size_t elem = c.type == CUDNN_DATA_HALF ? 2 : 4;
  void *x = nullptr, *wt = nullptr, *y = nullptr, *ws = nullptr;
  cudaMalloc(&x, c.n * c.c * c.h * c.w * elem);
  cudaMalloc(&wt, c.k * c.c * c.r * c.r * elem);
  cudaMalloc(&y, c.n * c.k * oh * ow * elem);
  cudaMalloc(&ws, plans[0].workspace_bytes + 16);
  const int64_t uids[3] = {1, 2, 3};
  void* pointers[3] = {x, wt, y};
  start = Clock::now();
  const cudnnStatus_t status = cg::Execute(handle, plans[0], uids, pointers, 3, ws);
  cudaDeviceSynchronize();
  const double run_ms = Ms(start);
  std::printf("%s %-28s graph %7.2f  plan %7.2f  execute %7.2f ms  (%s%s)\n", round, c.name, graph_ms, plan_ms, run_ms,
              plans[0].Describe().c_str(), status == CUDNN_STATUS_SUCCESS ? "" : ", EXECUTE FAILED");
  cudaFree(x);
  cudaFree(wt);
  cudaFree(y);
  cudaFree(ws);
}

}  // namespace

int main(int argc, char** argv) {
  bool preload = false, threads = false;
  for (int i = 1; i < argc; ++i) {
    preload |= std::strcmp(argv[i], "--preload") == 0;
    threads |= std::strcmp(argv[i], "--threads") == 0;
  }
  auto start = Clock::now();
  cudaFree(nullptr);
  std::printf("CUDA context %.2f ms\n", Ms(start));
  if (preload) {
    for (const char* lib : {"libcudnn_graph.so.9", "libcudnn_heuristic.so.9", "libcudnn_engines_precompiled.so.9",
                            "libcudnn_cnn.so.9", "libcudnn_ops.so.9"}) {
      start = Clock::now();
      void* h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
      std::printf("dlopen %-36s %7.2f ms%s\n", lib, Ms(start), h == nullptr ? " (failed)" : "");
    }
  }
  start = Clock::now();
  cudnnHandle_t handle = nullptr;
  cudnnCreate(&handle);
  std::printf("cudnnCreate %.2f ms\n", Ms(start));
  start = Clock::now();
  cublasHandle_t blas = nullptr;
  cublasCreate(&blas);
  std::printf("cublasCreate %.2f ms\n", Ms(start));
  start = Clock::now();
  cublasLtHandle_t lt = nullptr;
  cublasLtCreate(&lt);
  std::printf("cublasLtCreate %.2f ms\n", Ms(start));
  const std::vector<Case> cases = {
      {"f32 3x3 s2 C3->32 224", CUDNN_DATA_FLOAT, 1, 3, 224, 224, 32, 3, 2, 1},
      {"f32 1x1 C32->16 112", CUDNN_DATA_FLOAT, 1, 32, 112, 112, 16, 1, 1, 0},
      {"f16 1x1 C32->16 112", CUDNN_DATA_HALF, 1, 32, 112, 112, 16, 1, 1, 0},
      {"f16 3x3 C64->64 56", CUDNN_DATA_HALF, 1, 64, 56, 56, 64, 3, 1, 1},
  };
  if (threads) {
    start = Clock::now();
    std::vector<std::thread> workers;
    for (const Case& c : cases)
      workers.emplace_back([&c] {
        cudnnHandle_t own = nullptr;
        cudnnCreate(&own);
        RunCase(own, c, "threaded");
        cudnnDestroy(own);
      });
    for (std::thread& t : workers) t.join();
    std::printf("four cases on four threads: %.2f ms\n", Ms(start));
  }
  for (const char* round : {"first ", "second"}) {
    start = Clock::now();
    for (const Case& c : cases) RunCase(handle, c, round);
    std::printf("%s round: %.2f ms\n", round, Ms(start));
  }
  cudnnDestroy(handle);
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  return 0;
}
