// Host cost per call of the library entry points a CUDA EP step uses, and the device time of what they
// queue: legacy cuDNN convolution calls, cuDNN graph-API plans (conv alone and conv + bias + residual + Relu),
// cuBLAS / cuBLASLt matrix products, a kernel launch, event record/wait and the device guard's calls.
//
//   tessera_cuda_call_overhead [calls]        (default 400; prints one table)
//
// Host time is measured around `calls` back-to-back calls with no synchronization between them (the queue
// holds them); device time from timing events around the same calls.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
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

cudaStream_t g_stream;
int g_calls = 400;

__global__ void Empty() {}

struct Row {
  std::string name;
  double host_us, device_us;
};
std::vector<Row> g_rows;

// Runs `call` g_calls times after a warm-up; records host and device microseconds per call.
void Measure(const std::string& name, const std::function<void()>& call) {
  for (int i = 0; i < 10; ++i) call();
  CK(cudaStreamSynchronize(g_stream));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  double best_host = 1e30;
  float device_ms = 0;
  for (int round = 0; round < 3; ++round) {
    CK(cudaEventRecord(start, g_stream));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < g_calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    CK(cudaEventRecord(stop, g_stream));
    CK(cudaEventSynchronize(stop));
    best_host = std::min(best_host, std::chrono::duration<double, std::micro>(t1 - t0).count() / g_calls);
    CK(cudaEventElapsedTime(&device_ms, start, stop));
  }
  g_rows.push_back({name, best_host, 1000.0 * device_ms / g_calls});
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// What `call` queues on g_stream captured once into a CUDA graph, measured as one cudaGraphLaunch per call: the
// host cost of a step graph (src/providers/cuda/step_graphs.h).
void MeasureCaptured(const std::string& name, const std::function<void()>& call) {
  CK(cudaStreamSynchronize(g_stream));
  CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
  call();
  cudaGraph_t graph = nullptr;
  CK(cudaStreamEndCapture(g_stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  Measure(name + ", step graph", [&] { CK(cudaGraphLaunch(exec, g_stream)); });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

void* DeviceRandom(size_t bytes, bool half) {
  void* p = nullptr;
  CK(cudaMalloc(&p, bytes));
  std::vector<unsigned char> host(bytes);
  const size_t n = bytes / (half ? 2 : 4);
  for (size_t i = 0; i < n; ++i) {
    const float v = (std::rand() % 2001 - 1000) / 4000.0f;
    if (half) {
      const __half h = __float2half(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(host.data() + 4 * i, &v, 4);
    }
  }
  CK(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
  return p;
}

struct ConvCase {
  const char* name;
  int n, c, h, w, k, r, pad, stride;
  bool half;  // float16 NHWC; else float32 NCHW (TF32)
};

std::vector<int64_t> Strides(const std::vector<int64_t>& d, bool nhwc) {  // d in NCHW order
  if (!nhwc) return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

void ConvBench(cudnnHandle_t cudnn, const ConvCase& cc) {
  const int p = (cc.h + 2 * cc.pad - cc.r) / cc.stride + 1;
  const bool nhwc = cc.half;
  const size_t es = cc.half ? 2 : 4;
  const std::vector<int64_t> xd = {cc.n, cc.c, cc.h, cc.w}, wd = {cc.k, cc.c, cc.r, cc.r}, yd = {cc.n, cc.k, p, p};
  void* x = DeviceRandom(es * cc.n * cc.c * cc.h * cc.w, cc.half);
  void* w = DeviceRandom(es * cc.k * cc.c * cc.r * cc.r, cc.half);
  void* y = DeviceRandom(es * cc.n * cc.k * p * p, cc.half);
  void* z = DeviceRandom(es * cc.n * cc.k * p * p, cc.half);
  void* b = DeviceRandom(es * cc.k, cc.half);
  void* ws = nullptr;
  const size_t ws_bytes = size_t{256} << 20;
  CK(cudaMalloc(&ws, ws_bytes));
  const cudnnDataType_t dt = cc.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;

  // ---- legacy API
  cudnnTensorDescriptor_t xdesc, ydesc, bdesc;
  cudnnFilterDescriptor_t wdesc;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t act;
  CK(cudnnCreateTensorDescriptor(&xdesc));
  CK(cudnnCreateTensorDescriptor(&ydesc));
  CK(cudnnCreateTensorDescriptor(&bdesc));
  CK(cudnnCreateFilterDescriptor(&wdesc));
  CK(cudnnCreateConvolutionDescriptor(&conv));
  CK(cudnnCreateActivationDescriptor(&act));
  const cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  CK(cudnnSetTensor4dDescriptor(xdesc, fmt, dt, cc.n, cc.c, cc.h, cc.w));
  CK(cudnnSetTensor4dDescriptor(ydesc, fmt, dt, cc.n, cc.k, p, p));
  CK(cudnnSetTensor4dDescriptor(bdesc, CUDNN_TENSOR_NCHW, dt, 1, cc.k, 1, 1));
  CK(cudnnSetFilter4dDescriptor(wdesc, dt, fmt, cc.k, cc.c, cc.r, cc.r));
  CK(cudnnSetConvolution2dDescriptor(conv, cc.pad, cc.pad, cc.stride, cc.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                     CUDNN_DATA_FLOAT));
  CK(cudnnSetConvolutionMathType(conv, cc.half ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH));
  CK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  CK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn, xdesc, wdesc, conv, ydesc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                            perf));
  cudnnConvolutionFwdAlgo_t algo = perf[0].algo;
  size_t algo_ws = 0;
  CK(cudnnGetConvolutionForwardWorkspaceSize(cudnn, xdesc, wdesc, conv, ydesc, algo, &algo_ws));
  const float one = 1.0f, zero = 0.0f;
  const std::string tag = std::string(cc.name) + (cc.half ? " fp16 NHWC" : " fp32 NCHW");
  Measure(tag + ": legacy ConvolutionForward (algo " + std::to_string(algo) + ")", [&] {
    CK(cudnnConvolutionForward(cudnn, &one, xdesc, x, wdesc, w, conv, algo, ws, algo_ws, &zero, ydesc, y));
  });
  Measure(tag + ": legacy + cudnnSetStream", [&] {
    CK(cudnnSetStream(cudnn, g_stream));
    CK(cudnnConvolutionForward(cudnn, &one, xdesc, x, wdesc, w, conv, algo, ws, algo_ws, &zero, ydesc, y));
  });
  size_t fused_ws = 0;
  CK(cudnnGetConvolutionForwardWorkspaceSize(cudnn, xdesc, wdesc, conv, ydesc, algo, &fused_ws));
  if (cudnnConvolutionBiasActivationForward(cudnn, &one, xdesc, x, wdesc, w, conv, algo, ws, fused_ws, &one, ydesc, z,
                                            bdesc, b, act, ydesc, y) == CUDNN_STATUS_SUCCESS) {
    const auto fused = [&] {
      CK(cudnnConvolutionBiasActivationForward(cudnn, &one, xdesc, x, wdesc, w, conv, algo, ws, fused_ws, &one, ydesc,
                                               z, bdesc, b, act, ydesc, y));
    };
    Measure(tag + ": legacy ConvBiasActivation (relu, z)", fused);
    MeasureCaptured(tag + ": legacy ConvBiasActivation (relu, z)", fused);
  }

  // ---- graph API
  const int64_t align = 16;
  cg::Descriptor tx = cg::MakeTensor({1, dt, xd, Strides(xd, nhwc), align});
  cg::Descriptor tw = cg::MakeTensor({2, dt, wd, Strides(wd, nhwc), align});
  cg::Descriptor ty = cg::MakeTensor({3, dt, yd, Strides(yd, nhwc), align});
  cg::Descriptor tb = cg::MakeTensor({4, dt, {1, cc.k, 1, 1}, {cc.k, 1, cc.k, cc.k}, align});
  cg::Descriptor tz = cg::MakeTensor({5, dt, yd, Strides(yd, nhwc), align});
  cg::Descriptor conv_desc = cg::MakeConvolution({{cc.pad, cc.pad}, {cc.stride, cc.stride}, {1, 1}, CUDNN_DATA_FLOAT});
  auto conv_op = [&](const cg::Descriptor& out) {
    cg::Descriptor op = cg::TryMakeConvolutionForward(tx, tw, out, conv_desc);
    if (!op.defined()) {
      std::fprintf(stderr, "%s: cuDNN refused the convolution operation\n", tag.c_str());
      std::exit(1);
    }
    return op;
  };
  cg::PlanFilter filter;
  filter.max_workspace_bytes = ws_bytes;
  filter.max_plans = 4;
  {
    cg::Descriptor op = conv_op(ty);
    cg::Descriptor graph = cg::TryMakeOperationGraph(cudnn, {&op});
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<cg::Plan> plans = graph.defined() ? cg::MakePlans(cudnn, graph, filter) : std::vector<cg::Plan>{};
    const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s conv-only graph: %zu plans in %.1f ms\n", tag.c_str(), plans.size(), build_ms);
    const int64_t uids[3] = {1, 2, 3};
    void* ptrs[3] = {x, w, y};
    for (size_t i = 0; i < plans.size() && i < 2; ++i) {
      Measure(tag + ": graph conv [" + plans[i].Describe() + "]",
              [&] { CK(cg::Execute(cudnn, plans[i], uids, ptrs, 3, ws)); });
      cudnnStatus_t made = CUDNN_STATUS_SUCCESS;
      cg::Descriptor pack = cg::MakeVariantPack(uids, ptrs, 3, ws, &made);
      CK(made);
      Measure(tag + ": graph conv, cached variant pack [" + plans[i].Describe() + "]",
              [&] { CK(cg::Execute(cudnn, plans[i], pack)); });
      // As eager sessions run it: the plan, then an epilogue kernel (an empty one here).
      MeasureCaptured(tag + ": graph conv + epilogue kernel [" + plans[i].Describe() + "]", [&] {
        CK(cg::Execute(cudnn, plans[i], pack));
        Empty<<<1, 32, 0, g_stream>>>();
      });
    }
  }
  {
    cg::Descriptor acc(cg::MakeTensor({100, CUDNN_DATA_FLOAT, yd, Strides(yd, nhwc), align, true}));
    cg::Descriptor biased(cg::MakeTensor({101, CUDNN_DATA_FLOAT, yd, Strides(yd, nhwc), align, true}));
    cg::Descriptor summed(cg::MakeTensor({102, CUDNN_DATA_FLOAT, yd, Strides(yd, nhwc), align, true}));
    cg::Descriptor op = conv_op(acc);
    cg::Descriptor add_b = cg::MakePointwise(CUDNN_POINTWISE_ADD, acc, &tb, biased);
    cg::Descriptor add_z = cg::MakePointwise(CUDNN_POINTWISE_ADD, biased, &tz, summed);
    cg::Descriptor relu = cg::MakePointwise(CUDNN_POINTWISE_RELU_FWD, summed, nullptr, ty);
    cg::Descriptor graph = cg::TryMakeOperationGraph(cudnn, {&op, &add_b, &add_z, &relu});
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<cg::Plan> plans = graph.defined() ? cg::MakePlans(cudnn, graph, filter) : std::vector<cg::Plan>{};
    const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s fused graph (graph %s): %zu plans in %.1f ms\n", tag.c_str(), graph.defined() ? "ok" : "refused",
                plans.size(), build_ms);
    const int64_t uids[5] = {1, 2, 3, 4, 5};
    void* ptrs[5] = {x, w, y, b, z};
    for (size_t i = 0; i < plans.size() && i < 2; ++i) {
      Measure(tag + ": graph conv+bias+z+relu [" + plans[i].Describe() + "]",
              [&] { CK(cg::Execute(cudnn, plans[i], uids, ptrs, 5, ws)); });
    }
  }
  cudnnDestroyTensorDescriptor(xdesc);
  cudnnDestroyTensorDescriptor(ydesc);
  cudnnDestroyTensorDescriptor(bdesc);
  cudnnDestroyFilterDescriptor(wdesc);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyActivationDescriptor(act);
  for (void* ptr : {x, w, y, z, b, ws}) cudaFree(ptr);
}

void GemmBench() {
  cublasHandle_t cublas;
  CK(cublasCreate(&cublas));
  CK(cublasSetStream(cublas, g_stream));
  void* cws = nullptr;
  CK(cudaMalloc(&cws, 32 << 20));
  CK(cublasSetWorkspace(cublas, cws, 32 << 20));
  const int m = 1, k = 2048, n = 1000;
  void* a = DeviceRandom(4 * m * k, false);
  void* b = DeviceRandom(4 * k * n, false);
  void* c = DeviceRandom(4 * m * n, false);
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    CK(cublasGemmStridedBatchedEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_32F, n, 0, a, CUDA_R_32F,
                                  k, 0, &zero, c, CUDA_R_32F, n, 0, 1, CUBLAS_COMPUTE_32F_FAST_TF32,
                                  CUBLAS_GEMM_DEFAULT));
  };
  Measure("Gemm 1x2048x1000 fp32: cublasGemmStridedBatchedEx", gemm);
  Measure("Gemm 1x2048x1000 fp32: + cublasSetStream + SetWorkspace", [&] {
    CK(cublasSetStream(cublas, g_stream));
    CK(cublasSetWorkspace(cublas, cws, 32 << 20));
    gemm();
  });
  // cuBLASLt with a cached algorithm.
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op;
  CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, n, k, n));  // B as column-major n x k
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, m, k));  // A as column-major k x m
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  size_t cap = 32 << 20;
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &cap, sizeof(cap)));
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found));
  const auto lt_matmul = [&] {
    CK(cublasLtMatmul(lt, op, &one, b, la, a, lb, &zero, c, lc, c, lc, &heur.algo, cws, cap, g_stream));
  };
  Measure("Gemm 1x2048x1000 fp32: cublasLtMatmul (cached algo)", lt_matmul);
  MeasureCaptured("Gemm 1x2048x1000 fp32: cublasLtMatmul (cached algo)", lt_matmul);
  cublasDestroy(cublas);
  cublasLtDestroy(lt);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_calls = std::atoi(argv[1]);
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudnnHandle_t cudnn;
  CK(cudnnCreate(&cudnn));
  CK(cudnnSetStream(cudnn, g_stream));
  std::printf("cuDNN %zu, calls per measurement %d\n", cudnnGetVersion(), g_calls);
  Measure("empty kernel launch", [] { Empty<<<1, 32, 0, g_stream>>>(); });
  MeasureCaptured("empty kernel launch", [] { Empty<<<1, 32, 0, g_stream>>>(); });
  MeasureCaptured("two empty kernel launches", [] {
    Empty<<<1, 32, 0, g_stream>>>();
    Empty<<<1, 32, 0, g_stream>>>();
  });
  cudaEvent_t event;
  CK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  Measure("cudaEventRecord", [&] { CK(cudaEventRecord(event, g_stream)); });
  Measure("cudaEventRecord + cudaStreamWaitEvent", [&] {
    CK(cudaEventRecord(event, g_stream));
    CK(cudaStreamWaitEvent(g_stream, event, 0));
  });
  Measure("cudaGetDevice + cudaSetDevice", [] {
    int d = 0;
    CK(cudaGetDevice(&d));
    CK(cudaSetDevice(d));
  });
  Measure("cudnnSetStream", [&] { CK(cudnnSetStream(cudnn, g_stream)); });
  const ConvCase cases[] = {
      {"3x3 256->256 14x14", 1, 256, 14, 14, 256, 3, 1, 1, false},
      {"3x3 256->256 14x14", 1, 256, 14, 14, 256, 3, 1, 1, true},
      {"1x1 1024->256 14x14", 1, 1024, 14, 14, 256, 1, 0, 1, false},
      {"1x1 1024->256 14x14", 1, 1024, 14, 14, 256, 1, 0, 1, true},
      {"7x7/2 3->64 224x224", 1, 3, 224, 224, 64, 7, 3, 2, false},
  };
  for (const ConvCase& c : cases) ConvBench(cudnn, c);
  GemmBench();
  std::printf("\n%-78s %10s %10s\n", "call", "host us", "device us");
  for (const Row& r : g_rows) std::printf("%-78s %10.2f %10.2f\n", r.name.c_str(), r.host_us, r.device_us);
  return 0;
}
