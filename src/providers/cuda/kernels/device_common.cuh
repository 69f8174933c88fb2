// Device-side helpers shared by the CUDA EP's *.cu files: float <-> storage conversion, launch sizing
// and type dispatch for launch::ElementType.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "providers/cuda/kernels/launch.h"

namespace tessera::cuda::device {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) { return __float2half_rn(v); }

inline constexpr int kThreads = 256;
inline constexpr int kWarp = 32;

// Sum of `value` over the block (blockDim.x a multiple of 32, at most 1024), with `partial` shared memory of
// kWarp floats; every thread gets it. The order of the additions is fixed (LayerNormalization and strict-mode
// SkipLayerNormalization rely on the same order).
__device__ __forceinline__ float BlockSum(float value, float* partial) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = value;
  __syncthreads();
  float total = 0.0f;
  for (unsigned w = 0; w < blockDim.x / kWarp; ++w) total += partial[w];
  __syncthreads();  // partial is reused by the next call
  return total;
}

// The activation of a fused node's epilogue (FusedConv, FusedMatMul).
__device__ __forceinline__ float Activate(const launch::EpilogueActivation& a, float x) {
  switch (a.kind) {
    case launch::EpilogueActivation::Kind::kNone: return x;
    case launch::EpilogueActivation::Kind::kRelu: return x > 0.0f ? x : 0.0f;
    case launch::EpilogueActivation::Kind::kLeakyRelu: return x >= 0.0f ? x : a.alpha * x;
    case launch::EpilogueActivation::Kind::kClip: return fminf(fmaxf(x, a.alpha), a.beta);
    case launch::EpilogueActivation::Kind::kSigmoid: return 1.0f / (1.0f + __expf(-x));
    case launch::EpilogueActivation::Kind::kHardSigmoid: return fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case launch::EpilogueActivation::Kind::kHardSwish: return x * fminf(fmaxf(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case launch::EpilogueActivation::Kind::kTanh: return tanhf(x);
    case launch::EpilogueActivation::Kind::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case launch::EpilogueActivation::Kind::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case launch::EpilogueActivation::Kind::kSwish: return x / (1.0f + __expf(-a.alpha * x));
  }
  return x;
}

// 16-byte words of float16 or float32 elements, unpacked to float32 registers and packed back (rounding to
// nearest): the vectorized paths of the row kernels read and write whole words.
template <typename T>
inline constexpr int kWordElements = 16 / static_cast<int>(sizeof(T));

__device__ __forceinline__ void UnpackWord(const uint4& word, float* out, __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&word);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ void UnpackWord(const uint4& word, float* out, float) {
  out[0] = __uint_as_float(word.x);
  out[1] = __uint_as_float(word.y);
  out[2] = __uint_as_float(word.z);
  out[3] = __uint_as_float(word.w);
}

__device__ __forceinline__ uint4 PackWord(const float* in, __half) {
  uint4 word;
  __half2* h = reinterpret_cast<__half2*>(&word);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(in[2 * i], in[2 * i + 1]);
  return word;
}

__device__ __forceinline__ uint4 PackWord(const float* in, float) {
  return make_uint4(__float_as_uint(in[0]), __float_as_uint(in[1]), __float_as_uint(in[2]), __float_as_uint(in[3]));
}

// Blocks for a grid-stride loop over n elements (capped: each thread then handles several).
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Calls fn(T{}) with T = float or __half.
template <typename Fn>
cudaError_t DispatchFloat(launch::ElementType type, Fn&& fn) {
  if (type == launch::ElementType::kHalf) return fn(__half{});
  return fn(float{});
}

inline cudaError_t LaunchStatus() { return cudaGetLastError(); }

// Calls fn(W{}) with W the unsigned integer of `element_size` bytes (1, 2, 4 or 8), for kernels that
// only move elements.
template <typename Fn>
cudaError_t DispatchWord(int element_size, Fn&& fn) {
  switch (element_size) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

// Calls fn(T{}) with T the C++ type of `type` (__half for kHalf).
template <typename Fn>
cudaError_t DispatchScalar(launch::ScalarType type, Fn&& fn) {
  switch (type) {
    case launch::ScalarType::kFloat: return fn(float{});
    case launch::ScalarType::kHalf: return fn(__half{});
    case launch::ScalarType::kDouble: return fn(double{});
    case launch::ScalarType::kInt8: return fn(int8_t{});
    case launch::ScalarType::kUInt8: return fn(uint8_t{});
    case launch::ScalarType::kInt16: return fn(int16_t{});
    case launch::ScalarType::kInt32: return fn(int32_t{});
    case launch::ScalarType::kInt64: return fn(int64_t{});
    case launch::ScalarType::kBool: return fn(bool{});
  }
  return cudaErrorInvalidValue;
}

// Offset of output element i in an operand with `strides` (0 along broadcast dims) over `dims`.
__device__ __forceinline__ int64_t OperandOffset(int64_t i, int rank, const int64_t* dims, const int64_t* strides) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return offset;
}

// ---- programmatic dependent launch (Hopper and later) ----------------------------------------------------------
// A kernel launched with LaunchDependent may start while the kernel before it on the stream is still finishing (its
// blocks get resident and wait), which hides most of the ~1 us gap between two small kernels -- a decoding step is
// a chain of ~130 of them. Such a kernel must call WaitForPrerequisites() before it touches global memory that a kernel
// on the stream may write: it returns once the kernels before it have completed and their writes are visible.
// Constants (initializers uploaded at session creation, which no kernel writes) may be loaded before it, so that their
// memory latency overlaps the kernel before (SmallRowsProduct's weights, SkipLayerNormalization's parameters). AllowDependents() lets the next such kernel
// start launching. Both are no-ops before sm_90 and in kernels launched the ordinary way.
__device__ __forceinline__ void WaitForPrerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void AllowDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Whether the current device takes programmatic dependent launches (compute capability 9.0 or later), cached.
inline bool DependentLaunchSupported() {
  static int cached[64] = {};  // 0 unknown, 1 no, 2 yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return false;
  if (cached[device] == 0) {
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cached[device] = major >= 9 ? 2 : 1;
  }
  return cached[device] == 2;
}

// Whether kernels load constants before WaitForPrerequisites (see above); TESSERA_CUDA_EARLY_CONSTANT_LOADS=0 makes
// them wait first, for measuring what the early loads save.
inline bool EarlyConstantLoads() {
  static const bool early = [] {
    const char* v = std::getenv("TESSERA_CUDA_EARLY_CONSTANT_LOADS");
    return v == nullptr || std::string(v) != "0";
  }();
  return early;
}

// Launches `kernel` (which calls WaitForPrerequisites first) allowing it to overlap the end of the kernel before it.
template <typename... KernelArgs, typename... Args>
cudaError_t LaunchDependent(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                            Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = DependentLaunchSupported() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// Grid-stride loop bounds.
__device__ __forceinline__ int64_t FirstIndex() { return blockIdx.x * int64_t{blockDim.x} + threadIdx.x; }
__device__ __forceinline__ int64_t IndexStride() { return int64_t{gridDim.x} * blockDim.x; }

}  // namespace tessera::cuda::device
