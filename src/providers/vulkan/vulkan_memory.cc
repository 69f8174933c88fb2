#include "vulkan_memory.h"

#include <algorithm>

namespace tessera::vulkan_ep {

VulkanBufferAllocator::VulkanBufferAllocator(std::shared_ptr<VulkanDevice> device, bool host_visible)
    : device_(std::move(device)), host_visible_(host_visible) {}

void* VulkanBufferAllocator::Allocate(size_t bytes) {
  void* p = device_->AllocateBuffer(bytes, host_visible_);
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[p] = bytes;
  stats_.bytes_in_use += bytes;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  ++stats_.num_reserves;
  return p;
}

void VulkanBufferAllocator::Free(void* p) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    if (it != sizes_.end()) {
      stats_.bytes_in_use -= it->second;
      stats_.bytes_reserved = stats_.bytes_in_use;
      sizes_.erase(it);
    }
  }
  device_->FreeBuffer(p, host_visible_);
}

const MemoryInfo& VulkanBufferAllocator::Info() const {
  return host_visible_ ? device_->host_visible_memory() : device_->device_memory();
}

AllocatorStats VulkanBufferAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tessera::vulkan_ep
