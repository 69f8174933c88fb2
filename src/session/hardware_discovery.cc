#include <cpuid.h>

#include <cstring>
#include <string>
#include <thread>

#include "session/environment_impl.h"

namespace tessera {

namespace {

std::string CpuidString(unsigned leaf_begin, unsigned leaf_end) {
  std::string out;
  for (unsigned leaf = leaf_begin; leaf <= leaf_end; ++leaf) {
    unsigned regs[4] = {0, 0, 0, 0};
    if (!__get_cpuid(leaf, &regs[0], &regs[1], &regs[2], &regs[3])) return out;
    out.append(reinterpret_cast<const char*>(regs), sizeof(regs));
  }
  return out;
}

// PCI vendor ids for CPU vendor strings.
uint32_t VendorIdFor(const std::string& vendor) {
  if (vendor == "GenuineIntel") return 0x8086;
  if (vendor == "AuthenticAMD") return 0x1022;
  if (vendor == "CentaurHauls") return 0x1106;
  return 0;
}

}  // namespace

std::vector<HardwareDevice> DiscoverHostHardware() {
  HardwareDevice cpu;
  cpu.type = DeviceType::kCpu;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13] = {};
    std::memcpy(vendor + 0, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    cpu.vendor = vendor;
  }
  cpu.vendor_id = VendorIdFor(cpu.vendor);
  std::string brand = CpuidString(0x80000002, 0x80000004);
  brand = brand.c_str();  // drop trailing NULs
  const size_t first = brand.find_first_not_of(' ');
  cpu.metadata["name"] = first == std::string::npos ? "cpu" : brand.substr(first);
  cpu.metadata["logical_cores"] = std::to_string(std::thread::hardware_concurrency());
  return {cpu};
}

}  // namespace tessera
