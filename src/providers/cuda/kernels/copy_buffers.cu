// Batched device-to-device copies: block row y of the grid copies copies.src[y] -> copies.dst[y], its blocks
// striding over the words.
#include <cstdint>

#include "providers/cuda/kernels/copy_buffers.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocksPerCopy = 64;

__global__ void CopyBuffersKernel(BufferCopies copies) {
  const int i = blockIdx.y;
  const int64_t bytes = copies.bytes[i];
  const auto* src = static_cast<const unsigned char*>(copies.src[i]);
  auto* dst = static_cast<unsigned char*>(copies.dst[i]);
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | static_cast<uintptr_t>(bytes)) & 15) == 0) {
    const auto* from = reinterpret_cast<const uint4*>(src);
    auto* to = reinterpret_cast<uint4*>(dst);
    for (int64_t w = first; w < bytes / 16; w += stride) to[w] = from[w];
  } else {
    for (int64_t b = first; b < bytes; b += stride) dst[b] = src[b];
  }
}

}  // namespace

cudaError_t CopyBuffers(const BufferCopies& copies, cudaStream_t stream) {
  if (copies.count <= 0) return cudaSuccess;
  if (copies.count > kMaxBufferCopies) return cudaErrorInvalidValue;
  int64_t largest = 0;
  for (int i = 0; i < copies.count; ++i) largest = copies.bytes[i] > largest ? copies.bytes[i] : largest;
  const int64_t per_block = int64_t{kThreads} * 16;
  int64_t blocks = (largest + per_block - 1) / per_block;
  blocks = blocks < 1 ? 1 : blocks > kMaxBlocksPerCopy ? kMaxBlocksPerCopy : blocks;
  CopyBuffersKernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(copies.count)), kThreads, 0, stream>>>(
      copies);
  return device::LaunchStatus();
}

}  // namespace tessera::cuda::launch
