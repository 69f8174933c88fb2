// Devices and memory descriptions: vendor-neutral value types.
//
// A HardwareDevice is a physical processor found on this machine (the CPU from cpuid, GPUs from the
// EP plugins that know how to find them). A MemoryInfo names one memory space; two tensors whose
// MemoryInfos compare equal can be read by the same kernels without a copy.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace tessera {

enum class DeviceType { kCpu, kGpu, kNpu };
const char* DeviceTypeName(DeviceType type);  // "cpu", "gpu", "npu"
DeviceType ParseDeviceType(const std::string& name);  // case-insensitive; throws kInvalidArgument

struct HardwareDevice {
  DeviceType type = DeviceType::kCpu;
  uint32_t vendor_id = 0;  // PCI vendor id (0x8086 Intel, 0x1022 AMD, 0x10de NVIDIA, ...)
  uint32_t device_id = 0;  // PCI product id where one exists, else 0
  std::string vendor;      // human-readable vendor name
  std::map<std::string, std::string> metadata;  // "name", "memory_bytes", "compute_capability", ...
  uint32_t ordinal = 0;    // index among devices of the same vendor and type (CUDA ordinal, ...)
};

enum class MemoryType {
  kDefault,         // the device's own memory (host memory for a CPU device)
  kHostAccessible,  // host memory the device reads directly (e.g. pinned memory for a GPU)
};

enum class AllocatorType { kDevice, kArena };

// MemoryInfo::address_space of Vulkan buffer device addresses (the Vulkan EP's device and host-visible memory).
inline constexpr uint32_t kVulkanAddressSpace = 1;

struct MemoryInfo {
  std::string name;  // a label ("Cpu", "Cuda", "CudaPinned"); not part of equality
  DeviceType device_type = DeviceType::kCpu;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;  // the device's ordinal within its vendor (0 for the host)
  MemoryType memory_type = MemoryType::kDefault;
  size_t alignment = 64;
  AllocatorType allocator_type = AllocatorType::kArena;
  // Which device API's addresses the memory's pointers are, for EPs that drive one device through different APIs
  // (the CUDA EP and the Vulkan EP on one NVIDIA GPU hand out pointers that mean different things): 0 for host memory
  // and a vendor's native API (CUDA), another value for any other API (kVulkanAddressSpace). Part of equality.
  uint32_t address_space = 0;

  // Plain host memory: what the CPU EP allocates and what feeds default to.
  static MemoryInfo Host();
  // Memory the host can read and write with plain loads and stores.
  bool IsHostReadable() const {
    return device_type == DeviceType::kCpu || memory_type == MemoryType::kHostAccessible;
  }
  std::string ToString() const;  // "Cuda(gpu:0x10de:0, default)"

  friend bool operator==(const MemoryInfo& a, const MemoryInfo& b) {
    return a.device_type == b.device_type && a.vendor_id == b.vendor_id && a.device_id == b.device_id &&
           a.memory_type == b.memory_type && a.alignment == b.alignment && a.address_space == b.address_space;
  }
  friend bool operator!=(const MemoryInfo& a, const MemoryInfo& b) { return !(a == b); }
  friend bool operator<(const MemoryInfo& a, const MemoryInfo& b);
};

}  // namespace tessera
