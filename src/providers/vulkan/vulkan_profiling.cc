#include "vulkan_profiling.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "tessera/status.h"

namespace tessera::vulkan_ep {

std::unique_ptr<DeviceTimer> VulkanDeviceTimer::Create(VulkanStream& stream) {
  if (stream.device().info().timestamp_valid_bits == 0) return nullptr;
  return std::make_unique<VulkanDeviceTimer>(stream);
}

VulkanDeviceTimer::VulkanDeviceTimer(VulkanStream& stream) : stream_(stream) { start_ = Mark(); }

VulkanDeviceTimer::~VulkanDeviceTimer() {
  // Queries may still be pending when a run failed before Resolve: the pools go when the stream's work has passed.
  for (auto& pool : pools_) stream_.KeepAlive(std::move(pool));
}

int64_t VulkanDeviceTimer::Mark() {
  const uint32_t index = used_ % kQueriesPerPool;
  if (index == 0) {
    VkQueryPoolCreateInfo create{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    create.queryType = VK_QUERY_TYPE_TIMESTAMP;
    create.queryCount = kQueriesPerPool;
    VkQueryPool pool = VK_NULL_HANDLE;
    const VkDevice device = stream_.device().handle();
    Check(vkCreateQueryPool(device, &create, nullptr, &pool), "vkCreateQueryPool (profiling)");
    pools_.emplace_back(pool, [device](VkQueryPool p) { vkDestroyQueryPool(device, p, nullptr); });
    stream_.ResetQueries(pool, 0, kQueriesPerPool);
  }
  if (!stream_.WriteTimestamp(pools_.back().get(), index)) return -1;
  return used_++;
}

void VulkanDeviceTimer::BeginStep() { steps_.emplace_back(Mark(), -1); }

void VulkanDeviceTimer::EndStep() {
  if (!steps_.empty()) steps_.back().second = Mark();
}

std::vector<DeviceTimer::Interval> VulkanDeviceTimer::Resolve() {
  std::vector<uint64_t> ticks(used_, 0);
  for (size_t p = 0; p < pools_.size(); ++p) {
    const uint32_t first = static_cast<uint32_t>(p) * kQueriesPerPool;
    const uint32_t count = std::min<uint32_t>(kQueriesPerPool, used_ - first);
    if (count == 0) continue;
    Check(vkGetQueryPoolResults(stream_.device().handle(), pools_[p].get(), 0, count, count * sizeof(uint64_t),
                                ticks.data() + first, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults (profiling)");
  }
  const uint32_t bits = stream_.device().info().timestamp_valid_bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const double us_per_tick = stream_.device().info().properties.limits.timestampPeriod / 1000.0;
  auto since_start = [&](int64_t query) {
    if (query < 0 || start_ < 0) return -1.0;
    return static_cast<double>((ticks[query] - ticks[start_]) & mask) * us_per_tick;
  };
  std::vector<Interval> intervals;
  intervals.reserve(steps_.size());
  for (const auto& [begin, end] : steps_) intervals.push_back({since_start(begin), since_start(end)});
  return intervals;
}

std::string VulkanDeviceTimer::track_name() const {
  char queue[32];
  std::snprintf(queue, sizeof(queue), "%p", stream_.native_handle());
  return std::string("Vulkan queue ") + queue + " (" + stream_.device().info().properties.deviceName + ")";
}

}  // namespace tessera::vulkan_ep
