// Environment: the process-wide registry of hardware devices, EP factories (built-in and plugins),
// shared allocators and data transfers. Create one and keep it alive longer than every session.
//
//   tessera::Environment env;
//   env.RegisterEpLibrary("cuda", "/opt/tessera/libtessera_cuda.so");
//   for (const EpDevice* d : env.GetEpDevices()) std::cout << d->ep_name << "\n";
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/arena.h"
#include "tessera/ep/ep_factory.h"
#include "tessera/stream.h"
#include "tessera/value.h"

namespace tessera {

enum class LogLevel { kVerbose, kInfo, kWarning, kError, kFatal };

class Environment {
 public:
  explicit Environment(LogLevel log_level = LogLevel::kWarning);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // Loads an EP plugin library through its TesseraCreateEpFactory entry point. Throws kIo when the
  // library cannot be opened, kInvalidArgument when the name is taken or the entry point is missing or
  // rejects this API version.
  void RegisterEpLibrary(const std::string& registration_name, const std::filesystem::path& path);
  // Removes the factory; sessions created with it must be destroyed first.
  void UnregisterEpLibrary(const std::string& registration_name);
  // Registers a factory object directly (for EPs linked into the application).
  void RegisterEpFactory(const std::string& registration_name, std::unique_ptr<EpFactory> factory);

  std::vector<const HardwareDevice*> GetHardwareDevices() const;
  // Every (EP, device) pair: the CPU EP first, then plugins in registration order.
  std::vector<const EpDevice*> GetEpDevices() const;
  EpFactory* FindFactory(const std::string& ep_name) const;

  // Shared allocators, one per MemoryInfo, used by every session whose EP allocates in that memory.
  // Create replaces an existing one; Get returns nullptr when there is none.
  AllocatorPtr CreateSharedAllocator(const EpDevice& device, MemoryType type, const ArenaOptions* arena_options);
  AllocatorPtr GetSharedAllocator(const MemoryInfo& info) const;
  void ReleaseSharedAllocator(const MemoryInfo& info);

  // Copies src[i] into dst[i] (same type and element count; dst already allocated) between any two
  // memory spaces some registered EP can copy between. With a stream the copies are queued on it;
  // with nullptr the call returns after the data has arrived.
  void CopyTensors(std::span<const Tensor> src, std::span<Tensor> dst, Stream* stream);
  // A stream for an EP device's memory (nullptr for the CPU).
  std::unique_ptr<Stream> CreateStream(const EpDevice& device);

  LogLevel log_level() const;
  // Internal state shared with sessions.
  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
