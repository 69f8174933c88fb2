// The simulated second device ("testing" EP plugin): a device with its own memory space, an
// asynchronous stream, copies and a few float kernels, so that CI can exercise partitioning, copy
// insertion, IO binding and CopyTensors across devices without a GPU.
//
// TESSERA_TESTING_DEVICE_COUNT (1 to kMaxDevices, default 1), read when the plugin's hardware is discovered
// (Environment::RegisterEpLibrary), sets how many instances exist: like the GPUs of one host, each has its own
// ordinal, memory, arena and streams, and copies between two of them stand for peer copies.
//
// Provider options: fail_allocations_after (N), memory_limit_bytes (N), enable_graph_capture, copy_streams,
// run_streams, automatic_graphs (0/1; automatic_graphs default 0, unlike the CUDA EP, so that tests of eager runs
// stay eager), automatic_graph_limit (N >= 1), task_delay_us (N: each task its streams run waits that long first,
// a slower device).
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "providers/testing/testing_kernels.h"
#include "providers/testing/testing_memory.h"
#include "providers/testing/testing_stream.h"
#include "providers/testing/testing_timer.h"
#include "providers/testing/testing_transfer.h"
#include "tessera/arena.h"
#include "tessera/ep/ep_factory.h"
#include "tessera/ep/logging.h"

namespace tessera::testing_ep {

namespace {

constexpr const char* kEpName = "TestingExecutionProvider";

struct EpConfig {
  std::optional<int64_t> fail_allocations_after;
  size_t memory_limit_bytes = 0;  // 0 = no limit
  bool enable_graph_capture = false;
  bool copy_streams = false;  // copies on their own streams (like the CUDA EP's do_copy_in_default_stream = 0)
  bool run_streams = true;    // streams per concurrent run (kEpRunStreams), like the CUDA EP
  int64_t task_delay_us = 0;  // slept before each task the EP's streams run: a slower device
  bool automatic_graphs = false;       // the session captures whole runs by itself (like the CUDA EP's default)
  int64_t automatic_graph_limit = 8;   // graphs per stream set
};

int64_t ParseNonNegative(const std::string& key, const std::string& text) {
  int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option '", key, "' must be a non-negative integer, got '",
         text, "'");
  return value;
}

EpConfig ParseOptions(const ProviderOptions& options) {
  EpConfig config;
  for (const auto& [key, value] : options) {
    if (key == "fail_allocations_after") {
      config.fail_allocations_after = ParseNonNegative(key, value);
    } else if (key == "automatic_graph_limit") {
      config.automatic_graph_limit = ParseNonNegative(key, value);
      if (config.automatic_graph_limit < 1)
        Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option 'automatic_graph_limit' must be at least 1");
    } else if (key == "task_delay_us") {
      config.task_delay_us = ParseNonNegative(key, value);
    } else if (key == "memory_limit_bytes") {
      config.memory_limit_bytes = static_cast<size_t>(ParseNonNegative(key, value));
    } else if (key == "enable_graph_capture" || key == "copy_streams" || key == "run_streams" ||
               key == "automatic_graphs") {
      if (value != "0" && value != "1")
        Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option '", key, "' must be 0 or 1, got '", value, "'");
      bool& flag = key == "copy_streams"       ? config.copy_streams
                   : key == "run_streams"      ? config.run_streams
                   : key == "automatic_graphs" ? config.automatic_graphs
                                               : config.enable_graph_capture;
      flag = value == "1";
    } else {
      Fail(ErrorCode::kInvalidArgument, kEpName, ": unknown provider option '", key,
           "' (known: fail_allocations_after, memory_limit_bytes, enable_graph_capture, copy_streams, run_streams, "
           "task_delay_us, automatic_graphs, automatic_graph_limit)");
    }
  }
  if (config.copy_streams && config.enable_graph_capture)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider options 'copy_streams' and 'enable_graph_capture' exclude ",
         "each other (a captured run has no copies)");
  return config;
}

AllocatorPtr CreateDeviceArena(uint32_t ordinal, const EpConfig& config) {
  ArenaOptions arena_options;
  arena_options.max_bytes = config.memory_limit_bytes;
  arena_options.stream_fences = config.copy_streams || config.run_streams;  // several streams use its memory
  AllocatorPtr arena = std::make_shared<Arena>(std::make_shared<DeviceAllocator>(ordinal), arena_options);
  if (!config.fail_allocations_after) return arena;
  return std::make_shared<FailingAllocator>(std::move(arena), *config.fail_allocations_after);
}

class TestingExecutionProvider : public ExecutionProvider {
 public:
  TestingExecutionProvider(uint32_t ordinal, const EpConfig& config)
      : ordinal_(ordinal),
        graph_capture_(config.enable_graph_capture),
        copy_streams_(config.copy_streams),
        run_streams_(config.run_streams),
        task_delay_(config.task_delay_us),
        automatic_graphs_(config.automatic_graphs),
        automatic_graph_limit_(static_cast<size_t>(config.automatic_graph_limit)),
        device_allocator_(CreateDeviceArena(ordinal, config)),
        host_accessible_allocator_(std::make_shared<HostAccessibleAllocator>(ordinal)) {
    RegisterTestingKernels(kernels_);
  }

  const std::string& type() const override { return type_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  const MemoryInfo& memory_info() const override { return DeviceMemoryInfo(ordinal_); }
  AllocatorPtr allocator(MemoryType type) override {
    return type == MemoryType::kDefault ? device_allocator_ : host_accessible_allocator_;
  }
  DataTransfer* data_transfer() override { return &transfer_; }
  std::unique_ptr<Stream> CreateStream() override {
    return std::make_unique<TestingStream>(DeviceMemoryInfo(ordinal_), task_delay_);
  }
  std::unique_ptr<Stream> CreateCopyStream() override {
    return copy_streams_ ? std::make_unique<TestingStream>(DeviceMemoryInfo(ordinal_), task_delay_) : nullptr;
  }

  // Graph capture records the closures a run queues and replays them: the same buffers, the same work,
  // like a CUDA graph.
  // run_streams: concurrent runs get streams of their own (every stream is an independent queue).
  uint32_t capability_flags() const override {
    return kEpGraphCapture | kEpProfiling | (run_streams_ ? kEpRunStreams : 0u);
  }
  bool graph_capture_enabled() const override { return graph_capture_; }
  bool automatic_graphs_enabled() const override { return automatic_graphs_; }
  size_t automatic_graph_limit() const override { return automatic_graph_limit_; }
  void ReleaseGraph(int key) override {
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    graphs_.erase(key);
  }
  void BeginCapture(Stream& stream, int /*key*/) override { static_cast<TestingStream&>(stream).BeginRecording(); }
  void EndCapture(Stream& stream, int key) override {
    auto work = static_cast<TestingStream&>(stream).EndRecording();
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    graphs_[key] = std::move(work);
  }
  void ReplayGraph(Stream& stream, int key) override {
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) Fail(ErrorCode::kInvalidArgument, kEpName, ": no graph captured under key ", key);
    for (const auto& work : it->second) static_cast<TestingStream&>(stream).Enqueue(work);
  }
  // Says which way the session went (tests of SetRunsReplayed read it from the verbose log).
  void SetRunsReplayed(bool replayed) override {
    Log(LogLevel::kVerbose, kEpName, ": runs ", replayed ? "are replayed as whole-run graphs" : "execute the kernels");
  }
  // Says when the session's creation is done (tests of OnSessionReady read it from the verbose log).
  void OnSessionReady() override { Log(LogLevel::kVerbose, kEpName, ": the session is ready"); }
  // Profiled runs: step times measured on the stream's worker thread.
  std::unique_ptr<DeviceTimer> CreateDeviceTimer(Stream& stream) override {
    return CreateTestingTimer(static_cast<TestingStream&>(stream));
  }

 private:
  const std::string type_ = kEpName;
  const uint32_t ordinal_;
  const bool graph_capture_;
  const bool copy_streams_;
  const bool run_streams_;
  const std::chrono::microseconds task_delay_;
  const bool automatic_graphs_;
  const size_t automatic_graph_limit_;
  std::mutex graphs_mutex_;
  std::map<int, std::vector<std::function<void()>>> graphs_;
  KernelRegistry kernels_;
  AllocatorPtr device_allocator_;
  AllocatorPtr host_accessible_allocator_;
  TestingDataTransfer transfer_;
};

bool IsSimulatedDevice(const HardwareDevice& device) {
  return device.type == DeviceType::kNpu && device.vendor_id == kVendorId && device.device_id == kDeviceId &&
         device.ordinal < kMaxDevices;
}

// TESSERA_TESTING_DEVICE_COUNT, 1 when unset; a value out of range is reported and clamped.
uint32_t DeviceCount() {
  const char* text = std::getenv("TESSERA_TESTING_DEVICE_COUNT");
  if (text == nullptr || *text == '\0') return 1;
  int64_t count = 0;
  const auto [end, error] = std::from_chars(text, text + std::strlen(text), count);
  if (error != std::errc() || *end != '\0' || count < 1 || count > kMaxDevices)
    Fail(ErrorCode::kInvalidArgument, "TESSERA_TESTING_DEVICE_COUNT must be 1 to ", kMaxDevices, ", got '", text, "'");
  return static_cast<uint32_t>(count);
}

class TestingEpFactory : public EpFactory {
 public:
  std::string name() const override { return kEpName; }
  std::string vendor() const override { return "Tessera"; }
  std::string version() const override { return "0.1.0"; }

  std::vector<HardwareDevice> DiscoverHardware() override {
    std::vector<HardwareDevice> devices;
    for (uint32_t ordinal = 0; ordinal < DeviceCount(); ++ordinal) {
      HardwareDevice device;
      device.type = DeviceType::kNpu;
      device.vendor_id = kVendorId;
      device.device_id = kDeviceId;
      device.ordinal = ordinal;
      device.vendor = "Tessera Simulated";
      device.metadata = {{"name", "Tessera simulated device"}, {"memory_bytes", std::to_string(kDeviceMemoryBytes)}};
      devices.push_back(std::move(device));
    }
    return devices;
  }

  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* device : devices) {
      if (!IsSimulatedDevice(*device)) continue;
      EpDevice ep;
      ep.ep_name = kEpName;
      ep.ep_vendor = "Tessera";
      ep.device = device;
      ep.device_memory = DeviceMemoryInfo(device->ordinal);
      ep.host_accessible_memory = HostAccessibleMemoryInfo(device->ordinal);
      ep.factory = this;
      out.push_back(std::move(ep));
    }
    return out;
  }

  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice& device, const ProviderOptions& options) override {
    return std::make_unique<TestingExecutionProvider>(device.device->ordinal, ParseOptions(options));
  }

  AllocatorPtr CreateAllocator(const MemoryInfo& info) override {
    if (IsDeviceMemory(info)) return std::make_shared<DeviceAllocator>(info.device_id);
    if (IsOwnMemory(info)) return std::make_shared<HostAccessibleAllocator>(info.device_id);
    return nullptr;
  }

  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return std::make_unique<TestingDataTransfer>(); }

  std::unique_ptr<Stream> CreateStream(const MemoryInfo& info) override {
    if (!IsOwnMemory(info)) return nullptr;
    return std::make_unique<TestingStream>(DeviceMemoryInfo(info.device_id));
  }
};

}  // namespace

}  // namespace tessera::testing_ep

extern "C" __attribute__((visibility("default"))) tessera::EpFactory* TesseraCreateEpFactory(uint32_t api_version,
                                                                                             const char* /*name*/) {
  if (api_version != TESSERA_EP_API_VERSION) return nullptr;
  return new tessera::testing_ep::TestingEpFactory();
}
