// Environment: the process-wide registry of hardware devices, EP factories (built-in and plugins),
// shared allocators and data transfers. Create one and keep it alive longer than every session.
//
//   tessera::Environment env;
//   env.RegisterEpLibrary("cuda", "/opt/tessera/libtessera_cuda.so");
//   for (const EpDevice* d : env.GetEpDevices()) std::cout << d->ep_name << "\n";
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include "tessera/ep/thread_pool.h"

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/arena.h"
#include "tessera/ep/data_transfer.h"
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
  // Copies 2-D regions of bytes (CopyRegion: rows at a pitch, e.g. a window of a larger image) between memories
  // whose EP copies regions (CanCopyRegions: the CUDA EP between its device memory and pinned or device memory, the
  // CPU EP between host buffers). Throws kInvalidArgument for a region that runs past its tensor's buffer or whose
  // rows overlap, kNotImplemented when no EP copies regions between the two memories. Stream as for CopyTensors.
  void CopyTensorRegions(std::span<const CopyRegion> regions, Stream* stream);
  bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const;
  // A stream for an EP device's memory (nullptr for the CPU).
  std::unique_ptr<Stream> CreateStream(const EpDevice& device);

  // ONNX Runtime's global thread pools: sessions created with SessionOptions::use_per_session_threads = false share
  // one intra-op pool of `intra_op_threads` threads (<= 0: one per core; ThreadPool::Shared: one parallel loop on
  // its threads at a time, a loop that finds them busy runs on its caller's thread), whatever their
  // intra_op_threads. `inter_op_threads` is kept for compatibility (a session runs its nodes one after another).
  // Once set, every session of this Environment must use them. Throws kInvalidArgument when a session has already
  // been created on this Environment, or when the pools are already set.
  void SetGlobalThreadPools(int intra_op_threads, int inter_op_threads = 0);
  // The shared intra-op pool, or nullptr when SetGlobalThreadPools was not called.
  const ThreadPool* global_intra_op_pool() const;
  int global_inter_op_threads() const;

  LogLevel log_level() const;
  // Internal state shared with sessions.
  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
