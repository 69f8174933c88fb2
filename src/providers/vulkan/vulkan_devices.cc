#include "vulkan_devices.h"

#include "vulkan_memory.h"
#include "tessera/arena.h"
#include "tessera/status.h"

namespace tessera::vulkan_ep {

VulkanDevices::VulkanDevices() {
  try {
    instance_ = std::make_shared<VulkanInstance>();
  } catch (const std::exception& e) {
    error_ = e.what();
    return;
  }
  devices_.resize(instance_->devices().size());
  staging_.resize(instance_->devices().size());
}

VulkanDevices::~VulkanDevices() {
  staging_.clear();
  devices_.clear();  // before the instance
}

std::shared_ptr<VulkanDevice> VulkanDevices::Get(uint32_t ordinal) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ordinal >= devices_.size())
    Fail(ErrorCode::kInvalidArgument, kEpName, ": no Vulkan device with ordinal ", ordinal, " (", devices_.size(),
         " found)");
  if (!devices_[ordinal]) devices_[ordinal] = std::make_shared<VulkanDevice>(instance_, ordinal);
  return devices_[ordinal];
}

AllocatorPtr VulkanDevices::Staging(uint32_t ordinal) {
  std::shared_ptr<VulkanDevice> device = Get(ordinal);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!staging_[ordinal]) {
    ArenaOptions options;
    options.initial_chunk_bytes = 4 << 20;
    staging_[ordinal] = std::make_shared<Arena>(std::make_shared<VulkanBufferAllocator>(device, true), options);
  }
  return staging_[ordinal];
}

bool VulkanDevices::Owns(const MemoryInfo& info) const {
  return info.address_space == kVulkanAddressSpace && info.device_type == DeviceType::kGpu &&
         info.device_id < devices_.size() &&
         (!instance_ || instance_->devices()[info.device_id].properties.vendorID == info.vendor_id);
}

}  // namespace tessera::vulkan_ep
