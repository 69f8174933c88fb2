// Shared pieces of the CUDA EP plugin: its names and memory infos, CUDA status checks that turn
// failures into tessera::Error, and a guard that makes one GPU current for a scope.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "tessera/device.h"
#include "tessera/status.h"

namespace tessera::cuda {

inline constexpr const char* kEpName = "CUDAExecutionProvider";
inline constexpr uint32_t kNvidiaVendorId = 0x10de;
// cudaMalloc memory is 256-byte aligned; the EP's memory infos say so.
inline constexpr size_t kDeviceAlignment = 256;

// MemoryInfo{"Cuda", gpu, 0x10de, ordinal, default, 256, arena}: where the EP's kernels keep tensors.
MemoryInfo DeviceMemoryInfo(int ordinal);
// MemoryInfo{"CudaPinned", gpu, 0x10de, ordinal, host-accessible, 256, arena}: page-locked host memory.
MemoryInfo PinnedMemoryInfo(int ordinal);
// Device memory of any GPU this plugin drives.
bool IsCudaDeviceMemory(const MemoryInfo& info);
// Pinned host memory of any GPU this plugin drives.
bool IsCudaPinnedMemory(const MemoryInfo& info);
// The CUDA ordinal of a device or pinned memory info.
inline int OrdinalOf(const MemoryInfo& info) { return static_cast<int>(info.device_id); }

// Throws Error(kRuntime) built from `parts` and CUDA's name and description of `status`; clears
// CUDA's last-error state first so that later calls do not see it.
template <typename... Parts>
void CheckCuda(cudaError_t status, const Parts&... parts) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  Fail(ErrorCode::kRuntime, parts..., ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

// Makes GPU `ordinal` current on this thread for the guard's lifetime (CUDA launches and events
// act on the current device); restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

}  // namespace tessera::cuda
