// The Vulkan EP plugin (libtessera_vulkan.so): a vendor-neutral GPU provider written only against the public EP API.
//
// Provider options: vk_physical_device, vk_device, vk_queue, queue_family_index (and vk_float16, vk_instance): the
// application's Vulkan objects (handles as decimal or 0x hex integers) that the EP runs on instead of its own, so that
// the application's dispatches before and after a run share its queue (vulkan_device.h, ExternalDevice);
// enable_graph_capture (0/1: IoBinding runs are recorded once into a command buffer and resubmitted,
// the Vulkan counterpart of CUDA graphs), memory_limit_bytes (N: cap of the session's device arena), run_streams (0/1,
// default 1: concurrent runs of a session get streams of their own), fused_attention (0/1, default 1: let the
// attention fusion rewrite attention subgraphs into ai.tessera::Attention for this EP; on an H200 BERT-base s128 fp16
// records in 1.76-1.79 ms fused against 2.24-2.28 unfused, fp32 equal, bench/results/gpu-2026-11-29-session34/).
#include <charconv>
#include <optional>
#include <type_traits>
#include <map>
#include <mutex>

#include "tessera/arena.h"
#include "tessera/ep/ep_factory.h"
#include "tessera/ep/shape_computations.h"
#include "tessera/status.h"
#include "vulkan_devices.h"
#include "vulkan_kernels.h"
#include "vulkan_memory.h"
#include "vulkan_profiling.h"
#include "vulkan_stream.h"
#include "vulkan_transfer.h"

namespace tessera::vulkan_ep {

namespace {

struct EpConfig {
  bool enable_graph_capture = false;
  bool run_streams = true;
  bool fused_attention = true;
  size_t memory_limit_bytes = 0;
  std::optional<ExternalDevice> external;  // the application's device and queue
};

uint64_t ParseInteger(const std::string& key, const std::string& value) {
  uint64_t v = 0;
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  const char* begin = value.data() + (hex ? 2 : 0);
  const auto [end, error] = std::from_chars(begin, value.data() + value.size(), v, hex ? 16 : 10);
  if (value.empty() || error != std::errc() || end != value.data() + value.size())
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option '", key, "' must be a non-negative integer ",
         "(decimal or 0x hex), got '", value, "'");
  return v;
}

template <typename Handle>
Handle ParseHandle(const std::string& key, const std::string& value) {
  const uint64_t v = ParseInteger(key, value);
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<Handle>(static_cast<uintptr_t>(v));
  } else {
    return static_cast<Handle>(v);
  }
}

EpConfig ParseOptions(const ProviderOptions& options) {
  EpConfig config;
  for (const auto& [key, value] : options) {
    if (key == "enable_graph_capture" || key == "run_streams" || key == "fused_attention") {
      if (value != "0" && value != "1")
        Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option '", key, "' must be 0 or 1, got '", value, "'");
      (key == "run_streams" ? config.run_streams
       : key == "fused_attention" ? config.fused_attention
                                  : config.enable_graph_capture) = value == "1";
    } else if (key == "memory_limit_bytes") {
      config.memory_limit_bytes = static_cast<size_t>(ParseInteger(key, value));
    } else if (key == "vk_physical_device" || key == "vk_device" || key == "vk_queue" ||
               key == "queue_family_index" || key == "vk_float16" || key == "vk_8bit_storage" ||
               key == "vk_instance") {
      if (!config.external) config.external.emplace();
      ExternalDevice& e = *config.external;
      if (key == "vk_physical_device") e.physical_device = ParseHandle<VkPhysicalDevice>(key, value);
      if (key == "vk_device") e.device = ParseHandle<VkDevice>(key, value);
      if (key == "vk_queue") e.queue = ParseHandle<VkQueue>(key, value);
      if (key == "queue_family_index") e.queue_family = static_cast<uint32_t>(ParseInteger(key, value));
      if (key == "vk_float16") e.float16 = ParseInteger(key, value) != 0;
      if (key == "vk_8bit_storage") e.storage8 = ParseInteger(key, value) != 0;
      // vk_instance: accepted for symmetry with the application's objects; device-level calls do not need it.
    } else if (key == "device_id") {
      // Consumed by device selection (the EP device's ordinal); accepted for onnxruntime-style option lists.
    } else {
      Fail(ErrorCode::kInvalidArgument, kEpName, ": unknown provider option '", key,
           "' (known: enable_graph_capture, memory_limit_bytes, run_streams, fused_attention, device_id, vk_instance, ",
           "vk_physical_device, vk_device, vk_queue, queue_family_index, vk_float16, vk_8bit_storage)");
    }
  }
  return config;
}

const char* DeviceTypeText(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string VendorName(uint32_t vendor) {
  switch (vendor) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";
    default: return "Vulkan vendor 0x" + [&] {
      char buffer[16];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), vendor, 16);
      return std::string(buffer, end);
    }();
  }
}

std::string VersionText(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." + std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

// Whether the node's attributes are ones the Vulkan kernels implement (kernel registrations cannot see attributes).
bool AttributesSupported(const Node& node, const Graph& graph, const PhysicalDeviceInfo& device) {
  const std::string& op = node.op_type;
  if (op == "Cast") {  // float <-> float16, int32 / int64 -> float or float16, bool <-> those (CastKernel)
    const auto to = static_cast<DataType>(node.GetInt("to", 0));
    return to == DataType::kFloat || (to == DataType::kFloat16 && device.float16) ||
           (to == DataType::kBool && device.storage8);
  }
  // Tensors only (Identity also passes sequences and optionals through on the CPU).
  for (const std::string& input : node.inputs) {
    const ValueInfo* info = input.empty() ? nullptr : graph.FindValueInfo(input);
    if (info != nullptr && info->kind != ValueInfo::Kind::kTensor) return false;
  }
  if ((op == "MaxPool" || op == "Dropout" || op == "BatchNormalization") && node.outputs.size() > 1 &&
      !std::all_of(node.outputs.begin() + 1, node.outputs.end(), [](const std::string& o) { return o.empty(); }))
    return false;  // MaxPool's indices, Dropout's mask, training-mode statistics
  if ((op == "MaxPool" || op == "AveragePool") && node.GetInts("kernel_shape").size() > 2) return false;
  if (op == "Resize") {
    const std::string mode = node.GetString("mode", "nearest");
    const std::string coord = node.GetString("coordinate_transformation_mode", "half_pixel");
    const bool known_coord = coord == "half_pixel" || coord == "asymmetric" || coord == "align_corners" ||
                             coord == "pytorch_half_pixel" || coord == "tf_half_pixel_for_nearest";
    return (mode == "nearest" || mode == "linear") && known_coord && node.GetInt("antialias", 0) == 0 &&
           !node.HasAttribute("axes");
  }
  if (op == "ConvTranspose") {
    const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
    if ((auto_pad != "NOTSET" && auto_pad != "VALID") || node.HasAttribute("output_shape")) return false;
  }
  if (op == "LayerNormalization") return node.GetInt("stash_type", 1) == 1;
  if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
      op == "GlobalMaxPool") {
    const ValueInfo* x = graph.FindValueInfo(node.inputs[0]);
    if (x != nullptr && x->shape && x->shape->size() != 3 && x->shape->size() != 4) return false;
    if (node.inputs.size() > 1) {  // a constant weight tells the convolution's rank when the input's shape is unknown
      auto w = graph.initializers.find(node.inputs[1]);
      if (w != graph.initializers.end() && w->second.shape().rank() != 3 && w->second.shape().rank() != 4) return false;
    }
  }
  return true;
}

class VulkanExecutionProvider : public ExecutionProvider {
 public:
  VulkanExecutionProvider(std::shared_ptr<VulkanDevice> device, const EpConfig& config, VulkanDevices& devices)
      : device_(std::move(device)), config_(config), transfer_(devices) {
    ArenaOptions options;
    options.max_bytes = config.memory_limit_bytes;
    options.stream_fences = config.run_streams;
    device_allocator_ = std::make_shared<Arena>(std::make_shared<VulkanBufferAllocator>(device_, false), options);
    host_allocator_ = std::make_shared<Arena>(std::make_shared<VulkanBufferAllocator>(device_, true), ArenaOptions{});
    RegisterVulkanKernels(kernels_, device_->info());
  }

  const std::string& type() const override { return type_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  const MemoryInfo& memory_info() const override { return device_->device_memory(); }
  AllocatorPtr allocator(MemoryType type) override {
    return type == MemoryType::kDefault ? device_allocator_ : host_allocator_;
  }
  DataTransfer* data_transfer() override { return &transfer_; }
  std::unique_ptr<Stream> CreateStream() override { return std::make_unique<VulkanStream>(*device_); }

  std::vector<size_t> GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const override {
    const std::set<size_t> shape_computations = ShapeComputations(graph);  // left to the CPU
    std::vector<size_t> taken;
    for (size_t i : ExecutionProvider::GetCapability(graph, unassigned))
      if (AttributesSupported(*graph.nodes[i], graph, device_->info()) && shape_computations.count(i) == 0)
        taken.push_back(i);
    return taken;
  }

  uint32_t capability_flags() const override {
    return kEpRunHooks | kEpGraphCapture | kEpProfiling | (config_.run_streams ? kEpRunStreams : 0u);
  }
  std::unique_ptr<DeviceTimer> CreateDeviceTimer(Stream& stream) override {
    auto* vulkan = dynamic_cast<VulkanStream*>(&stream);
    return vulkan != nullptr ? VulkanDeviceTimer::Create(*vulkan) : nullptr;
  }
  // Each run's work is submitted when it has been recorded, not only when the host waits for it.
  void OnRunEnd(Stream* stream) override {
    if (auto* vulkan = dynamic_cast<VulkanStream*>(stream)) vulkan->Flush();
  }
  bool graph_capture_enabled() const override { return config_.enable_graph_capture; }
  // ai.tessera::Attention runs here when a graph has it; the fusion makes it unless fused_attention = 0.
  bool PrefersFusion(const std::string& op_type, const std::string& domain) const override {
    return !(op_type == "Attention" && domain == "ai.tessera") || config_.fused_attention;
  }
  void BeginCapture(Stream& stream, int /*key*/) override { static_cast<VulkanStream&>(stream).BeginCapture(); }
  void EndCapture(Stream& stream, int key) override {
    std::unique_ptr<CapturedWork> work = static_cast<VulkanStream&>(stream).EndCapture();
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    graphs_[key] = std::move(work);
  }
  void ReplayGraph(Stream& stream, int key) override {
    std::shared_ptr<CapturedWork> work;
    {
      std::lock_guard<std::mutex> lock(graphs_mutex_);
      auto it = graphs_.find(key);
      if (it == graphs_.end()) Fail(ErrorCode::kInvalidArgument, kEpName, ": no captured run under key ", key);
      work = it->second;
    }
    static_cast<VulkanStream&>(stream).Replay(*work);
  }
  void ReleaseGraph(int key) override {
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    graphs_.erase(key);
  }

 private:
  const std::string type_ = kEpName;
  std::shared_ptr<VulkanDevice> device_;
  EpConfig config_;
  KernelRegistry kernels_;
  AllocatorPtr device_allocator_, host_allocator_;
  VulkanDataTransfer transfer_;
  std::mutex graphs_mutex_;
  std::map<int, std::shared_ptr<CapturedWork>> graphs_;
};

class VulkanEpFactory : public EpFactory {
 public:
  std::string name() const override { return kEpName; }
  std::string vendor() const override { return "Tessera"; }
  std::string version() const override { return "0.1.0"; }

  std::vector<HardwareDevice> DiscoverHardware() override {
    std::vector<HardwareDevice> out;
    if (devices_.instance() == nullptr) return out;
    std::map<uint32_t, uint32_t> per_vendor;
    for (size_t i = 0; i < devices_.size(); ++i) {
      const PhysicalDeviceInfo& info = devices_.instance()->devices()[i];
      const VkPhysicalDeviceProperties& p = info.properties;
      HardwareDevice device;
      device.type = DeviceType::kGpu;
      device.vendor_id = p.vendorID;
      device.device_id = p.deviceID;
      device.vendor = VendorName(p.vendorID);
      device.ordinal = per_vendor[p.vendorID]++;
      device.metadata = {
          {"name", p.deviceName},
          {"vulkan_index", std::to_string(i)},
          {"vulkan_device_type", DeviceTypeText(p.deviceType)},
          {"vulkan_api_version", VersionText(p.apiVersion)},
          {"driver_version", std::to_string(p.driverVersion)},
          {"subgroup_size", std::to_string(info.subgroup_size)},
          {"float16", info.float16 ? "1" : "0"},
          {"8bit_storage", info.storage8 ? "1" : "0"},
          {"cooperative_matrix", info.cooperative_matrix ? "1" : "0"},
          {"float16_matrix_kernels", info.coop_f16 ? "cooperative_matrix_nv" : "fma_tiles"},
          {"memory_bytes", std::to_string(info.device_local_bytes)},
          {"device_uuid", info.device_uuid},
      };
      if (!info.pci_bus_id.empty()) device.metadata["pci_bus_id"] = info.pci_bus_id;
      out.push_back(std::move(device));
    }
    return out;
  }

  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* device : devices) {
      auto it = device->metadata.find("vulkan_index");
      if (it == device->metadata.end()) continue;
      const uint32_t index = static_cast<uint32_t>(std::stoul(it->second));
      if (index >= devices_.size()) continue;
      EpDevice ep;
      ep.ep_name = kEpName;
      ep.ep_vendor = "Tessera";
      ep.device = device;
      ep.ep_metadata = {{"vulkan_index", it->second}};
      ep.device_memory = DeviceMemory(index);
      ep.host_accessible_memory = ep.device_memory;
      ep.host_accessible_memory->name = "VulkanHostVisible";
      ep.host_accessible_memory->memory_type = MemoryType::kHostAccessible;
      ep.factory = this;
      out.push_back(std::move(ep));
    }
    return out;
  }

  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice& device, const ProviderOptions& options) override {
    const EpConfig config = ParseOptions(options);
    const ExternalDevice* external = config.external ? &*config.external : nullptr;
    return std::make_unique<VulkanExecutionProvider>(devices_.Get(IndexOf(device), external), config, devices_);
  }

  AllocatorPtr CreateAllocator(const MemoryInfo& info) override {
    if (!devices_.Owns(info)) return nullptr;
    return std::make_shared<VulkanBufferAllocator>(devices_.Get(info.device_id),
                                                   info.memory_type == MemoryType::kHostAccessible);
  }

  std::unique_ptr<DataTransfer> CreateDataTransfer() override {
    return std::make_unique<VulkanDataTransfer>(devices_);
  }

  std::unique_ptr<Stream> CreateStream(const MemoryInfo& info) override {
    if (!devices_.Owns(info)) return nullptr;
    return std::make_unique<VulkanStream>(*devices_.Get(info.device_id));
  }

 private:
  // The memory info of Vulkan device `index` without creating its VkDevice (discovery stays cheap).
  MemoryInfo DeviceMemory(uint32_t index) const {
    MemoryInfo info;
    info.name = "Vulkan";
    info.device_type = DeviceType::kGpu;
    info.vendor_id = devices_.instance()->devices()[index].properties.vendorID;
    info.device_id = index;
    info.memory_type = MemoryType::kDefault;
    info.address_space = kVulkanAddressSpace;
    return info;
  }
  static uint32_t IndexOf(const EpDevice& device) {
    return static_cast<uint32_t>(std::stoul(device.ep_metadata.at("vulkan_index")));
  }

  VulkanDevices devices_;
};

}  // namespace

}  // namespace tessera::vulkan_ep

extern "C" __attribute__((visibility("default"))) tessera::EpFactory* TesseraCreateEpFactory(uint32_t api_version,
                                                                                             const char* /*name*/) {
  if (api_version != TESSERA_EP_API_VERSION) return nullptr;
  return new tessera::vulkan_ep::VulkanEpFactory();
}
