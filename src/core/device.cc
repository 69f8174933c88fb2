#include "tessera/device.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <tuple>

#include "tessera/status.h"

namespace tessera {

const char* DeviceTypeName(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu: return "cpu";
    case DeviceType::kGpu: return "gpu";
    case DeviceType::kNpu: return "npu";
  }
  return "unknown";
}

DeviceType ParseDeviceType(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "cpu") return DeviceType::kCpu;
  if (lower == "gpu" || lower == "cuda") return DeviceType::kGpu;
  if (lower == "npu") return DeviceType::kNpu;
  Fail(ErrorCode::kInvalidArgument, "unknown device type '", name, "' (expected cpu, gpu or npu)");
}

MemoryInfo MemoryInfo::Host() {
  MemoryInfo info;
  info.name = "Cpu";
  return info;
}

std::string MemoryInfo::ToString() const {
  std::ostringstream os;
  os << name << "(" << DeviceTypeName(device_type) << ":0x" << std::hex << vendor_id << std::dec << ":" << device_id
     << (memory_type == MemoryType::kDefault ? ", default" : ", host-accessible");
  if (address_space == kVulkanAddressSpace) os << ", vulkan";
  else if (address_space != 0) os << ", address space " << address_space;
  os << ")";
  return os.str();
}

bool operator<(const MemoryInfo& a, const MemoryInfo& b) {
  return std::tie(a.device_type, a.vendor_id, a.device_id, a.memory_type, a.alignment, a.address_space) <
         std::tie(b.device_type, b.vendor_id, b.device_id, b.memory_type, b.alignment, b.address_space);
}

}  // namespace tessera
