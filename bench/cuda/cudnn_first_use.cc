// Where the one-time cost of a CUDA session's first convolutions goes (issue 13, "first run" and "creation"):
// a fresh process times, in order, CUDA context creation, cuDNN / cuBLAS / cuBLASLt handle creation, and for
// each of ResNet-50's convolution geometries (batch 1, NHWC) the graph-API steps the CUDA EP takes the first
// time it sees a shape: operation graph, heuristics + execution plans (1, then up to 8), first execution of each
// plan (kernel module loading happens here), and a second execution. Then the same plans built for the same
// geometries from THREADS threads at once (each with its own handle), to show whether cuDNN's one-time work and
// plan building scale across threads.
//
//   tessera_cudnn_first_use [fp32|fp16] [THREADS] [preload]      (default fp32, 4)
//
// Prints one line per event: wall milliseconds since the process started and the event's own duration, and
// the cuDNN libraries that each event mapped into the process (cuDNN 9 opens its sub-libraries on first use).
// `preload` first opens every libcudnn*.so.9 beside libcudnn.so.9 (dlopen, each timed), so that the first plans
// show what is left once the libraries are in.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "providers/cuda/cudnn_graph.h"

namespace cg = tessera::cuda::cudnn_graph;

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    auto s_ = (x);                                                                     \
    if (static_cast<int>(s_) != 0) {                                                   \
      std::fprintf(stderr, "%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

using Clock = std::chrono::steady_clock;
const Clock::time_point g_start = Clock::now();

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// The CUDA libraries (cuDNN, cuBLAS) mapped into the process that were not mapped at the last call, printed.
void PrintNewlyMappedLibraries() {
  static std::set<std::string> seen;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("libcudnn", 0) != 0 && name.rfind("libcublas", 0) != 0) continue;
    if (seen.insert(name).second) std::printf("             mapped %s\n", name.c_str());
  }
}

// Times `what`, printing "at <ms since start>  <duration> ms  <label>".
template <typename F>
auto Timed(const std::string& label, F&& what) {
  const auto t0 = Clock::now();
  if constexpr (std::is_void_v<decltype(what())>) {
    what();
    std::printf("at %8.1f ms  %8.2f ms  %s\n", Ms(g_start, Clock::now()), Ms(t0, Clock::now()), label.c_str());
    PrintNewlyMappedLibraries();
  } else {
    auto result = what();
    std::printf("at %8.1f ms  %8.2f ms  %s\n", Ms(g_start, Clock::now()), Ms(t0, Clock::now()), label.c_str());
    PrintNewlyMappedLibraries();
    return result;
  }
}

// Opens every libcudnn*.so.9 in the folder of the libcudnn.so.9 this process linked, each timed.
void PreloadCudnnLibraries() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudnnCreate), &info) == 0 || info.dli_fname == nullptr) {
    std::printf("preload: cannot find libcudnn.so\n");
    return;
  }
  const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  std::vector<std::filesystem::path> libraries;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libcudnn_", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".so.9")
      libraries.push_back(entry.path());
  }
  std::sort(libraries.begin(), libraries.end());
  for (const auto& library : libraries)
    Timed("dlopen " + library.filename().string(), [&] {
      if (dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) std::printf("  %s\n", dlerror());
    });
}

struct Geometry {
  const char* name;
  int64_t c, hw, k, r, stride, pad;
};
// ResNet-50's distinct convolution geometries at 224x224, batch 1 (a subset large enough to show the trend).
const Geometry kGeometries[] = {
    {"7x7 s2 3->64 @224", 3, 224, 64, 7, 2, 3},    {"1x1 64->64 @56", 64, 56, 64, 1, 1, 0},
    {"3x3 64->64 @56", 64, 56, 64, 3, 1, 1},        {"1x1 64->256 @56", 64, 56, 256, 1, 1, 0},
    {"1x1 256->64 @56", 256, 56, 64, 1, 1, 0},      {"1x1 256->128 @56", 256, 56, 128, 1, 1, 0},
    {"3x3 s2 128->128 @56", 128, 56, 128, 3, 2, 1}, {"1x1 128->512 @28", 128, 28, 512, 1, 1, 0},
    {"3x3 128->128 @28", 128, 28, 128, 3, 1, 1},    {"3x3 256->256 @14", 256, 14, 256, 3, 1, 1},
    {"1x1 1024->256 @14", 1024, 14, 256, 1, 1, 0},  {"3x3 512->512 @7", 512, 7, 512, 3, 1, 1},
};

std::vector<int64_t> NhwcStrides(const std::vector<int64_t>& d) {  // dims NCHW, memory NHWC
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

struct Built {
  std::vector<cg::Descriptor> parts;
  std::vector<cg::Plan> plans;
  std::vector<int64_t> x, w, y;
};

Built Build(cudnnHandle_t cudnn, const Geometry& g, cudnnDataType_t dt, size_t max_plans) {
  Built b;
  const int64_t out = (g.hw + 2 * g.pad - g.r) / g.stride + 1;
  b.x = {1, g.c, g.hw, g.hw};
  b.w = {g.k, g.c, g.r, g.r};
  b.y = {1, g.k, out, out};
  cg::Descriptor tx = cg::MakeTensor({1, dt, b.x, NhwcStrides(b.x), 16});
  cg::Descriptor tw = cg::MakeTensor({2, dt, b.w, NhwcStrides(b.w), 16});
  cg::Descriptor ty = cg::MakeTensor({3, dt, b.y, NhwcStrides(b.y), 16});
  cg::Descriptor conv = cg::MakeConvolution({{g.pad, g.pad}, {g.stride, g.stride}, {1, 1}, CUDNN_DATA_FLOAT});
  cg::Descriptor op = cg::TryMakeConvolutionForward(tx, tw, ty, conv);
  if (!op.defined()) return b;
  cg::Descriptor graph = cg::TryMakeOperationGraph(cudnn, {&op});
  if (!graph.defined()) return b;
  cg::PlanFilter filter;
  filter.max_workspace_bytes = 64 << 20;
  filter.allow_runtime_compiled = false;
  filter.max_plans = max_plans;
  b.plans = cg::MakePlans(cudnn, graph, filter);
  for (cg::Descriptor* p : {&tx, &tw, &ty, &conv, &op, &graph}) b.parts.push_back(std::move(*p));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const bool half = argc > 1 && std::strcmp(argv[1], "fp16") == 0;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const bool preload = argc > 3 && std::strcmp(argv[3], "preload") == 0;
  const cudnnDataType_t dt = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  std::printf("cuDNN %zu, %s, %d threads\n", cudnnGetVersion(), half ? "fp16" : "fp32", threads);
  PrintNewlyMappedLibraries();
  Timed("cudaFree(0): CUDA context", [] { CK(cudaFree(nullptr)); });
  if (preload) PreloadCudnnLibraries();
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudnnHandle_t cudnn;
  Timed("cudnnCreate", [&] { CK(cudnnCreate(&cudnn)); });
  CK(cudnnSetStream(cudnn, stream));
  cublasHandle_t cublas;
  Timed("cublasCreate", [&] { CK(cublasCreate(&cublas)); });
  cublasLtHandle_t lt;
  Timed("cublasLtCreate", [&] { CK(cublasLtCreate(&lt)); });
  void *x = nullptr, *w = nullptr, *y = nullptr, *ws = nullptr;
  CK(cudaMalloc(&x, 64 << 20));
  CK(cudaMalloc(&w, 64 << 20));
  CK(cudaMalloc(&y, 64 << 20));
  CK(cudaMalloc(&ws, 64 << 20));
  CK(cudaMemset(x, 0, 64 << 20));
  CK(cudaMemset(w, 0, 64 << 20));
  double total_first = 0;
  for (const Geometry& g : kGeometries) {
    const auto t0 = Clock::now();
    Built one = Timed(std::string(g.name) + ": graph + heuristics + 1 plan", [&] { return Build(cudnn, g, dt, 1); });
    Built eight = Timed(std::string(g.name) + ": graph + heuristics + up to 8 plans",
                        [&] { return Build(cudnn, g, dt, 8); });
    const int64_t uids[3] = {1, 2, 3};
    void* ptrs[3] = {x, w, y};
    for (size_t i = 0; i < eight.plans.size(); ++i) {
      const std::string label = std::string(g.name) + ": plan " + std::to_string(i) + " [" + eight.plans[i].Describe() + "]";
      Timed(label + " first execute + sync", [&] {
        CK(cg::Execute(cudnn, eight.plans[i], uids, ptrs, 3, ws));
        CK(cudaStreamSynchronize(stream));
      });
      Timed(label + " second execute + sync", [&] {
        CK(cg::Execute(cudnn, eight.plans[i], uids, ptrs, 3, ws));
        CK(cudaStreamSynchronize(stream));
      });
    }
    total_first += Ms(t0, Clock::now());
  }
  std::printf("serial, all geometries: %.1f ms\n", total_first);
  // The same work again from several threads (plans are rebuilt: heuristics and finalization are host work).
  for (int n : {1, threads}) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < n; ++t)
      pool.emplace_back([&, t] {
        cudnnHandle_t h;
        CK(cudnnCreate(&h));
        for (size_t i = t; i < std::size(kGeometries); i += n) Build(h, kGeometries[i], dt, 8);
        cudnnDestroy(h);
      });
    for (auto& th : pool) th.join();
    std::printf("rebuild 8 plans for %zu geometries on %d thread(s): %.1f ms\n", std::size(kGeometries), n,
                Ms(t0, Clock::now()));
  }
  std::printf("done at %.1f ms\n", Ms(g_start, Clock::now()));
  return 0;
}
