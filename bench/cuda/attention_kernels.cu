// The ai.tessera::Attention kernels side by side (float16 with the softmax in registers: attention_flash.cu, with
// each block size; tensor cores with a staged softmax: attention_mma.cu; FMA units: attention.cu):
// each against a float64 host reference on random data, then timed with CUDA events (median of 9 rounds of 200
// launches). Exit status 1 when a kernel's error passes its bound.
//
//   tessera_attention_kernels        (on the GPU host; shapes of BERT-base, GPT-2 decoding, longer sequences)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "providers/cuda/kernels/attention.h"

namespace {

using tessera::cuda::launch::AttentionArgs;
using tessera::cuda::launch::ElementType;

#define CK(call)                                                                            \
  do {                                                                                      \
    cudaError_t e = (call);                                                                 \
    if (e != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)

struct Shape {
  const char* name;
  int64_t batch, heads, q_len, k_len, head;
  bool mask;  // additive mask [batch, 1, 1, k_len] with the last quarter of the keys at -10000
};

// Q, K, V in [batch, seq, heads, head] (the projections' layout the fusion reads), output the same.
struct Problem {
  Shape s;
  std::vector<float> q, k, v, mask;
  std::vector<double> want;
};

Problem Make(const Shape& s, bool half) {
  Problem p{s, {}, {}, {}, {}, {}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  auto fill = [&](std::vector<float>& x, size_t n) {
    x.resize(n);
    for (float& e : x) e = half ? __half2float(__float2half(dist(rng))) : dist(rng);
  };
  fill(p.q, s.batch * s.q_len * s.heads * s.head);
  fill(p.k, s.batch * s.k_len * s.heads * s.head);
  fill(p.v, s.batch * s.k_len * s.heads * s.head);
  if (s.mask) {
    p.mask.assign(s.batch * s.k_len, 0.0f);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = s.k_len * 3 / 4; j < s.k_len; ++j) p.mask[b * s.k_len + j] = -10000.0f;
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head));
  p.want.assign(p.q.size(), 0.0);
  std::vector<double> score(s.k_len);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        double top = -1e300;
        for (int64_t j = 0; j < s.k_len; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.head; ++d)
            dot += static_cast<double>(p.q[((b * s.q_len + i) * s.heads + h) * s.head + d]) *
                   p.k[((b * s.k_len + j) * s.heads + h) * s.head + d];
          score[j] = dot * scale + (s.mask ? p.mask[b * s.k_len + j] : 0.0);
          top = std::max(top, score[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < s.k_len; ++j) sum += score[j] = std::exp(score[j] - top);
        for (int64_t d = 0; d < s.head; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s.k_len; ++j) acc += score[j] * p.v[((b * s.k_len + j) * s.heads + h) * s.head + d];
          p.want[((b * s.q_len + i) * s.heads + h) * s.head + d] = acc / sum;
        }
      }
  return p;
}

void* Upload(const std::vector<float>& x, bool half) {
  void* d = nullptr;
  if (half) {
    std::vector<__half> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = __float2half(x[i]);
    CK(cudaMalloc(&d, h.size() * 2));
    CK(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  } else {
    CK(cudaMalloc(&d, x.size() * 4));
    CK(cudaMemcpy(d, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
  }
  return d;
}

std::vector<float> Download(const void* d, size_t n, bool half) {
  std::vector<float> x(n);
  if (half) {
    std::vector<__half> h(n);
    CK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) x[i] = __half2float(h[i]);
  } else {
    CK(cudaMemcpy(x.data(), d, n * 4, cudaMemcpyDeviceToHost));
  }
  return x;
}

AttentionArgs ArgsFor(const Shape& s, bool half, void* q, void* k, void* v, void* mask, void* out) {
  AttentionArgs a;
  a.type = half ? ElementType::kHalf : ElementType::kFloat;
  a.q = q;
  a.k = k;
  a.v = v;
  a.mask = mask;
  a.out = out;
  a.batch = s.batch;
  a.heads = s.heads;
  a.q_len = s.q_len;
  a.k_len = s.k_len;
  a.head_size = a.v_head_size = s.head;
  const int64_t q_strides[4] = {s.q_len * s.heads * s.head, s.head, s.heads * s.head, 1};
  const int64_t k_strides[4] = {s.k_len * s.heads * s.head, s.head, s.heads * s.head, 1};
  for (int i = 0; i < 4; ++i) {
    a.q_strides[i] = a.out_strides[i] = q_strides[i];
    a.k_strides[i] = a.v_strides[i] = k_strides[i];
  }
  if (mask != nullptr) {
    a.mask_strides[0] = s.k_len;
    a.mask_strides[3] = 1;
  }
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head)));
  return a;
}

}  // namespace

int main() {
  const Shape shapes[] = {
      {"BERT-base s128", 1, 12, 128, 128, 64, true},  {"BERT-base s128 batch 8", 8, 12, 128, 128, 64, true},
      {"GPT-2 decode, 17 keys", 1, 12, 1, 17, 64, true}, {"GPT-2 decode, 1024 keys", 1, 12, 1, 1024, 64, false},
      {"s512 head 64", 1, 16, 512, 512, 64, false},      {"s1024 head 128", 1, 8, 1024, 1024, 128, false},
      {"s77 head 40, mask", 2, 3, 77, 77, 40, true},    {"s16 head 64 (a prompt)", 1, 12, 16, 16, 64, true},
  };
  bool ok = true;
  std::printf("%-26s %-7s %-12s %10s %12s\n", "shape", "type", "kernel", "us/launch", "max abs err");
  for (const Shape& s : shapes)
    for (bool half : {false, true}) {
      const Problem p = Make(s, half);
      void* q = Upload(p.q, half);
      void* k = Upload(p.k, half);
      void* v = Upload(p.v, half);
      void* mask = s.mask ? Upload(p.mask, half) : nullptr;
      void* out = nullptr;
      CK(cudaMalloc(&out, p.q.size() * (half ? 2 : 4)));
      const AttentionArgs a = ArgsFor(s, half, q, k, v, mask, out);
      cudaStream_t stream;
      CK(cudaStreamCreate(&stream));
      // Kernels: the float16 register-softmax kernel with 1, 2, 4 warps per block and its own choice (0), the
      // tensor-core kernel with staged softmax, the FMA kernel.
      // (query tiles per block x warps per query tile; auto: the kernel's choice).
      enum Kernel { kFlash4x1, kFlash1x2, kFlash2x2, kFlash1x4, kFlashAuto, kTensorCores, kFma };
      const char* names[] = {"flash 4x1", "flash 1x2", "flash 2x2", "flash 1x4", "flash auto", "tensor-core", "fma"};
      const int q_warps[] = {4, 1, 2, 1, 0}, splits[] = {1, 2, 2, 4, 0};
      for (Kernel kernel : {kFlash4x1, kFlash1x2, kFlash2x2, kFlash1x4, kFlashAuto, kTensorCores, kFma}) {
        if (kernel <= kFlashAuto && !tessera::cuda::launch::AttentionFlashFits(a)) continue;
        if (kernel == kTensorCores && !tessera::cuda::launch::AttentionOnTensorCoresFits(a)) continue;
        auto launch = [&] {
          if (kernel <= kFlashAuto)
            return tessera::cuda::launch::AttentionFlash(a, stream, q_warps[kernel], splits[kernel]);
          return kernel == kTensorCores ? tessera::cuda::launch::AttentionOnTensorCores(a, stream)
                                        : tessera::cuda::launch::AttentionOnFmaUnits(a, stream);
        };
        CK(cudaMemsetAsync(out, 0xff, p.q.size() * (half ? 2 : 4), stream));
        if (kernel < kFlashAuto && launch() == cudaErrorInvalidConfiguration) {  // a block too large for the device
          std::printf("%-26s %-7s %-12s %10s\n", s.name, "float16", names[kernel], "no fit");
          continue;
        }
        CK(launch());
        CK(cudaStreamSynchronize(stream));
        const std::vector<float> got = Download(out, p.q.size(), half);
        double err = 0;
        for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - p.want[i]));
        if (!(err <= (half ? 2e-2 : 5e-5))) ok = false;  // NaN fails too
        cudaEvent_t start, stop;
        CK(cudaEventCreate(&start));
        CK(cudaEventCreate(&stop));
        std::vector<float> rounds;
        for (int r = 0; r < 9; ++r) {
          CK(cudaEventRecord(start, stream));
          for (int i = 0; i < 200; ++i) CK(launch());
          CK(cudaEventRecord(stop, stream));
          CK(cudaEventSynchronize(stop));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, start, stop));
          rounds.push_back(ms * 1000.0f / 200.0f);
        }
        std::sort(rounds.begin(), rounds.end());
        std::printf("%-26s %-7s %-12s %10.2f %12.3g%s\n", s.name, half ? "float16" : "float32",
                    names[kernel], rounds[4], err,
                    err <= (half ? 2e-2 : 5e-5) ? "" : "  <-- beyond the bound");
        CK(cudaEventDestroy(start));
        CK(cudaEventDestroy(stop));
      }
      CK(cudaStreamDestroy(stream));
      for (void* ptr : {q, k, v, mask, out})
        if (ptr != nullptr) CK(cudaFree(ptr));
    }
  std::printf("%s\n", ok ? "ALL WITHIN BOUNDS" : "SOME KERNEL BEYOND ITS BOUND");
  return ok ? 0 : 1;
}
