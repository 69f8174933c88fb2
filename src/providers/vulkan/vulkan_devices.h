// The Vulkan devices of one factory: the instance, and each physical device's VulkanDevice, created on first use and
// shared by every session, allocator, stream and transfer of the factory, with a staging arena of host-visible memory
// for copies from and to pageable host memory.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "vulkan_device.h"
#include "tessera/allocator.h"

namespace tessera::vulkan_ep {

class VulkanDevices {
 public:
  // No instance (and no devices) when Vulkan cannot be initialized here; `error()` says why.
  VulkanDevices();
  ~VulkanDevices();
  const VulkanInstance* instance() const { return instance_.get(); }
  const std::string& error() const { return error_; }
  size_t size() const { return instance_ ? instance_->devices().size() : 0; }
  // The device of ordinal `ordinal` (created now if needed); throws kInvalidArgument for an unknown ordinal. With
  // `external` it is the application's VkDevice: one VkDevice serves each physical device in a process, so the first
  // session (or allocator, stream) on an ordinal decides which, and asking for another one later throws
  // kInvalidArgument naming both.
  std::shared_ptr<VulkanDevice> Get(uint32_t ordinal, const ExternalDevice* external = nullptr);
  // Whether `info` is device-local or host-visible memory of one of these devices.
  bool Owns(const MemoryInfo& info) const;

 private:
  std::shared_ptr<VulkanInstance> instance_;
  std::string error_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<VulkanDevice>> devices_;  // the EP's own VkDevices
  // Application VkDevices, held only while sessions, allocators or tensors use them: the application destroys its
  // device once it has destroyed those.
  std::vector<std::weak_ptr<VulkanDevice>> external_;
};

}  // namespace tessera::vulkan_ep
