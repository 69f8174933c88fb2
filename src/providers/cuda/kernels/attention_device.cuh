// What the attention kernels' launches need to know of the current device (read once per device), and the one-time
// raise of a kernel's dynamic shared memory limit to the device's opt-in maximum.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>

namespace tessera::cuda::launch {

struct AttentionDevice {
  int processors = 0;
  size_t shared_opt_in = 48 * 1024;  // the dynamic shared memory a block may opt into
  bool tensor_cores = false;         // float16 / TF32 warp matrix operations: compute capability 8.0 and newer
};

inline AttentionDevice CurrentAttentionDevice() {
  constexpr int kDevices = 64;
  static std::atomic<int> processors[kDevices] = {};  // 0: not read yet
  static std::atomic<int> shared_bytes[kDevices] = {};
  static std::atomic<int> major[kDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return {};
  if (processors[device].load(std::memory_order_acquire) == 0) {
    int count = 1, bytes = 48 * 1024, cc_major = 0;
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, device);
    shared_bytes[device].store(bytes, std::memory_order_relaxed);
    major[device].store(cc_major, std::memory_order_relaxed);
    processors[device].store(count > 0 ? count : 1, std::memory_order_release);
  }
  AttentionDevice d;
  d.processors = processors[device].load(std::memory_order_acquire);
  d.shared_opt_in = static_cast<size_t>(shared_bytes[device].load(std::memory_order_relaxed));
  d.tensor_cores = major[device].load(std::memory_order_relaxed) >= 8;
  return d;
}

// Sets kKernel's dynamic shared memory limit to `limit` once per device. A function attribute, not a stream
// operation: allowed while a stream is being captured.
template <auto kKernel>
cudaError_t AllowDynamicShared(size_t limit) {
  constexpr int kDevices = 64;
  static std::atomic<bool> done[kDevices] = {};
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  if (device >= 0 && device < kDevices && done[device].load(std::memory_order_acquire)) return cudaSuccess;
  status = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit));
  if (status == cudaSuccess && device >= 0 && device < kDevices) done[device].store(true, std::memory_order_release);
  return status;
}

}  // namespace tessera::cuda::launch
