// The CUDA EP plugin's entry point and factory: GPU discovery, EP devices, allocators, transfers and
// streams for the Environment. On a machine without a usable CUDA driver it reports no devices, so
// registering the plugin always succeeds.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <string>

#include "providers/cuda/cuda_allocator.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_ep.h"
#include "providers/cuda/cuda_stream.h"
#include "providers/cuda/cuda_transfer.h"
#include "tessera/ep/ep_factory.h"

namespace tessera::cuda {

namespace {

// The PCI product id from sysfs ("0x2330\n" in .../device); 0 when it cannot be read.
uint32_t PciProductId(const std::string& bus_id) {
  std::string lowered = bus_id;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  std::ifstream file("/sys/bus/pci/devices/" + lowered + "/device");
  std::string text;
  if (!(file >> text)) return 0;
  try {
    return static_cast<uint32_t>(std::stoul(text, nullptr, 16));
  } catch (const std::exception&) {
    return 0;
  }
}

// "1,3": the other GPUs this one can read directly (cudaDeviceCanAccessPeer); "" when none.
std::string PeersOf(int ordinal, int count) {
  std::string peers;
  for (int other = 0; other < count; ++other) {
    int can = 0;
    if (other == ordinal || cudaDeviceCanAccessPeer(&can, ordinal, other) != cudaSuccess || !can) continue;
    if (!peers.empty()) peers += ',';
    peers += std::to_string(other);
  }
  return peers;
}

HardwareDevice DescribeGpu(int ordinal, int count) {
  cudaDeviceProp props{};
  CheckCuda(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties(", ordinal, ")");
  char bus_id[64] = {};
  CheckCuda(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal), "cudaDeviceGetPCIBusId(", ordinal, ")");
  HardwareDevice device;
  device.type = DeviceType::kGpu;
  device.vendor_id = kNvidiaVendorId;
  device.device_id = PciProductId(bus_id);
  device.vendor = "NVIDIA";
  device.ordinal = static_cast<uint32_t>(ordinal);
  device.metadata = {
      {"name", props.name},
      {"memory_bytes", std::to_string(props.totalGlobalMem)},
      {"compute_capability", std::to_string(props.major) + "." + std::to_string(props.minor)},
      {"pci_bus_id", bus_id},
      {"cuda_ordinal", std::to_string(ordinal)},
      {"multiprocessors", std::to_string(props.multiProcessorCount)},
      {"peer_access", PeersOf(ordinal, count)},
  };
  return device;
}

class CudaEpFactory : public EpFactory {
 public:
  std::string name() const override { return kEpName; }
  std::string vendor() const override { return "Tessera"; }
  std::string version() const override { return "0.1.0"; }

  std::vector<HardwareDevice> DiscoverHardware() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver or no GPU: nothing to report
      cudaGetLastError();
      return {};
    }
    std::vector<HardwareDevice> devices;
    for (int ordinal = 0; ordinal < count; ++ordinal) devices.push_back(DescribeGpu(ordinal, count));
    return devices;
  }

  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* device : devices) {
      if (device->type != DeviceType::kGpu || device->vendor_id != kNvidiaVendorId) continue;
      // The CUDA ordinal this factory discovered (the device may be one another plugin listed first, with its own
      // ordinal); NVIDIA GPUs that CUDA does not see (only another plugin's) are not CUDA EP devices.
      auto cuda = device->metadata.find("cuda_ordinal");
      if (cuda == device->metadata.end()) continue;
      const int ordinal = std::stoi(cuda->second);
      EpDevice ep;
      ep.ep_name = kEpName;
      ep.ep_vendor = "Tessera";
      ep.device = device;
      ep.ep_metadata = {{"cuda_ordinal", std::to_string(ordinal)}};
      ep.device_memory = DeviceMemoryInfo(ordinal);
      ep.host_accessible_memory = PinnedMemoryInfo(ordinal);
      ep.factory = this;
      out.push_back(std::move(ep));
    }
    return out;
  }

  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice& device, const ProviderOptions& options) override {
    return std::make_unique<CudaExecutionProvider>(std::stoi(device.ep_metadata.at("cuda_ordinal")),
                                                   ParseProviderOptions(options));
  }

  AllocatorPtr CreateAllocator(const MemoryInfo& info) override {
    if (IsCudaDeviceMemory(info)) return std::make_shared<CudaAllocator>(OrdinalOf(info), false);
    if (IsCudaPinnedMemory(info)) return std::make_shared<CudaAllocator>(OrdinalOf(info), true);
    return nullptr;
  }

  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return std::make_unique<CudaDataTransfer>(); }

  std::unique_ptr<Stream> CreateStream(const MemoryInfo& info) override {
    if (!IsCudaDeviceMemory(info) && !IsCudaPinnedMemory(info)) return nullptr;
    return std::make_unique<CudaStream>(OrdinalOf(info));
  }
};

}  // namespace

}  // namespace tessera::cuda

extern "C" __attribute__((visibility("default"))) tessera::EpFactory* TesseraCreateEpFactory(uint32_t api_version,
                                                                                             const char* /*name*/) {
  if (api_version != TESSERA_EP_API_VERSION) return nullptr;
  return new tessera::cuda::CudaEpFactory();
}
