// Whether a transformer's deep, narrow product (BERT-base's FFN output, [128, 3072] x [3072, 768]) should leave its
// depth chunks' partial sums for the following SkipLayerNormalization to add up, instead of cuBLASLt's split-K kernel
// plus its reduction kernel. Times, inside CUDA graphs (20 calls captured, replayed, per call):
//   - the product as Tessera queues it today: one cublasLtMatmul, the heuristic's first algorithm (and the fastest
//     of its first eight), float16 or float32 (TF32) out;
//   - the same product as S strided batches of depth K / S writing float32 partial sums (S = 2, 3, 4, 6);
//   - a row kernel that adds S float32 partials (S = 0: one float16 input, as SkipLayerNormalization reads today),
//     the bias and the skip, and normalizes the row (one thread per 8 columns, 768 columns).
//
//   tessera_split_k_products [rows] [k] [n]     (default 128 3072 768)
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

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

// Microseconds per call of `call`, captured 20 times into a graph and replayed (median of 15 replays).
double GraphTime(const std::function<void(cudaStream_t)>& call) {
  constexpr int kCalls = 20;
  for (int i = 0; i < 3; ++i) call(g_stream);
  CK(cudaStreamSynchronize(g_stream));
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; ++i) call(g_stream);
  CK(cudaStreamEndCapture(g_stream, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int r = 0; r < 16; ++r) {
    CK(cudaEventRecord(start, g_stream));
    CK(cudaGraphLaunch(exec, g_stream));
    CK(cudaEventRecord(stop, g_stream));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));
  return times[times.size() / 2] * 1000.0 / kCalls;
}

struct Product {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
  int64_t m, n, k, batch;  // row-major out [m, n] (per batch) = a [m, k] x b [k, n]; a's rows are `lda` long
  int64_t lda;
};

// Times the heuristic's first eight algorithms for `p` (column-major: out^T = b^T a^T); prints first and best.
void TimeProduct(cublasLtHandle_t lt, const char* name, const Product& p, const void* a, const void* b, void* out,
                 void* workspace, size_t workspace_bytes) {
  cublasLtMatmulDesc_t desc;
  CK(cublasLtMatmulDescCreate(&desc, p.compute, CUDA_R_32F));
  cublasOperation_t none = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &none, sizeof(none)));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)));
  auto layout = [&](cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    cublasLtMatrixLayout_t l;
    CK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
    if (p.batch > 1) {
      int32_t count = static_cast<int32_t>(p.batch);
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
    return l;
  };
  // cuBLASLt's A = our b ([n, k] column-major, ld n; batch i starts k rows further), B = our a ([k, m], ld lda;
  // batch i starts k columns further), D = out^T ([n, m], ld n; batch i a whole [m, n] further).
  cublasLtMatrixLayout_t la = layout(p.in, p.n, p.k, p.n, p.k * p.n);
  cublasLtMatrixLayout_t lb = layout(p.in, p.k, p.m, p.lda, p.k);
  cublasLtMatrixLayout_t ld = layout(p.out, p.n, p.m, p.n, p.m * p.n);
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t cap = workspace_bytes;
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &cap, sizeof(cap)));
  cublasLtMatmulHeuristicResult_t results[8];
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 8, results, &found));
  const float alpha = 1.0f, beta = 0.0f;
  double first = 0, best = 1e30;
  int best_i = 0;
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const double us = GraphTime([&](cudaStream_t s) {
      CK(cublasLtMatmul(lt, desc, &alpha, b, la, a, lb, &beta, out, ld, out, ld, &results[i].algo, workspace,
                        results[i].workspaceSize, s));
    });
    if (i == 0) first = us;
    if (us < best) {
      best = us;
      best_i = i;
    }
  }
  std::printf("%-44s first %6.2f us   best %6.2f us (candidate %d of %d)\n", name, first, best, best_i, found);
  CK(cublasLtMatmulPreferenceDestroy(pref));
  CK(cublasLtMatrixLayoutDestroy(la));
  CK(cublasLtMatrixLayoutDestroy(lb));
  CK(cublasLtMatrixLayoutDestroy(ld));
  CK(cublasLtMatmulDescDestroy(desc));
}

// One block per row of `n` (= 8 x blockDim.x) columns: x = sum of `splits` float32 partial rows (or, splits 0, the
// float16 row `half_in`) + bias + skip; y = LayerNorm(x) * gamma + beta, float16.
__global__ void PartialsSkipLayerNorm(const float* partials, int splits, const __half* half_in, const __half* skip,
                                      const __half* bias, const __half* gamma, const __half* beta, __half* y,
                                      int rows, int n) {
  const int row = blockIdx.x, c0 = threadIdx.x * 8;
  float v[8];
  const uint4 s = *reinterpret_cast<const uint4*>(skip + static_cast<size_t>(row) * n + c0);
  const uint4 bb = *reinterpret_cast<const uint4*>(bias + c0);
  const __half* sh = reinterpret_cast<const __half*>(&s);
  const __half* bh = reinterpret_cast<const __half*>(&bb);
  for (int j = 0; j < 8; ++j) v[j] = __half2float(sh[j]) + __half2float(bh[j]);
  if (splits == 0) {
    const uint4 x = *reinterpret_cast<const uint4*>(half_in + static_cast<size_t>(row) * n + c0);
    const __half* xh = reinterpret_cast<const __half*>(&x);
    for (int j = 0; j < 8; ++j) v[j] += __half2float(xh[j]);
  }
  for (int p = 0; p < splits; ++p) {
    const float* at = partials + (static_cast<size_t>(p) * rows + row) * n + c0;
    const float4 lo = *reinterpret_cast<const float4*>(at), hi = *reinterpret_cast<const float4*>(at + 4);
    v[0] += lo.x; v[1] += lo.y; v[2] += lo.z; v[3] += lo.w;
    v[4] += hi.x; v[5] += hi.y; v[6] += hi.z; v[7] += hi.w;
  }
  float sum = 0, sq = 0;
  for (int j = 0; j < 8; ++j) {
    sum += v[j];
    sq += v[j] * v[j];
  }
  __shared__ float red[2][32];
  for (int o = 16; o > 0; o >>= 1) {
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) {
    red[0][warp] = sum;
    red[1][warp] = sq;
  }
  __syncthreads();
  sum = 0;
  sq = 0;
  for (int w = 0; w < warps; ++w) {
    sum += red[0][w];
    sq += red[1][w];
  }
  const float mean = sum / n, inv = rsqrtf(fmaxf(sq / n - mean * mean, 0.0f) + 1e-12f);
  const uint4 g = *reinterpret_cast<const uint4*>(gamma + c0);
  const uint4 be = *reinterpret_cast<const uint4*>(beta + c0);
  const __half* gh = reinterpret_cast<const __half*>(&g);
  const __half* beh = reinterpret_cast<const __half*>(&be);
  uint4 out;
  __half* oh = reinterpret_cast<__half*>(&out);
  for (int j = 0; j < 8; ++j)
    oh[j] = __float2half((v[j] - mean) * inv * __half2float(gh[j]) + __half2float(beh[j]));
  *reinterpret_cast<uint4*>(y + static_cast<size_t>(row) * n + c0) = out;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t m = argc > 1 ? std::atoll(argv[1]) : 128, k = argc > 2 ? std::atoll(argv[2]) : 3072,
                n = argc > 3 ? std::atoll(argv[3]) : 768;
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  const size_t workspace_bytes = 32u << 20;
  void *a, *b, *out, *partials, *workspace;
  CK(cudaMalloc(&a, m * k * 4));
  CK(cudaMalloc(&b, k * n * 4));
  CK(cudaMalloc(&out, m * n * 4));
  CK(cudaMalloc(&partials, 8 * m * n * 4));
  CK(cudaMalloc(&workspace, workspace_bytes));
  CK(cudaMemset(a, 0, m * k * 4));
  CK(cudaMemset(b, 0, k * n * 4));
  std::printf("product [%lld, %lld] x [%lld, %lld]\n", (long long)m, (long long)k, (long long)k, (long long)n);
  struct Kind {
    const char* name;
    cudaDataType_t in;
    cublasComputeType_t compute;
  } kinds[] = {{"float16", CUDA_R_16F, CUBLAS_COMPUTE_32F},
               {"float32 (TF32)", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32}};
  for (const Kind& kind : kinds) {
    char name[96];
    std::snprintf(name, sizeof(name), "%s, one product", kind.name);
    TimeProduct(lt, name, Product{kind.in, kind.in, kind.compute, m, n, k, 1, k}, a, b, out, workspace,
                workspace_bytes);
    for (int64_t s : {2, 3, 4, 6}) {
      if (k % s != 0) continue;
      std::snprintf(name, sizeof(name), "%s, %lld float32 partials", kind.name, (long long)s);
      TimeProduct(lt, name, Product{kind.in, CUDA_R_32F, kind.compute, m, n, k / s, s, k}, a, b, partials, workspace,
                  workspace_bytes);
    }
  }
  // The row kernel, float16 rows.
  __half *skip, *bias, *gamma, *beta, *y, *half_in;
  CK(cudaMalloc(&skip, m * n * 2));
  CK(cudaMalloc(&half_in, m * n * 2));
  CK(cudaMalloc(&y, m * n * 2));
  CK(cudaMalloc(&bias, n * 2));
  CK(cudaMalloc(&gamma, n * 2));
  CK(cudaMalloc(&beta, n * 2));
  CK(cudaMemset(skip, 0, m * n * 2));
  CK(cudaMemset(half_in, 0, m * n * 2));
  CK(cudaMemset(partials, 0, 8 * m * n * 4));
  CK(cudaMemset(bias, 0, n * 2));
  CK(cudaMemset(gamma, 0, n * 2));
  CK(cudaMemset(beta, 0, n * 2));
  for (int s : {0, 2, 3, 4, 6}) {
    const double us = GraphTime([&](cudaStream_t st) {
      PartialsSkipLayerNorm<<<static_cast<int>(m), static_cast<int>(n / 8), 0, st>>>(
          static_cast<const float*>(partials), s, half_in, skip, bias, gamma, beta, y, static_cast<int>(m),
          static_cast<int>(n));
      CK(cudaGetLastError());
    });
    std::printf("skip + bias + LayerNorm over %s %6.2f us\n",
                s == 0 ? "one float16 input     " : (std::to_string(s) + " float32 partials   ").c_str(), us);
  }
  return 0;
}
