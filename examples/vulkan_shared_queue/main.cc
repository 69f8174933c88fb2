// vulkan_shared_queue MODEL [WIDTH HEIGHT]: the application owns the Vulkan device and queue, pre-processes a frame
// on the GPU, hands the device and queue to Tessera's Vulkan EP, runs MODEL on the frame, and post-processes the
// result on the GPU -- all on one VkQueue, with no host wait between the three steps (the Vulkan counterpart of
// DirectML in a DirectX 12 pipeline). MODEL takes an image [1, 3, H, W] in [0, 1] and returns one of the same shape
// (e.g. examples/tiled_inference/tone_curve.onnx). The result is checked against the CPU EP.
//
// Ordering: work on one queue runs in submission order once each command buffer starts with a pipeline barrier,
// which Tessera's command buffers do; the application's post-processing command buffer starts with one too. Then the
// same run ordered by timeline semaphores (Stream::WaitNative, Event::native_point), as work on another queue would
// be. The plugin comes from TESSERA_PLUGIN (libtessera_vulkan.so).
#include <algorithm>
#include <vulkan/vulkan.h>

#include <cmath>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <tessera/tessera.h>

namespace {

const uint32_t kPreprocess[] =
#include "preprocess.spv.inc"
    ;
const uint32_t kPostprocess[] =
#include "postprocess.spv.inc"
    ;

void Check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(result));
}

VKAPI_ATTR VkBool32 VKAPI_CALL OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  std::cerr << "Vulkan validation (application): " << data->pMessage << "\n";
  return VK_FALSE;
}

std::string Uuid(VkPhysicalDevice device) {
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &id;
  vkGetPhysicalDeviceProperties2(device, &properties);
  std::ostringstream os;
  os << std::hex << std::setfill('0');
  for (uint8_t b : id.deviceUUID) os << std::setw(2) << static_cast<int>(b);
  return os.str();
}

std::string Handle(const void* handle) { return std::to_string(reinterpret_cast<uintptr_t>(handle)); }

// The application's Vulkan objects: instance, device, queue, buffers and its two compute pipelines.
struct App {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  bool float16 = false;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline preprocess = VK_NULL_HANDLE, postprocess = VK_NULL_HANDLE;
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t address = 0;
    void* mapped = nullptr;
  };
  std::deque<Buffer> buffers;  // a deque: references to its buffers stay valid as it grows

  void Create(const std::string& uuid) {
    const char* validation_env = std::getenv("TESSERA_VULKAN_VALIDATION");
    const bool validation = validation_env != nullptr && std::strcmp(validation_env, "1") == 0;
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vulkan_shared_queue";
    app.apiVersion = VK_API_VERSION_1_2;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    create.pApplicationInfo = &app;
    if (validation) {
      create.enabledLayerCount = 1;
      create.ppEnabledLayerNames = &layer;
      create.enabledExtensionCount = 1;
      create.ppEnabledExtensionNames = &debug_utils;
    }
    Check(vkCreateInstance(&create, nullptr, &instance), "vkCreateInstance");
    if (validation) {
      auto make = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
      VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
      info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
      info.pfnUserCallback = OnMessage;
      if (make != nullptr) make(instance, &info, nullptr, &messenger);
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    for (VkPhysicalDevice d : devices)
      if (Uuid(d) == uuid) physical = d;
    if (physical == VK_NULL_HANDLE) throw std::runtime_error("the Vulkan EP's device is not among this instance's");
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props.data());
    while (family < families && !(props[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    if (family == families) throw std::runtime_error("no compute queue family");

    // The features the Vulkan EP needs: buffer device addresses and timeline semaphores (+ float16 when there).
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.pNext = &f11;
    VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    supported.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(physical, &supported);
    float16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess;
    VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    e11.storageBuffer16BitAccess = float16;
    VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    e12.pNext = &e11;
    e12.bufferDeviceAddress = VK_TRUE;
    e12.timelineSemaphore = VK_TRUE;
    e12.shaderFloat16 = float16;
    VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    enabled.pNext = &e12;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.pNext = &enabled;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    Check(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.queueFamilyIndex = family;
    Check(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 24};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &range;
    Check(vkCreatePipelineLayout(device, &layout_info, nullptr, &layout), "vkCreatePipelineLayout");
    preprocess = Pipeline(kPreprocess, sizeof(kPreprocess));
    postprocess = Pipeline(kPostprocess, sizeof(kPostprocess));
  }

  VkPipeline Pipeline(const uint32_t* code, size_t bytes) {
    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = bytes;
    module_info.pCode = code;
    VkShaderModule module = VK_NULL_HANDLE;
    Check(vkCreateShaderModule(device, &module_info, nullptr, &module), "vkCreateShaderModule");
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.layout = layout;
    VkPipeline pipeline = VK_NULL_HANDLE;
    Check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline), "vkCreateComputePipelines");
    vkDestroyShaderModule(device, module, nullptr);
    return pipeline;
  }

  // A buffer with a device address, device-local or mapped host-visible.
  Buffer& MakeBuffer(size_t bytes, bool host_visible) {
    Buffer b;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    Check(vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements req{};
    vkGetBufferMemoryRequirements(device, b.buffer, &req);
    VkPhysicalDeviceMemoryProperties memory{};
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    const VkMemoryPropertyFlags want = host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                    : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < memory.memoryTypeCount && type == UINT32_MAX; ++i)
      if ((req.memoryTypeBits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) throw std::runtime_error("no suitable memory type");
    VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.pNext = &flags;
    allocate.allocationSize = req.size;
    allocate.memoryTypeIndex = type;
    Check(vkAllocateMemory(device, &allocate, nullptr, &b.memory), "vkAllocateMemory");
    Check(vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (host_visible) Check(vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    VkBufferDeviceAddressInfo address{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    address.buffer = b.buffer;
    b.address = vkGetBufferDeviceAddress(device, &address);
    buffers.push_back(b);
    return buffers.back();
  }

  // Records one dispatch of `pipeline` over `pixels` invocations, with barriers before and after it.
  VkCommandBuffer Dispatch(VkPipeline pipeline, uint64_t a, uint64_t b, uint32_t pixels) {
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = pool;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    Check(vkAllocateCommandBuffers(device, &allocate, &cb), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    Check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
    // After everything submitted to the queue before (Tessera's run included).
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    struct {
      uint64_t a, b;
      uint32_t pixels;
    } push{a, b, pixels};
    vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 24, &push);
    vkCmdDispatch(cb, (pixels + 255) / 256, 1, 1);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                         0, nullptr);
    Check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    return cb;
  }

  void Submit(VkCommandBuffer cb, VkFence fence) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb;
    Check(vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit");
  }

  ~App() {
    if (device == VK_NULL_HANDLE) return;
    vkDeviceWaitIdle(device);
    for (Buffer& b : buffers) {
      vkDestroyBuffer(device, b.buffer, nullptr);
      vkFreeMemory(device, b.memory, nullptr);
    }
    vkDestroyPipeline(device, preprocess, nullptr);
    vkDestroyPipeline(device, postprocess, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
    if (messenger != VK_NULL_HANDLE) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy != nullptr) destroy(instance, messenger, nullptr);
    }
    vkDestroyInstance(instance, nullptr);
  }
};

uint32_t ToPixel(const float* planes, size_t i, size_t pixels) {
  uint32_t rgba = 255u << 24;
  for (uint32_t c = 0; c < 3; ++c)
    rgba |= static_cast<uint32_t>(std::min(std::max(planes[c * pixels + i], 0.0f), 1.0f) * 255.0f + 0.5f) << (8 * c);
  return rgba;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: vulkan_shared_queue MODEL [WIDTH HEIGHT]\n";
    return 2;
  }
  const int64_t width = argc > 3 ? std::atoll(argv[2]) : 64, height = argc > 3 ? std::atoll(argv[3]) : 48;
  const size_t pixels = static_cast<size_t>(width * height);
  try {
    App app;  // declared first: Tessera (and what it created on the application's device) goes before the device
    tessera::Environment env;
    const char* plugin = std::getenv("TESSERA_PLUGIN");
    env.RegisterEpLibrary("vulkan", plugin != nullptr ? plugin : "libtessera_vulkan.so");
    const tessera::EpDevice* ep_device = nullptr;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == "VulkanExecutionProvider" && ep_device == nullptr) ep_device = d;
    if (ep_device == nullptr) throw std::runtime_error("the Vulkan EP found no device");
    app.Create(ep_device->device->metadata.at("device_uuid"));
    std::cout << "application device: " << ep_device->device->metadata.at("name") << "\n";

    // The model runs on the application's device and queue.
    tessera::SessionOptions options;
    options.AddProvider("VulkanExecutionProvider", {{"vk_physical_device", Handle(app.physical)},
                                                    {"vk_device", Handle(app.device)},
                                                    {"vk_queue", Handle(app.queue)},
                                                    {"queue_family_index", std::to_string(app.family)},
                                                    {"vk_float16", app.float16 ? "1" : "0"}});
    tessera::Session session(env, argv[1], options);
    const std::string in = session.inputs()[0].name, out = session.outputs()[0].name;

    // The application's buffers: a frame of RGBA pixels written by the host, the planes Tessera reads and writes
    // (wrapped as tensors by their device addresses, no copy), and the RGBA result the host reads.
    App::Buffer& frame = app.MakeBuffer(pixels * 4, true);
    App::Buffer& planes_in = app.MakeBuffer(pixels * 3 * 4, false);
    App::Buffer& planes_out = app.MakeBuffer(pixels * 3 * 4, false);
    App::Buffer& result = app.MakeBuffer(pixels * 4, true);
    auto* rgba = static_cast<uint32_t*>(frame.mapped);
    for (size_t i = 0; i < pixels; ++i) rgba[i] = static_cast<uint32_t>((i * 2654435761u) >> 8) | (255u << 24);

    const tessera::Shape shape({1, 3, height, width});
    const size_t bytes = pixels * 3 * sizeof(float);
    tessera::Tensor x = tessera::Tensor::Wrap(tessera::DataType::kFloat, shape,
                                              reinterpret_cast<void*>(static_cast<uintptr_t>(planes_in.address)), bytes,
                                              ep_device->device_memory);
    tessera::Tensor y = tessera::Tensor::Wrap(tessera::DataType::kFloat, shape,
                                              reinterpret_cast<void*>(static_cast<uintptr_t>(planes_out.address)),
                                              bytes, ep_device->device_memory);
    tessera::IoBinding binding = session.CreateIoBinding();
    binding.BindInput(in, x);
    binding.BindOutput(out, y);

    // pre-processing -> Tessera -> post-processing, submitted back to back; the host waits once, at the end.
    VkCommandBuffer pre = app.Dispatch(app.preprocess, frame.address, planes_in.address, static_cast<uint32_t>(pixels));
    VkCommandBuffer post = app.Dispatch(app.postprocess, planes_out.address, result.address, static_cast<uint32_t>(pixels));
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence done = VK_NULL_HANDLE;
    Check(vkCreateFence(app.device, &fence_info, nullptr, &done), "vkCreateFence");
    app.Submit(pre, VK_NULL_HANDLE);
    tessera::RunOptions no_wait;
    no_wait.synchronize = false;  // records and submits on the same queue; returns without waiting for the device
    session.Run(binding, no_wait);
    app.Submit(post, done);
    Check(vkWaitForFences(app.device, 1, &done, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkDestroyFence(app.device, done, nullptr);

    // The same frame through the CPU EP, with the pre- and post-processing on the host.
    std::vector<float> planes(pixels * 3);
    for (size_t i = 0; i < pixels; ++i)
      for (uint32_t c = 0; c < 3; ++c) planes[c * pixels + i] = static_cast<float>((rgba[i] >> (8 * c)) & 255u) / 255.0f;
    tessera::Session cpu(env, argv[1], tessera::SessionOptions{});
    const tessera::Tensor expected = cpu.Run({{in, tessera::Tensor::FromVector<float>(shape, planes)}})[0].tensor();
    const auto* got = static_cast<const uint32_t*>(result.mapped);
    size_t mismatches = 0;
    for (size_t i = 0; i < pixels; ++i) {
      const uint32_t want = ToPixel(expected.Data<float>(), i, pixels);
      for (uint32_t c = 0; c < 4; ++c) {
        const int a = static_cast<int>((got[i] >> (8 * c)) & 255u), b = static_cast<int>((want >> (8 * c)) & 255u);
        if (std::abs(a - b) > 1) ++mismatches;  // rounding at a .5 boundary may differ by one level
      }
    }
    std::cout << width << "x" << height << " frame: pre-processing, Tessera's run and post-processing on one VkQueue, "
              << "one host wait; " << mismatches << " channel values differ from the CPU EP by more than one level\n";
    if (mismatches != 0) throw std::runtime_error("the GPU pipeline's output differs from the CPU EP's");
    std::cout << "shared-queue pipeline matches the CPU EP\n";

    // CopyTensors to and from the application's buffers (the EP knows them only by their device addresses; it copies
    // with a shader instead of vkCmdCopyBuffer): the network's output back to the host, a host tensor into the input
    // planes, and the input planes into the output buffer, device to device.
    tessera::Tensor y_host = tessera::Tensor::Allocate(tessera::DataType::kFloat, shape);
    env.CopyTensors({&y, 1}, {&y_host, 1}, nullptr);
    double worst = 0;
    for (size_t i = 0; i < pixels * 3; ++i)
      worst = std::max(worst, static_cast<double>(std::abs(y_host.Data<float>()[i] - expected.Data<float>()[i])));
    const tessera::Tensor ramp = tessera::Tensor::FromVector<float>(shape, [&] {
      std::vector<float> v(pixels * 3);
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) * 0.5f;
      return v;
    }());
    env.CopyTensors({&ramp, 1}, {&x, 1}, nullptr);
    env.CopyTensors({&x, 1}, {&y, 1}, nullptr);
    tessera::Tensor back = tessera::Tensor::Allocate(tessera::DataType::kFloat, shape);
    env.CopyTensors({&y, 1}, {&back, 1}, nullptr);
    const bool same = std::equal(back.Data<float>(), back.Data<float>() + pixels * 3, ramp.Data<float>());
    std::cout << "CopyTensors with the application's buffers: output vs CPU EP max difference " << worst
              << ", host -> buffer -> buffer -> host " << (same ? "exact" : "DIFFERENT") << "\n";
    if (worst > 1e-3 || !same) throw std::runtime_error("CopyTensors with the application's buffers failed");

    // Ordering by timeline semaphores instead of queue order (the application's work on another queue, or signalled
    // by the host): a Tessera stream waits for the application's semaphore, the run queues behind it
    // (RunOptions::stream), and the application waits for the point an event recorded after the run names. Here the
    // host signals the semaphore, so the run provably waited for it: its point is not reached before.
    VkSemaphoreTypeCreateInfo timeline_type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    timeline_type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    semaphore_info.pNext = &timeline_type;
    VkSemaphore ready = VK_NULL_HANDLE;
    Check(vkCreateSemaphore(app.device, &semaphore_info, nullptr, &ready), "vkCreateSemaphore");
    std::unique_ptr<tessera::Stream> stream = env.CreateStream(*ep_device);
    stream->WaitNative({reinterpret_cast<void*>(ready), 1});
    tessera::RunOptions on_stream;
    on_stream.stream = stream.get();
    on_stream.synchronize = false;
    session.Run(binding, on_stream);  // x holds the ramp now
    std::unique_ptr<tessera::Event> finished = stream->CreateEvent();
    finished->Record(*stream);
    const tessera::NativeSyncPoint point = finished->native_point();
    const bool reached_early = finished->Query();
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = ready;
    signal.value = 1;
    Check(vkSignalSemaphore(app.device, &signal), "vkSignalSemaphore");
    VkSemaphore finished_semaphore = reinterpret_cast<VkSemaphore>(point.handle);
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &finished_semaphore;
    wait.pValues = &point.value;
    Check(vkWaitSemaphores(app.device, &wait, UINT64_MAX), "vkWaitSemaphores");
    const tessera::Tensor ramp_expected = cpu.Run({{in, ramp}})[0].tensor();
    tessera::Tensor y_ramp = tessera::Tensor::Allocate(tessera::DataType::kFloat, shape);
    env.CopyTensors({&y, 1}, {&y_ramp, 1}, nullptr);
    double ramp_worst = 0;
    for (size_t i = 0; i < pixels * 3; ++i)
      ramp_worst = std::max(ramp_worst,
                            static_cast<double>(std::abs(y_ramp.Data<float>()[i] - ramp_expected.Data<float>()[i])));
    vkDestroySemaphore(app.device, ready, nullptr);
    std::cout << "timeline semaphores: the run waited for the application's semaphore ("
              << (reached_early ? "REACHED BEFORE THE SIGNAL" : "not reached before the signal")
              << "), the application waited for the run's point; output vs CPU EP max difference " << ramp_worst
              << "\n";
    if (reached_early || ramp_worst > 1e-3) throw std::runtime_error("ordering by timeline semaphores failed");
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
