// Copies between host memory and the Vulkan EP's memory, and between buffers of one Vulkan device.
//
// host -> device: from the EP's host-visible memory with vkCmdCopyBuffer; from pageable memory through a staging
// buffer (the data is copied into it on the host at once, then uploaded on the stream). device -> host: into the
// EP's host-visible memory with vkCmdCopyBuffer (asynchronous on a stream); into pageable memory through a staging
// buffer, waiting for the stream (the data can only be read on the host after the device has written it).
// device -> device on one device: vkCmdCopyBuffer. Between two Vulkan devices: through the host, synchronously.
// An application's buffer wrapped by its device address (Tensor::Wrap) has no VkBuffer the EP knows: copies to and
// from it run the strided-copy shader on the addresses instead of vkCmdCopyBuffer (the address must be valid on the
// EP's device; the EP cannot check an application's address).
#pragma once

#include "vulkan_devices.h"
#include "tessera/ep/data_transfer.h"

namespace tessera::vulkan_ep {

class VulkanDataTransfer : public DataTransfer {
 public:
  explicit VulkanDataTransfer(VulkanDevices& devices) : devices_(devices) {}
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override;
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override;

 private:
  void CopyOne(const Tensor& src, Tensor& dst, Stream* stream);
  VulkanDevices& devices_;
};

}  // namespace tessera::vulkan_ep
