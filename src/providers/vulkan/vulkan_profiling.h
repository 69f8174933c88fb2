// Device time of profiled runs on the Vulkan EP (kEpProfiling): timestamp queries around each step.
//
// A VulkanDeviceTimer writes the device's timestamp (vkCmdWriteTimestamp, bottom of the pipe: after everything
// recorded before it has completed, which includes the barrier that follows every command of a VulkanStream) when
// the run starts and before and after each step, into query pools of its own (reset on the stream before first use).
// Resolve reads them (waiting, after the session synchronized the stream) and turns ticks into microseconds since
// the start marker with the device's timestampPeriod, masked to the queue family's timestampValidBits. Steps
// recorded into a capture (a recorded command buffer) are not measured. Devices whose compute queue family writes
// no timestamps get no timer (the profile then has host times only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/ep/execution_provider.h"
#include "vulkan_stream.h"

namespace tessera::vulkan_ep {

class VulkanDeviceTimer : public DeviceTimer {
 public:
  // nullptr when the device cannot time (timestamp_valid_bits 0).
  static std::unique_ptr<DeviceTimer> Create(VulkanStream& stream);
  explicit VulkanDeviceTimer(VulkanStream& stream);
  ~VulkanDeviceTimer() override;
  void BeginStep() override;
  void EndStep() override;
  std::vector<Interval> Resolve() override;
  // "Vulkan queue 0x... (<device name>)".
  std::string track_name() const override;

 private:
  static constexpr uint32_t kQueriesPerPool = 512;
  // The next query, written now; -1 when it could not be (capture).
  int64_t Mark();

  VulkanStream& stream_;
  std::vector<std::shared_ptr<VkQueryPool_T>> pools_;  // destroyed once the stream's work so far has completed
  uint32_t used_ = 0;                                  // queries handed out
  int64_t start_ = -1;
  std::vector<std::pair<int64_t, int64_t>> steps_;  // (begin query, end query)
};

}  // namespace tessera::vulkan_ep
