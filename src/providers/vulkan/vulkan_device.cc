#include "vulkan_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>

#include "tessera/arena.h"
#include "tessera/ep/logging.h"
#include "tessera/status.h"
#include "vulkan_memory.h"

namespace tessera::vulkan_ep {

const char* ResultName(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult (other)";
  }
}

void Check(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return;
  const ErrorCode code = result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY
                             ? ErrorCode::kOutOfMemory
                             : ErrorCode::kRuntime;
  Fail(code, kEpName, ": ", what, " failed: ", ResultName(result), " (", static_cast<int>(result), ")");
}

namespace {

bool EnvFlag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* /*user*/) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
    std::fprintf(stderr, "Vulkan validation: %s\n", data->pMessage != nullptr ? data->pMessage : "(no message)");
  return VK_FALSE;
}

bool HasExtension(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data());
  for (const auto& e : extensions)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

bool HasLayer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

}  // namespace

std::string DeviceUuid(VkPhysicalDevice device) {
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &id;
  vkGetPhysicalDeviceProperties2(device, &properties);
  std::ostringstream os;
  os << std::hex << std::setfill('0');
  for (uint8_t byte : id.deviceUUID) os << std::setw(2) << static_cast<int>(byte);
  return os.str();
}

namespace {

// The physical device's description when the EP can drive it.
// Whether `device` multiplies 16 x 16 x 16 float16 matrices into float accumulators at subgroup scope through
// VK_NV_cooperative_matrix (what coop_tile.glsl needs).
bool HasNvCoopF16(VkInstance instance, VkPhysicalDevice device) {
  if (!HasExtension(device, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return false;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &coop;
  vkGetPhysicalDeviceFeatures2(device, &features);
  if (!coop.cooperativeMatrix) return false;
  auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (properties == nullptr) return false;
  uint32_t count = 0;
  if (properties(device, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> kinds(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (properties(device, &count, kinds.data()) != VK_SUCCESS) return false;
  for (const VkCooperativeMatrixPropertiesNV& k : kinds)
    if (k.MSize == 16 && k.NSize == 16 && k.KSize == 16 && k.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        k.BType == VK_COMPONENT_TYPE_FLOAT16_NV && k.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        k.DType == VK_COMPONENT_TYPE_FLOAT32_NV && k.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  return false;
}

std::optional<PhysicalDeviceInfo> Describe(VkInstance instance, VkPhysicalDevice device) {
  PhysicalDeviceInfo info;
  info.handle = device;
  vkGetPhysicalDeviceProperties(device, &info.properties);
  if (info.properties.apiVersion < VK_API_VERSION_1_2) return std::nullopt;
  if (info.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !EnvFlag("TESSERA_VULKAN_SOFTWARE_DEVICES"))
    return std::nullopt;

  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features features11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  features12.pNext = &features11;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &features12;
  vkGetPhysicalDeviceFeatures2(device, &features);
  if (!features12.bufferDeviceAddress || !features12.timelineSemaphore) return std::nullopt;
  info.float16 = features12.shaderFloat16 && features11.storageBuffer16BitAccess;
  info.storage8 = features12.storageBuffer8BitAccess;

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, families.data());
  bool found = false;
  for (uint32_t i = 0; i < family_count && !found; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      info.compute_queue_family = i;
      info.timestamp_valid_bits = families[i].timestampValidBits;
      found = true;
    }
  }
  if (!found) return std::nullopt;

  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  const bool has_pci = HasExtension(device, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  if (has_pci) subgroup.pNext = &pci;
  VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties2.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(device, &properties2);
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  if (has_pci) {
    std::ostringstream os;
    os << std::hex << std::setfill('0') << std::setw(4) << pci.pciDomain << ':' << std::setw(2) << pci.pciBus << ':'
       << std::setw(2) << pci.pciDevice << '.' << pci.pciFunction;
    info.pci_bus_id = os.str();
  }
  info.cooperative_matrix = HasExtension(device, "VK_KHR_cooperative_matrix");
  const char* coop_setting = std::getenv("TESSERA_VULKAN_COOPERATIVE_MATRIX");
  // 22.3 KB of shared memory per workgroup (coop_tile.glsl).
  info.coop_f16 = info.float16 && info.subgroup_size == 32 &&
                  info.properties.limits.maxComputeSharedMemorySize >= 24 * 1024 && HasNvCoopF16(instance, device) &&
                  !(coop_setting != nullptr && std::string(coop_setting) == "0");
  info.device_uuid = DeviceUuid(device);

  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max(info.device_local_bytes, memory.memoryHeaps[i].size);
  return info;
}

}  // namespace

VulkanInstance::VulkanInstance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = VK_API_VERSION_1_2;
  std::vector<const char*> layers, extensions;
  const bool validation = EnvFlag("TESSERA_VULKAN_VALIDATION");
  if (validation) {
    if (!HasLayer("VK_LAYER_KHRONOS_validation"))
      Fail(ErrorCode::kRuntime, kEpName, ": TESSERA_VULKAN_VALIDATION=1 but the layer VK_LAYER_KHRONOS_validation is "
           "not installed (Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  create.pApplicationInfo = &app;
  create.enabledLayerCount = static_cast<uint32_t>(layers.size());
  create.ppEnabledLayerNames = layers.data();
  create.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  create.ppEnabledExtensionNames = extensions.data();
  Check(vkCreateInstance(&create, nullptr, &instance_), "vkCreateInstance");
  if (validation) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger.pfnUserCallback = OnValidationMessage;
    if (create_messenger != nullptr) create_messenger(instance_, &messenger, nullptr, &messenger_);
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  vkEnumeratePhysicalDevices(instance_, &count, physical.data());
  for (VkPhysicalDevice device : physical)
    if (auto info = Describe(instance_, device)) devices_.push_back(*info);
}

VulkanInstance::~VulkanInstance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

VulkanDevice::VulkanDevice(std::shared_ptr<const VulkanInstance> instance, uint32_t index, const ExternalDevice* external)
    : instance_(std::move(instance)), info_(instance_->devices().at(index)), ordinal_(index) {
  if (external != nullptr) {
    if (external->device == VK_NULL_HANDLE || external->queue == VK_NULL_HANDLE ||
        external->physical_device == VK_NULL_HANDLE)
      Fail(ErrorCode::kInvalidArgument, kEpName, ": an application's device needs vk_physical_device, vk_device and ",
           "vk_queue");
    const std::string uuid = DeviceUuid(external->physical_device);
    if (uuid != info_.device_uuid)
      Fail(ErrorCode::kInvalidArgument, kEpName, ": vk_physical_device (device UUID ", uuid, ") is not Vulkan device ",
           index, " (", info_.properties.deviceName, ", device UUID ", info_.device_uuid, ")");
    uint32_t family_count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(info_.handle, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    vkGetPhysicalDeviceQueueFamilyProperties(info_.handle, &family_count, families.data());
    if (external->queue_family >= family_count || !(families[external->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
      Fail(ErrorCode::kInvalidArgument, kEpName, ": queue_family_index ", external->queue_family,
           " is not a compute queue family of ", info_.properties.deviceName);
    owns_device_ = false;
    device_ = external->device;
    queue_ = external->queue;
    info_.compute_queue_family = external->queue_family;
    info_.timestamp_valid_bits = families[external->queue_family].timestampValidBits;
    info_.float16 = info_.float16 && external->float16;
    info_.storage8 = info_.storage8 && external->storage8;
    info_.coop_f16 = false;  // needs VK_NV_cooperative_matrix enabled on the device, which the EP cannot check
  } else {
    CreateOwnDevice();
  }
  InitializeDevice();
  Log(LogLevel::kInfo, kEpName, ": device ", ordinal_, " ", info_.properties.deviceName, " (",
      owns_device_ ? "own VkDevice" : "the application's VkDevice", ", queue family ", info_.compute_queue_family,
      "): float16 kernels ", info_.float16 ? "on" : "off", ", 8-bit storage ", info_.storage8 ? "on" : "off",
      ", cooperative matrix ", info_.cooperative_matrix ? "yes" : "no", ", float16 matrix kernels on ",
      info_.coop_f16 ? "cooperative matrices" : "FMA tiles", ", subgroup ", info_.subgroup_size);
}

void VulkanDevice::CreateOwnDevice() {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = info_.compute_queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  VkPhysicalDeviceVulkan11Features features11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  features11.storageBuffer16BitAccess = info_.float16;
  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  features12.pNext = &features11;
  features12.bufferDeviceAddress = VK_TRUE;
  features12.timelineSemaphore = VK_TRUE;
  features12.shaderFloat16 = info_.float16;
  features12.storageBuffer8BitAccess = info_.storage8;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &features12;
  VkPhysicalDeviceFeatures supported{};
  vkGetPhysicalDeviceFeatures(info_.handle, &supported);
  features.features.shaderInt64 = supported.shaderInt64;

  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  std::vector<const char*> extensions;
  if (info_.coop_f16) {
    coop.cooperativeMatrix = VK_TRUE;
    features11.pNext = &coop;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }

  VkDeviceCreateInfo create{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  create.pNext = &features;
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue;
  create.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  create.ppEnabledExtensionNames = extensions.data();
  Check(vkCreateDevice(info_.handle, &create, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, info_.compute_queue_family, 0, &queue_);
}

void VulkanDevice::InitializeDevice() {
  vkGetPhysicalDeviceMemoryProperties(info_.handle, &memory_properties_);
  wait_semaphores = reinterpret_cast<PFN_vkWaitSemaphores>(vkGetDeviceProcAddr(device_, "vkWaitSemaphores"));
  semaphore_counter_value =
      reinterpret_cast<PFN_vkGetSemaphoreCounterValue>(vkGetDeviceProcAddr(device_, "vkGetSemaphoreCounterValue"));

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  Check(vkCreatePipelineLayout(device_, &layout, nullptr, &layout_), "vkCreatePipelineLayout");

  device_memory_.name = "Vulkan";
  device_memory_.device_type = DeviceType::kGpu;
  device_memory_.vendor_id = info_.properties.vendorID;
  device_memory_.device_id = ordinal_;
  device_memory_.memory_type = MemoryType::kDefault;
  device_memory_.address_space = kVulkanAddressSpace;
  host_visible_memory_ = device_memory_;
  host_visible_memory_.name = "VulkanHostVisible";
  host_visible_memory_.memory_type = MemoryType::kHostAccessible;
}

VulkanDevice::~VulkanDevice() {
  staging_.reset();  // its buffers go back while the device is whole
  if (owns_device_) {
    vkDeviceWaitIdle(device_);
  } else {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    vkQueueWaitIdle(queue_);  // the application's device keeps running its own work
  }
  for (auto& [name, pipeline] : pipelines_) vkDestroyPipeline(device_, pipeline, nullptr);
  for (auto* blocks : {&device_blocks_, &host_blocks_}) {
    for (auto& [key, block] : *blocks) {
      vkDestroyBuffer(device_, block.buffer, nullptr);
      vkFreeMemory(device_, block.memory, nullptr);
    }
  }
  vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (owns_device_) vkDestroyDevice(device_, nullptr);
}

void VulkanDevice::WaitQueueIdle() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  vkQueueWaitIdle(queue_);
}

void VulkanDevice::Submit(const VkSubmitInfo& submit, VkFence fence) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  Check(vkQueueSubmit(queue_, 1, &submit, fence), "vkQueueSubmit");
}

VkPipeline VulkanDevice::Pipeline(const std::string& name) {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  const SpirV code = FindShader(name);
  if (code.words == nullptr) Fail(ErrorCode::kNotImplemented, kEpName, ": no shader named '", name, "'");
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = code.size_bytes;
  module_info.pCode = code.words;
  VkShaderModule module = VK_NULL_HANDLE;
  Check(vkCreateShaderModule(device_, &module_info, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo create{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  create.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  create.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  create.stage.module = module;
  create.stage.pName = "main";
  create.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult result = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &create, nullptr, &pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  Check(result, ("vkCreateComputePipelines for shader " + name).c_str());
  pipelines_[name] = pipeline;
  return pipeline;
}

uint32_t VulkanDevice::FindMemoryType(uint32_t type_bits, bool host_visible) const {
  // Device-local: DEVICE_LOCAL. Host-visible: HOST_VISIBLE | HOST_COHERENT, preferring HOST_CACHED (reads back fast).
  const VkMemoryPropertyFlags required =
      host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  int best = -1;
  for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = memory_properties_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if (best < 0) best = static_cast<int>(i);
    if (host_visible && (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) return i;
  }
  if (best < 0)
    Fail(ErrorCode::kRuntime, kEpName, ": device ", info_.properties.deviceName, " has no ",
         host_visible ? "host-visible coherent" : "device-local", " memory type for buffers");
  return static_cast<uint32_t>(best);
}

void* VulkanDevice::AllocateBuffer(size_t bytes, bool host_visible) {
  const VkDeviceSize size = std::max<VkDeviceSize>(bytes, 256);
  Block block;
  block.size = size;
  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.size = size;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  Check(vkCreateBuffer(device_, &buffer_info, nullptr, &block.buffer), "vkCreateBuffer");
  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(device_, block.buffer, &requirements);
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.pNext = &flags;
  allocate.allocationSize = requirements.size;
  const MemoryInfo& where = host_visible ? host_visible_memory_ : device_memory_;
  try {
    allocate.memoryTypeIndex = FindMemoryType(requirements.memoryTypeBits, host_visible);
    const VkResult result = vkAllocateMemory(device_, &allocate, nullptr, &block.memory);
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
      Fail(ErrorCode::kOutOfMemory, kEpName, ": out of memory allocating ", size, " bytes in ", where.ToString(),
           " (", ResultName(result), ")");
    Check(result, "vkAllocateMemory");
    Check(vkBindBufferMemory(device_, block.buffer, block.memory, 0), "vkBindBufferMemory");
    if (host_visible) {
      void* mapped = nullptr;
      Check(vkMapMemory(device_, block.memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
      block.mapped = static_cast<char*>(mapped);
    }
  } catch (...) {
    vkDestroyBuffer(device_, block.buffer, nullptr);
    if (block.memory != VK_NULL_HANDLE) vkFreeMemory(device_, block.memory, nullptr);
    throw;
  }
  VkBufferDeviceAddressInfo address{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  address.buffer = block.buffer;
  block.device_address = vkGetBufferDeviceAddress(device_, &address);
  std::lock_guard<std::mutex> lock(blocks_mutex_);
  if (host_visible) {
    host_blocks_[reinterpret_cast<uintptr_t>(block.mapped)] = block;
    return block.mapped;
  }
  device_blocks_[block.device_address] = block;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(block.device_address));
}

void VulkanDevice::FreeBuffer(void* p, bool host_visible) {
  Block block;
  {
    std::lock_guard<std::mutex> lock(blocks_mutex_);
    auto& blocks = host_visible ? host_blocks_ : device_blocks_;
    auto it = blocks.find(reinterpret_cast<uintptr_t>(p));
    if (it == blocks.end())
      Fail(ErrorCode::kInvalidArgument, kEpName, ": freeing ", p, ", which is not a buffer of this device");
    block = it->second;
    blocks.erase(it);
  }
  vkDestroyBuffer(device_, block.buffer, nullptr);
  vkFreeMemory(device_, block.memory, nullptr);
}

const VulkanDevice::Block* VulkanDevice::Find(const std::map<uintptr_t, Block>& blocks, uintptr_t key, size_t bytes) {
  auto it = blocks.upper_bound(key);
  if (it == blocks.begin()) return nullptr;
  --it;
  if (key + bytes > it->first + it->second.size) return nullptr;
  return &it->second;
}

BufferRange VulkanDevice::Resolve(const void* p, size_t bytes) const {
  const auto key = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(blocks_mutex_);
  if (const Block* b = Find(device_blocks_, key, bytes)) {
    const VkDeviceSize offset = key - b->device_address;
    return {b->buffer, offset, b->device_address + offset};
  }
  if (const Block* b = Find(host_blocks_, key, bytes)) {
    const VkDeviceSize offset = key - reinterpret_cast<uintptr_t>(b->mapped);
    return {b->buffer, offset, b->device_address + offset};
  }
  Fail(ErrorCode::kInvalidArgument, kEpName, ": [", p, ", +", bytes, ") is not inside a buffer of Vulkan device ",
       ordinal_, " (", info_.properties.deviceName, ")");
}

BufferRange VulkanDevice::ResolveOrAddress(const void* p, size_t bytes) const {
  const auto key = reinterpret_cast<uintptr_t>(p);
  {
    std::lock_guard<std::mutex> lock(blocks_mutex_);
    if (Find(device_blocks_, key, bytes) == nullptr && Find(host_blocks_, key, bytes) == nullptr)
      return {VK_NULL_HANDLE, 0, static_cast<uint64_t>(key)};
  }
  return Resolve(p, bytes);
}

const AllocatorPtr& VulkanDevice::Staging() {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  if (!staging_) {
    ArenaOptions options;
    options.initial_chunk_bytes = 4 << 20;
    // The arena lives inside this device: its allocator refers to the device without owning it.
    std::shared_ptr<VulkanDevice> self(std::shared_ptr<VulkanDevice>{}, this);
    staging_ = std::make_shared<Arena>(std::make_shared<VulkanBufferAllocator>(self, true), options);
  }
  return staging_;
}

bool VulkanDevice::IsHostVisiblePointer(const void* p) const {
  std::lock_guard<std::mutex> lock(blocks_mutex_);
  return Find(host_blocks_, reinterpret_cast<uintptr_t>(p), 1) != nullptr;
}

}  // namespace tessera::vulkan_ep
