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
  // Regions between two memories of one Vulkan device (device-local or host-visible): one vkCmdCopyBuffer per region
  // with a VkBufferCopy per row; rows of an application's buffer known only by its address go through the
  // address-copy shader one by one. Pageable host memory is not taken (the caller copies densely, through staging).
  bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const override;
  void CopyRegions(std::span<const CopyRegion> regions, Stream* stream) override;

 private:
  void CopyOne(const Tensor& src, Tensor& dst, Stream* stream);
  VulkanDevices& devices_;
};

}  // namespace tessera::vulkan_ep
