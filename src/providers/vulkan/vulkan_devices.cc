#include "vulkan_devices.h"

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
  external_.resize(instance_->devices().size());
}

VulkanDevices::~VulkanDevices() {
  devices_.clear();  // before the instance
}

std::shared_ptr<VulkanDevice> VulkanDevices::Get(uint32_t ordinal, const ExternalDevice* external) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ordinal >= devices_.size())
    Fail(ErrorCode::kInvalidArgument, kEpName, ": no Vulkan device with ordinal ", ordinal, " (", devices_.size(),
         " found)");
  std::shared_ptr<VulkanDevice> current = devices_[ordinal] ? devices_[ordinal] : external_[ordinal].lock();
  if (!current) {
    current = std::make_shared<VulkanDevice>(instance_, ordinal, external);
    if (external != nullptr) {
      external_[ordinal] = current;
    } else {
      devices_[ordinal] = current;
    }
  } else if (external != nullptr && current->handle() != external->device) {
    Fail(ErrorCode::kInvalidArgument, kEpName, ": Vulkan device ", ordinal, " already runs on ",
         current->external() ? "another application VkDevice" : "the EP's own VkDevice",
         "; pass the application's vk_device before any other session, allocator or stream uses the device (one ",
         "VkDevice per physical device in a process)");
  }
  return current;
}

bool VulkanDevices::Owns(const MemoryInfo& info) const {
  return info.address_space == kVulkanAddressSpace && info.device_type == DeviceType::kGpu &&
         info.device_id < devices_.size() &&
         (!instance_ || instance_->devices()[info.device_id].properties.vendorID == info.vendor_id);
}

}  // namespace tessera::vulkan_ep
