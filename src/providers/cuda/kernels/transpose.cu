// Transpose device kernel: a gather over permuted input strides, for any element size.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

struct PermutedStrides {
  int rank;
  int64_t out_dims[kMaxRank];
  int64_t in_strides[kMaxRank];
};

template <typename Word>
__global__ void TransposeKernel(const Word* in, Word* out, PermutedStrides p, int64_t n) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      offset += (rest % p.out_dims[d]) * p.in_strides[d];
      rest /= p.out_dims[d];
    }
    out[i] = in[offset];
  }
}

template <typename Word>
cudaError_t LaunchTranspose(const void* in, void* out, const PermutedStrides& p, int64_t n, cudaStream_t stream) {
  device::LaunchDependent(TransposeKernel<Word>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                          static_cast<const Word*>(in), static_cast<Word*>(out), p, n);
  return device::LaunchStatus();
}

}  // namespace

cudaError_t Transpose(int element_size, const void* in, void* out, int rank, const int64_t* out_dims,
                      const int64_t* in_strides, int64_t n, cudaStream_t stream) {
  if (rank > kMaxRank) return cudaErrorInvalidValue;
  PermutedStrides p{};
  p.rank = rank;
  for (int d = 0; d < rank; ++d) {
    p.out_dims[d] = out_dims[d];
    p.in_strides[d] = in_strides[d];
  }
  switch (element_size) {
    case 1: return LaunchTranspose<uint8_t>(in, out, p, n, stream);
    case 2: return LaunchTranspose<uint16_t>(in, out, p, n, stream);
    case 4: return LaunchTranspose<uint32_t>(in, out, p, n, stream);
    case 8: return LaunchTranspose<uint64_t>(in, out, p, n, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace tessera::cuda::launch
