// The plugin boundary. An EP library exports exactly one symbol:
//
//   extern "C" tessera::EpFactory* TesseraCreateEpFactory(uint32_t api_version, const char* name);
//
// It returns a new factory (owned by the Environment, destroyed before the library is unloaded) or
// nullptr when `api_version` is not one it supports. `name` is the registration name given to
// Environment::RegisterEpLibrary. Plugins are built against the same libtessera, compiler and C++
// standard library as the host; api_version changes whenever these headers change incompatibly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/device.h"
#include "tessera/ep/data_transfer.h"
#include "tessera/ep/execution_provider.h"

#define TESSERA_EP_API_VERSION 10u
#define TESSERA_EP_ENTRY_POINT "TesseraCreateEpFactory"

namespace tessera {

class EpFactory;

using ProviderOptions = std::map<std::string, std::string>;

// An EP (by factory) paired with a hardware device it can drive.
struct EpDevice {
  std::string ep_name;
  std::string ep_vendor;
  const HardwareDevice* device = nullptr;  // owned by the Environment
  std::map<std::string, std::string> ep_metadata;
  ProviderOptions ep_options;  // defaults the factory suggests for this device
  MemoryInfo device_memory;    // where the EP's kernels put tensors
  std::optional<MemoryInfo> host_accessible_memory;  // pinned/staging memory, when the device has it
  EpFactory* factory = nullptr;
};

class EpFactory {
 public:
  virtual ~EpFactory() = default;
  virtual std::string name() const = 0;  // EP type, e.g. "CUDAExecutionProvider"
  virtual std::string vendor() const = 0;
  virtual std::string version() const = 0;
  // Hardware devices this library can find that generic discovery cannot (GPUs, simulated devices).
  virtual std::vector<HardwareDevice> DiscoverHardware() { return {}; }
  // One EpDevice for every device in `devices` this factory can drive (device pointers are stable).
  virtual std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) = 0;
  // An EP for one session. Unknown or invalid options throw kInvalidArgument naming the key.
  virtual std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice& device, const ProviderOptions& options) = 0;
  // A (non-arena) allocator for one of its memory infos; nullptr when `info` is not one of its own.
  virtual AllocatorPtr CreateAllocator(const MemoryInfo& info) = 0;
  virtual std::unique_ptr<DataTransfer> CreateDataTransfer() = 0;
  // A stream ordering work in `info`'s memory space; nullptr for synchronous devices.
  virtual std::unique_ptr<Stream> CreateStream(const MemoryInfo& info) = 0;
};

using CreateEpFactoryFn = EpFactory* (*)(uint32_t api_version, const char* name);

}  // namespace tessera
