// Streams and events of the Vulkan EP.
//
// A VulkanStream records work (compute dispatches, buffer copies) into a command buffer and submits it to the
// device's queue in batches: when the batch holds kMaxBatchCommands commands, when an event is recorded, when the
// host synchronizes, and at the end of each run (OnRunEnd). Every command waits for the commands recorded before it
// through a barrier recorded just before it, which names only the stages and accesses involved (a dispatch after a
// dispatch: compute shader writes -> compute shader reads and writes; transfers likewise), every batch starts with
// one that orders it after all work submitted to the queue before it, and ends with one that makes its writes
// visible to the host, so a stream is an in-order queue like a CUDA stream. (Generic memory accesses in a barrier
// between two dispatches cost about 6 us on an H100 against 3 us for shader accesses:
// bench/results/gpu-2026-11-27-session22/.) Each submission signals the stream's timeline semaphore with the next value;
// batches are recycled (command buffer reset, kept-alive buffers released) once the semaphore has passed them.
//
// Events are (timeline semaphore, value) pairs: Record flushes the stream and takes its last value, Wait makes the
// next submission of another stream wait for it on the device, Synchronize waits on the host (vkWaitSemaphores).
// native_handle() is the VkQueue. Applications order their own submissions after Tessera's work through an event's
// native_point() (the semaphore and the value to wait for), and Tessera's next work after theirs through
// WaitNative() (a timeline semaphore of the same VkDevice and a value), without a host wait.
//
// Capture (the Vulkan counterpart of a CUDA graph): between BeginCapture and EndCapture, recorded commands go into
// one command buffer that is not submitted; EndCapture returns it, and Replay submits it again (it may be pending
// several times at once: VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <mutex>
#include <vector>

#include "vulkan_device.h"
#include "tessera/stream.h"

namespace tessera::vulkan_ep {

// A timeline semaphore shared by a stream and the events recorded on it (an event may outlive its stream).
class Timeline {
 public:
  explicit Timeline(VulkanDevice& device);
  ~Timeline();
  VkSemaphore handle() const { return semaphore_; }
  uint64_t Completed() const;
  void WaitFor(uint64_t value) const;

 private:
  VulkanDevice& device_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
};

// A recorded command buffer that can be submitted again (see VulkanStream::EndCapture).
struct CapturedWork {
  VulkanDevice* device = nullptr;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  std::vector<std::shared_ptr<void>> keep_alive;
  ~CapturedWork();
};

class VulkanStream : public Stream {
 public:
  static constexpr size_t kMaxBatchCommands = 64;

  explicit VulkanStream(VulkanDevice& device);
  ~VulkanStream() override;  // waits for its work
  void* native_handle() const override;
  void Synchronize() override;
  std::unique_ptr<Event> CreateEvent() override;
  const MemoryInfo& memory_info() const override { return device_.device_memory(); }
  // The next submission waits for the timeline semaphore point.handle (of this stream's VkDevice) to reach
  // point.value (AddWait).
  void WaitNative(const NativeSyncPoint& point) override;

  VulkanDevice& device() const { return device_; }
  // Records `shader` with `push` (at most kPushConstantBytes) as push constants over groups_x * groups_y * groups_z
  // workgroups.
  void Dispatch(const std::string& shader, const void* push, size_t push_bytes, uint32_t groups_x,
                uint32_t groups_y = 1, uint32_t groups_z = 1);
  void CopyBuffer(const BufferRange& src, const BufferRange& dst, size_t bytes);
  // One vkCmdCopyBuffer of several regions between two buffers (one barrier before it, as CopyBuffer).
  void CopyBufferRegions(VkBuffer src, VkBuffer dst, std::span<const VkBufferCopy> regions);
  // Records vkCmdResetQueryPool of queries [first, first + count) of `pool`.
  void ResetQueries(VkQueryPool pool, uint32_t first, uint32_t count);
  // Records a write of the device's timestamp into `query` of `pool` once everything recorded before it has
  // completed. Returns false, recording nothing, while a capture is open (profiling markers never enter a captured
  // command buffer).
  bool WriteTimestamp(VkQueryPool pool, uint32_t query);
  // Keeps `owner` alive until the work recorded so far has completed.
  void KeepAlive(std::shared_ptr<void> owner);
  // Submits what has been recorded (nothing when the batch is empty or a capture is open).
  void Flush();
  // The timeline value the last submission signals (0 before any).
  uint64_t last_value() const;
  const std::shared_ptr<Timeline>& timeline() const { return timeline_; }
  // The next submission waits (on the device) until `semaphore` reaches `value`.
  void AddWait(VkSemaphore semaphore, uint64_t value);

  void BeginCapture();
  std::unique_ptr<CapturedWork> EndCapture();
  void Replay(const CapturedWork& work);

 private:
  struct Batch {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    uint64_t value = 0;
    size_t num_commands = 0;
    std::vector<std::shared_ptr<void>> keep_alive;
    // The stages and write accesses of the commands recorded since the last barrier: what the next command's
    // barrier waits for (none: nothing to wait for within the batch).
    VkPipelineStageFlags unsynced_stages = 0;
    VkAccessFlags unsynced_writes = 0;
  };
  // Holds the stream's lock; what completed batches kept alive is released only after unlocking, since releasing
  // a buffer may record an event on this stream (a stream-ordered free), which takes the lock.
  class Guard {
   public:
    explicit Guard(VulkanStream& stream) : stream_(stream), lock_(stream.mutex_) {}
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    VulkanStream& stream_;
    std::unique_lock<std::mutex> lock_;
  };

  void BeginBatchLocked();
  void SubmitLocked(VkCommandBuffer commands);
  void FlushLocked();
  void RecycleLocked();
  // Records the barrier that orders a command of `stage` (reading and writing with `reads_writes`) after the
  // batch's unsynchronized commands, if any; then counts the command itself as unsynchronized (`stage`, `writes`).
  void OrderLocked(VkPipelineStageFlags stage, VkAccessFlags reads_writes, VkAccessFlags writes);
  // The batch's last barrier: its writes made available to later submissions and the host.
  void EndBarrierLocked();

  VulkanDevice& device_;
  std::shared_ptr<Timeline> timeline_;
  mutable std::mutex mutex_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  Batch current_;
  std::deque<Batch> in_flight_;
  std::vector<std::shared_ptr<void>> released_;  // kept-alive owners of completed batches, dropped by Guard
  std::vector<VkCommandBuffer> free_buffers_;
  std::vector<VkSemaphore> wait_semaphores_;
  std::vector<uint64_t> wait_values_;
  uint64_t last_value_ = 0;
  bool capturing_ = false;
  std::unique_ptr<CapturedWork> capture_;  // while capturing: the command buffer being recorded
  VkQueue queue_ = VK_NULL_HANDLE;
};

// Queues work on `stream` when it is a Vulkan stream of `device`; otherwise (null, or another EP's stream) on a
// temporary stream that is synchronized before returning. Either way `record` gets the stream to record on.
void OnStream(VulkanDevice& device, Stream* stream, const std::function<void(VulkanStream&)>& record);

}  // namespace tessera::vulkan_ep
