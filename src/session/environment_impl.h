// Environment internals shared with sessions.
#pragma once

#include <atomic>
#include <optional>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/environment.h"

namespace tessera {

// One registered EP factory (built-in or loaded from a plugin library) and what it provides.
struct RegisteredEp {
  std::string registration_name;
  void* library = nullptr;  // dlopen handle; nullptr for built-in factories
  std::unique_ptr<EpFactory> factory;
  std::vector<std::unique_ptr<EpDevice>> devices;
  std::unique_ptr<DataTransfer> transfer;
  // The hardware devices its discovery added to the environment (not those it found already listed).
  std::vector<const HardwareDevice*> added_hardware;
};

struct Environment::Impl {
  mutable std::mutex mutex;
  LogLevel log_level = LogLevel::kWarning;
  std::vector<std::unique_ptr<HardwareDevice>> hardware;  // stable addresses
  std::vector<std::unique_ptr<RegisteredEp>> eps;         // the CPU EP first
  std::map<MemoryInfo, AllocatorPtr> shared_allocators;
  std::atomic<int64_t> sessions_created{0};
  std::optional<ThreadPool> global_intra_op_pool;  // SetGlobalThreadPools
  int global_inter_op_threads = 0;

  void Register(const std::string& name, void* library, std::unique_ptr<EpFactory> factory);
  // The hardware device already listed with `device`'s PCI bus id (metadata "pci_bus_id"), or nullptr.
  HardwareDevice* FindByPciBusId(const HardwareDevice& device) const;
  // A transfer that copies src -> dst, or nullptr.
  DataTransfer* FindTransfer(const MemoryInfo& src, const MemoryInfo& dst) const;
  // The transfer that copies regions between these memories (DataTransfer::CanCopyRegions), or nullptr.
  DataTransfer* FindRegionTransfer(const MemoryInfo& src, const MemoryInfo& dst) const;
  AllocatorPtr SharedAllocator(const MemoryInfo& info) const;
};

// The hardware devices generic discovery finds: the host CPU (vendor from cpuid).
std::vector<HardwareDevice> DiscoverHostHardware();

}  // namespace tessera
