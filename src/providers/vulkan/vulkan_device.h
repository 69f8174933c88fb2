// The Vulkan instance and logical devices the Vulkan EP drives.
//
// VulkanInstance (one per factory) creates the VkInstance and lists the physical devices the EP can drive: Vulkan
// 1.2 or newer with buffer device addresses, timeline semaphores and a compute queue. Software implementations
// (VK_PHYSICAL_DEVICE_TYPE_CPU, e.g. Mesa's lavapipe) are listed only when TESSERA_VULKAN_SOFTWARE_DEVICES=1, so that
// applications never pick a software rasterizer by accident; the tests and CI set it. TESSERA_VULKAN_VALIDATION=1
// enables the Khronos validation layer and prints each message it reports as "Vulkan validation: ..." on stderr.
//
// VulkanDevice (one per physical device, created on first use and shared by every session) owns the VkDevice, its
// compute queue, the compute pipelines made from the embedded SPIR-V (one per shader, created on first use), and the
// address registry: every buffer the EP allocates has a device address (VK_KHR_buffer_device_address), which is what
// tensors in device memory carry as their data pointer; mapped host-visible buffers hand out their host pointer.
// Resolve() turns either back into (VkBuffer, offset) for copies. Shaders reach tensors through the addresses
// alone (GL_EXT_buffer_reference), with every parameter in push constants: no descriptor sets.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/allocator.h"
#include "tessera/device.h"

namespace tessera::vulkan_ep {

inline constexpr const char* kEpName = "VulkanExecutionProvider";
// Bytes of push constants every pipeline takes (the minimum every Vulkan device supports).
inline constexpr uint32_t kPushConstantBytes = 128;

// Throws kRuntimeError naming `what` when `result` is not VK_SUCCESS (kOutOfMemory for the out-of-memory codes).
void Check(VkResult result, const char* what);
const char* ResultName(VkResult result);

struct PhysicalDeviceInfo {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  uint32_t compute_queue_family = 0;
  bool float16 = false;   // shaderFloat16 and 16-bit storage buffers: the float16 kernels
  bool storage8 = false;  // 8-bit storage buffers: the kernels of bool (and int8 / uint8) tensors
  bool cooperative_matrix = false;  // VK_KHR_cooperative_matrix is there (metadata)
  // The matrix kernels' cooperative-matrix variants (shaders/coop_tile.glsl) can run: VK_NV_cooperative_matrix with
  // 16 x 16 x 16 float16 products into float accumulators at subgroup scope, subgroups of 32 and the float16 kernels;
  // enabled on the EP's own VkDevice unless TESSERA_VULKAN_COOPERATIVE_MATRIX=0 (never on an application's device).
  bool coop_f16 = false;
  uint32_t subgroup_size = 0;
  bool subgroup_shuffle = false;  // compute shaders may shuffle within a subgroup (shaders/attention_coop.comp)
  uint32_t timestamp_valid_bits = 0;  // of the compute queue family: 0 when it writes no timestamps (profiling)
  VkDeviceSize device_local_bytes = 0;
  std::string pci_bus_id;  // "0000:2a:00.0" when VK_EXT_pci_bus_info is there, else ""
  std::string device_uuid;  // VkPhysicalDeviceIDProperties::deviceUUID as 32 hex digits (matches across instances)
};

// The Vulkan objects of an application that the EP runs on instead of creating its own (provider options vk_device,
// vk_physical_device, vk_queue, queue_family_index, vk_float16, vk_8bit_storage; docs/VULKAN.md). The device must
// have been created with the Vulkan 1.2 features bufferDeviceAddress and timelineSemaphore (and shaderFloat16 with
// storageBuffer16BitAccess when vk_float16 = 1, storageBuffer8BitAccess when vk_8bit_storage = 1); the application
// keeps them alive while the EP uses them.
struct ExternalDevice {
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  bool float16 = false;
  bool storage8 = false;
};

// The deviceUUID of a physical device of any instance, as 32 hex digits.
std::string DeviceUuid(VkPhysicalDevice device);

class VulkanInstance {
 public:
  VulkanInstance();  // throws when no Vulkan instance can be created
  ~VulkanInstance();
  VulkanInstance(const VulkanInstance&) = delete;
  VulkanInstance& operator=(const VulkanInstance&) = delete;
  VkInstance handle() const { return instance_; }
  const std::vector<PhysicalDeviceInfo>& devices() const { return devices_; }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::vector<PhysicalDeviceInfo> devices_;
};

// Where an address handed out by the EP's allocators lies.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  uint64_t device_address = 0;  // of the byte at `offset`
};

class VulkanDevice {
 public:
  // `index` is the physical device's position in VulkanInstance::devices() (the EP's device ordinal).
  // The device keeps the instance alive (tensors in its memory may outlive the factory). With `external`, it runs on
  // the application's VkDevice and VkQueue (checked to be the same physical device) and never destroys them.
  VulkanDevice(std::shared_ptr<const VulkanInstance> instance, uint32_t index, const ExternalDevice* external = nullptr);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  const PhysicalDeviceInfo& info() const { return info_; }
  uint32_t ordinal() const { return ordinal_; }
  // Whether it runs on an application's VkDevice (ExternalDevice).
  bool external() const { return !owns_device_; }
  const MemoryInfo& device_memory() const { return device_memory_; }
  const MemoryInfo& host_visible_memory() const { return host_visible_memory_; }

  // vkQueueSubmit under the queue's lock (a VkQueue is externally synchronized).
  void Submit(const VkSubmitInfo& submit, VkFence fence = VK_NULL_HANDLE);
  // Waits until the queue has finished everything submitted to it (vkQueueWaitIdle). Before a stream's semaphore or
  // command pool is destroyed: a driver's queue thread may still touch a batch's objects after its semaphore signaled
  // (lavapipe did, crashing one run in a few hundred at process exit).
  void WaitQueueIdle();
  // The compute pipeline of the embedded shader `name` (e.g. "binary_f32"); created on first use, thread-safe.
  VkPipeline Pipeline(const std::string& name);
  VkPipelineLayout pipeline_layout() const { return layout_; }

  // A buffer of `bytes` in device-local (host_visible false) or mapped host-visible memory, registered for Resolve.
  // Returns the device address (device-local) or the host pointer (host-visible).
  void* AllocateBuffer(size_t bytes, bool host_visible);
  void FreeBuffer(void* p, bool host_visible);
  // The buffer holding [p, p + bytes): a device address of device-local memory or a host pointer into mapped
  // host-visible memory. Throws kInvalidArgument when no buffer of this device holds the range.
  BufferRange Resolve(const void* p, size_t bytes) const;
  // Resolve for a device-local pointer that may be an application's buffer wrapped by its device address: the
  // range of the EP's own buffer when there is one, else {VK_NULL_HANDLE, 0, address}, which only shaders (through
  // the address) can read or write.
  BufferRange ResolveOrAddress(const void* p, size_t bytes) const;
  // An arena of host-visible memory for staging copies from and to pageable host memory (created on first use).
  const AllocatorPtr& Staging();
  // Whether `p` is a host pointer into this device's host-visible buffers.
  bool IsHostVisiblePointer(const void* p) const;

  PFN_vkWaitSemaphores wait_semaphores = nullptr;
  PFN_vkGetSemaphoreCounterValue semaphore_counter_value = nullptr;

 private:
  struct Block {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    uint64_t device_address = 0;
    char* mapped = nullptr;
  };
  void CreateOwnDevice();
  void InitializeDevice();  // queue functions, pipeline layout, memory properties and infos
  uint32_t FindMemoryType(uint32_t type_bits, bool host_visible) const;
  static const Block* Find(const std::map<uintptr_t, Block>& blocks, uintptr_t key, size_t bytes);

  std::shared_ptr<const VulkanInstance> instance_;
  PhysicalDeviceInfo info_;
  uint32_t ordinal_ = 0;
  bool owns_device_ = true;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex queue_mutex_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::mutex pipelines_mutex_;
  std::map<std::string, VkPipeline> pipelines_;
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  mutable std::mutex blocks_mutex_;
  std::map<uintptr_t, Block> device_blocks_;  // by device address
  std::map<uintptr_t, Block> host_blocks_;    // by mapped host pointer
  MemoryInfo device_memory_, host_visible_memory_;
  std::mutex staging_mutex_;
  AllocatorPtr staging_;
};

// The embedded SPIR-V of shader `name`, or an empty span when there is none.
struct SpirV {
  const uint32_t* words = nullptr;
  size_t size_bytes = 0;
};
SpirV FindShader(const std::string& name);

}  // namespace tessera::vulkan_ep
