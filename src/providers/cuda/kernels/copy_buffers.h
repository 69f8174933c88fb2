// Launcher of the batched device-to-device copy (copy_buffers.cu), kept out of the shared launch.h: plain types only,
// as there. A run's bound inputs and outputs are dozens of small copies (GPT-2 with past key/values: 26 in, 25 out);
// one cudaMemcpyAsync each costs ~2-3 us of host time, one launch copies up to kMaxBufferCopies of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tessera::cuda::launch {

inline constexpr int kMaxBufferCopies = 48;  // the kernel's parameter block stays under 1.2 KiB

struct BufferCopies {
  const void* src[kMaxBufferCopies] = {};
  void* dst[kMaxBufferCopies] = {};
  int64_t bytes[kMaxBufferCopies] = {};
  int count = 0;
};

// Copies bytes[i] from src[i] to dst[i] for i < count, all in one GPU's memory (ranges must not overlap); queued on
// `stream`. Copies whose addresses and size are multiples of 16 move 16-byte words, others bytes.
cudaError_t CopyBuffers(const BufferCopies& copies, cudaStream_t stream);

}  // namespace tessera::cuda::launch
