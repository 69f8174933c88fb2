// Allocators of the Vulkan EP: one VkBuffer (with its own VkDeviceMemory) per Allocate, in device-local memory
// (tensors carry the buffer's device address) or in mapped host-visible memory (tensors carry the host pointer).
// Sessions and the Environment wrap them in Arenas, which sub-allocate large blocks, so that buffers are created only
// when an arena grows.
#pragma once

#include <memory>
#include <mutex>

#include "vulkan_device.h"
#include "tessera/allocator.h"

namespace tessera::vulkan_ep {

class VulkanBufferAllocator : public Allocator {
 public:
  VulkanBufferAllocator(std::shared_ptr<VulkanDevice> device, bool host_visible);
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  const MemoryInfo& Info() const override;
  AllocatorStats Stats() const override;

 private:
  std::shared_ptr<VulkanDevice> device_;
  const bool host_visible_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::map<void*, size_t> sizes_;
};

}  // namespace tessera::vulkan_ep
