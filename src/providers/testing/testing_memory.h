// Memory of the simulated device.
//
// Several instances of the device can exist (TESSERA_TESTING_DEVICE_COUNT, see testing_ep.cc): instance k is
// ordinal k, its memory infos carry device_id k, and its memory limit is its own. Copies between two instances
// stand for peer copies between GPUs.
//
// Device memory lives in its own address space as far as host code is concerned: every device
// allocation is a memfd mapped twice, once PROT_NONE (the pointer handed out, which tensors carry)
// and once read-write (the view only the device's own code uses). A host kernel that reads a device
// pointer because a copy was missed crashes at once, which is what the tests rely on. Device code
// turns a device pointer into its read-write view with DeviceView().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "tessera/allocator.h"
#include "tessera/status.h"
#include "tessera/tensor.h"

namespace tessera::testing_ep {

inline constexpr uint32_t kVendorId = 0xFFFE;  // made up: no PCI vendor uses it
inline constexpr uint32_t kDeviceId = 0x0001;
// Device memory of each instance; allocations past it fail with kOutOfMemory.
inline constexpr size_t kDeviceMemoryBytes = size_t{8} << 30;
// Instances at most.
inline constexpr uint32_t kMaxDevices = 8;

// MemoryInfo{"Testing", npu, 0xFFFE, ordinal, default, 64, arena}: where instance `ordinal`'s kernels keep
// tensors. Throws kInvalidArgument for an ordinal >= kMaxDevices.
const MemoryInfo& DeviceMemoryInfo(uint32_t ordinal = 0);
// MemoryInfo{"TestingHostAccessible", npu, 0xFFFE, ordinal, host-accessible, 64}: host memory the device
// reads directly (the simulated counterpart of pinned memory).
const MemoryInfo& HostAccessibleMemoryInfo(uint32_t ordinal = 0);
// Device memory of any instance.
bool IsDeviceMemory(const MemoryInfo& info);
// Device memory or host-accessible memory of any instance.
bool IsOwnMemory(const MemoryInfo& info);

// The read-write view of [device_ptr, device_ptr + bytes); throws kInvalidArgument when the range is
// not inside one device allocation. Thread-safe.
void* DeviceView(const void* device_ptr, size_t bytes);
// The memory device code reads or writes for `t`: the device view of device memory, the pointer itself
// for host-readable memory. Throws kInvalidArgument naming `what` for memory of any other device.
void* DeviceAccessibleData(const Tensor& t, const char* what);

// Raw device memory of instance `ordinal`: one dual-mapped memfd per Allocate, page granular. Wrap it in an Arena.
class DeviceAllocator : public Allocator {
 public:
  explicit DeviceAllocator(uint32_t ordinal = 0);
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  const MemoryInfo& Info() const override { return info_; }
  AllocatorStats Stats() const override;

 private:
  MemoryInfo info_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
};

// Host memory labelled as instance `ordinal`'s host-accessible memory.
class HostAccessibleAllocator : public Allocator {
 public:
  explicit HostAccessibleAllocator(uint32_t ordinal = 0);
  void* Allocate(size_t bytes) override { return host_->Allocate(bytes); }
  void Free(void* p) override { host_->Free(p); }
  const MemoryInfo& Info() const override { return info_; }
  AllocatorStats Stats() const override { return host_->Stats(); }

 private:
  AllocatorPtr host_;
  MemoryInfo info_;
};

// Forwards to another allocator until `allowed` allocations have been made, then throws
// kOutOfMemory (the "fail_allocations_after" provider option, for out-of-memory tests).
class FailingAllocator : public Allocator {
 public:
  FailingAllocator(AllocatorPtr inner, int64_t allowed) : inner_(std::move(inner)), allowed_(allowed) {}
  void* Allocate(size_t bytes) override { return AllocateOn(bytes, nullptr); }
  void Free(void* p) override { inner_->Free(p); }
  void* AllocateOn(size_t bytes, Stream* stream) override;
  void FreeAfter(void* p, Stream* stream) override { inner_->FreeAfter(p, stream); }
  const MemoryInfo& Info() const override { return inner_->Info(); }
  AllocatorStats Stats() const override { return inner_->Stats(); }

 private:
  AllocatorPtr inner_;
  int64_t allowed_;
  std::atomic<int64_t> made_{0};
};

}  // namespace tessera::testing_ep
