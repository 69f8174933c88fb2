#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

MemoryInfo CudaMemoryInfo(const char* name, int ordinal, MemoryType type) {
  MemoryInfo info;
  info.name = name;
  info.device_type = DeviceType::kGpu;
  info.vendor_id = kNvidiaVendorId;
  info.device_id = static_cast<uint32_t>(ordinal);
  info.memory_type = type;
  info.alignment = kDeviceAlignment;
  info.allocator_type = AllocatorType::kArena;
  return info;
}

bool IsNvidiaGpu(const MemoryInfo& info) {
  return info.device_type == DeviceType::kGpu && info.vendor_id == kNvidiaVendorId &&
         info.alignment == kDeviceAlignment;
}

}  // namespace

MemoryInfo DeviceMemoryInfo(int ordinal) { return CudaMemoryInfo("Cuda", ordinal, MemoryType::kDefault); }

MemoryInfo PinnedMemoryInfo(int ordinal) { return CudaMemoryInfo("CudaPinned", ordinal, MemoryType::kHostAccessible); }

bool IsCudaDeviceMemory(const MemoryInfo& info) {
  return IsNvidiaGpu(info) && info.memory_type == MemoryType::kDefault;
}

bool IsCudaPinnedMemory(const MemoryInfo& info) {
  return IsNvidiaGpu(info) && info.memory_type == MemoryType::kHostAccessible;
}

DeviceGuard::DeviceGuard(int ordinal) {
  CheckCuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ == ordinal) return;
  CheckCuda(cudaSetDevice(ordinal), "cudaSetDevice(", ordinal, ")");
  switched_ = true;
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace tessera::cuda
