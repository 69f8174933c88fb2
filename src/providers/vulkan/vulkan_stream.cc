#include "vulkan_stream.h"

#include <cstring>
#include <functional>

#include "tessera/status.h"

namespace tessera::vulkan_ep {

// ---- timeline --------------------------------------------------------------------------------------------------

Timeline::Timeline(VulkanDevice& device) : device_(device) {
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo create{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  create.pNext = &type;
  Check(vkCreateSemaphore(device_.handle(), &create, nullptr, &semaphore_), "vkCreateSemaphore (timeline)");
}

Timeline::~Timeline() {
  device_.WaitQueueIdle();  // no batch that waits on or signals the semaphore is still being processed
  vkDestroySemaphore(device_.handle(), semaphore_, nullptr);
}

uint64_t Timeline::Completed() const {
  uint64_t value = 0;
  Check(device_.semaphore_counter_value(device_.handle(), semaphore_, &value), "vkGetSemaphoreCounterValue");
  return value;
}

void Timeline::WaitFor(uint64_t value) const {
  if (value == 0) return;
  VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wait.semaphoreCount = 1;
  wait.pSemaphores = &semaphore_;
  wait.pValues = &value;
  Check(device_.wait_semaphores(device_.handle(), &wait, UINT64_MAX), "vkWaitSemaphores");
}

CapturedWork::~CapturedWork() {
  if (device == nullptr) return;
  // A replay may still be pending: the command buffer and what it reads live until the device is idle.
  vkDeviceWaitIdle(device->handle());
  vkFreeCommandBuffers(device->handle(), pool, 1, &commands);
  vkDestroyCommandPool(device->handle(), pool, nullptr);
}

// ---- events ----------------------------------------------------------------------------------------------------

namespace {

class VulkanEvent : public Event {
 public:
  void Record(Stream& stream) override {
    auto* vulkan = dynamic_cast<VulkanStream*>(&stream);
    if (vulkan == nullptr) {  // not ours: the point is reached when that stream's work is
      stream.Synchronize();
      timeline_.reset();
      value_ = 0;
      return;
    }
    vulkan->Flush();
    timeline_ = vulkan->timeline();
    value_ = vulkan->last_value();
  }
  void Wait(Stream& stream) override {
    if (!timeline_ || value_ == 0) return;
    if (auto* vulkan = dynamic_cast<VulkanStream*>(&stream)) {
      vulkan->AddWait(timeline_->handle(), value_);
    } else {
      timeline_->WaitFor(value_);  // another EP's stream: wait on the host
    }
  }
  void Synchronize() override {
    if (timeline_) timeline_->WaitFor(value_);
  }
  bool Query() override { return !timeline_ || timeline_->Completed() >= value_; }
  NativeSyncPoint native_point() const override {
    if (!timeline_) return {};
    return {reinterpret_cast<void*>(timeline_->handle()), value_};
  }

 private:
  std::shared_ptr<Timeline> timeline_;
  uint64_t value_ = 0;
};

}  // namespace

// ---- stream ----------------------------------------------------------------------------------------------------

VulkanStream::VulkanStream(VulkanDevice& device)
    : device_(device), timeline_(std::make_shared<Timeline>(device)), queue_(device.queue()) {
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = device_.info().compute_queue_family;
  Check(vkCreateCommandPool(device_.handle(), &pool, nullptr, &pool_), "vkCreateCommandPool");
}

VulkanStream::~VulkanStream() {
  try {
    Synchronize();
  } catch (...) {  // a lost device: nothing more can be waited for
  }
  device_.WaitQueueIdle();  // the driver is done with this stream's command buffers
  Guard lock(*this);
  if (current_.commands != VK_NULL_HANDLE) vkEndCommandBuffer(current_.commands);
  vkDestroyCommandPool(device_.handle(), pool_, nullptr);  // frees its command buffers
}

void* VulkanStream::native_handle() const { return queue_; }

std::unique_ptr<Event> VulkanStream::CreateEvent() { return std::make_unique<VulkanEvent>(); }

void VulkanStream::OrderLocked(VkPipelineStageFlags stage, VkAccessFlags reads_writes, VkAccessFlags writes) {
  if (current_.unsynced_stages != 0) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = current_.unsynced_writes;
    barrier.dstAccessMask = reads_writes;
    vkCmdPipelineBarrier(current_.commands, current_.unsynced_stages, stage, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  }
  current_.unsynced_stages = stage;
  current_.unsynced_writes = writes;
}

void VulkanStream::EndBarrierLocked() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(current_.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_HOST_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
  current_.unsynced_stages = 0;
  current_.unsynced_writes = 0;
}

void VulkanStream::RecycleLocked() {
  if (in_flight_.empty()) return;
  const uint64_t done = timeline_->Completed();
  while (!in_flight_.empty() && in_flight_.front().value <= done) {
    Batch& batch = in_flight_.front();
    vkResetCommandBuffer(batch.commands, 0);
    free_buffers_.push_back(batch.commands);
    // Released once the lock is dropped (Guard): freeing a buffer may record an event on this stream.
    for (auto& owner : batch.keep_alive) released_.push_back(std::move(owner));
    in_flight_.pop_front();
  }
}

VulkanStream::Guard::~Guard() {
  std::vector<std::shared_ptr<void>> drop;
  drop.swap(stream_.released_);
  lock_.unlock();
}  // `drop` goes here, after the unlock

void VulkanStream::BeginBatchLocked() {
  if (current_.commands != VK_NULL_HANDLE) return;
  RecycleLocked();
  if (free_buffers_.empty()) {
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = pool_;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    Check(vkAllocateCommandBuffers(device_.handle(), &allocate, &commands), "vkAllocateCommandBuffers");
    free_buffers_.push_back(commands);
  }
  current_ = Batch{};
  current_.commands = free_buffers_.back();
  free_buffers_.pop_back();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = capturing_ ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  Check(vkBeginCommandBuffer(current_.commands, &begin), "vkBeginCommandBuffer");
  // Orders this batch after everything submitted to the queue before it (earlier batches of any stream).
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier(current_.commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
}

void VulkanStream::Dispatch(const std::string& shader, const void* push, size_t push_bytes, uint32_t groups_x,
                            uint32_t groups_y, uint32_t groups_z) {
  if (push_bytes > kPushConstantBytes)
    Fail(ErrorCode::kRuntime, kEpName, ": shader ", shader, " takes ", push_bytes, " bytes of push constants (at most ",
         kPushConstantBytes, ")");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;
  const VkPipeline pipeline = device_.Pipeline(shader);
  Guard lock(*this);
  BeginBatchLocked();
  vkCmdBindPipeline(current_.commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  alignas(8) unsigned char constants[kPushConstantBytes] = {};
  std::memcpy(constants, push, push_bytes);
  vkCmdPushConstants(current_.commands, device_.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes,
                     constants);
  OrderLocked(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
              VK_ACCESS_SHADER_WRITE_BIT);
  vkCmdDispatch(current_.commands, groups_x, groups_y, groups_z);
  if (++current_.num_commands >= kMaxBatchCommands && !capturing_) FlushLocked();
}

void VulkanStream::CopyBuffer(const BufferRange& src, const BufferRange& dst, size_t bytes) {
  if (bytes == 0) return;
  Guard lock(*this);
  BeginBatchLocked();
  VkBufferCopy region{src.offset, dst.offset, bytes};
  OrderLocked(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_ACCESS_TRANSFER_WRITE_BIT);
  vkCmdCopyBuffer(current_.commands, src.buffer, dst.buffer, 1, &region);
  if (++current_.num_commands >= kMaxBatchCommands && !capturing_) FlushLocked();
}

void VulkanStream::CopyBufferRegions(VkBuffer src, VkBuffer dst, std::span<const VkBufferCopy> regions) {
  if (regions.empty()) return;
  Guard lock(*this);
  BeginBatchLocked();
  OrderLocked(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_ACCESS_TRANSFER_WRITE_BIT);
  vkCmdCopyBuffer(current_.commands, src, dst, static_cast<uint32_t>(regions.size()), regions.data());
  if (++current_.num_commands >= kMaxBatchCommands && !capturing_) FlushLocked();
}

void VulkanStream::ResetQueries(VkQueryPool pool, uint32_t first, uint32_t count) {
  Guard lock(*this);
  BeginBatchLocked();
  vkCmdResetQueryPool(current_.commands, pool, first, count);
}

bool VulkanStream::WriteTimestamp(VkQueryPool pool, uint32_t query) {
  Guard lock(*this);
  if (capturing_) return false;
  BeginBatchLocked();
  vkCmdWriteTimestamp(current_.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
  return true;
}

void VulkanStream::KeepAlive(std::shared_ptr<void> owner) {
  Guard lock(*this);
  BeginBatchLocked();
  current_.keep_alive.push_back(std::move(owner));
}

void VulkanStream::SubmitLocked(VkCommandBuffer commands) {
  const uint64_t signal = last_value_ + 1;
  const VkSemaphore signal_semaphore = timeline_->handle();
  std::vector<VkPipelineStageFlags> stages(wait_semaphores_.size(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values_.size());
  values.pWaitSemaphoreValues = wait_values_.data();
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &signal;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.pNext = &values;
  submit.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores_.size());
  submit.pWaitSemaphores = wait_semaphores_.data();
  submit.pWaitDstStageMask = stages.data();
  submit.commandBufferCount = commands != VK_NULL_HANDLE ? 1 : 0;
  submit.pCommandBuffers = &commands;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &signal_semaphore;
  device_.Submit(submit);
  last_value_ = signal;
  wait_semaphores_.clear();
  wait_values_.clear();
}

void VulkanStream::FlushLocked() {
  if (capturing_) return;
  if (current_.commands == VK_NULL_HANDLE) {
    if (!wait_semaphores_.empty()) SubmitLocked(VK_NULL_HANDLE);  // carry the waits into the timeline
    return;
  }
  EndBarrierLocked();  // the host may read what the batch wrote once the semaphore passes
  Check(vkEndCommandBuffer(current_.commands), "vkEndCommandBuffer");
  Batch batch = std::move(current_);
  current_ = Batch{};
  try {
    SubmitLocked(batch.commands);
  } catch (...) {
    vkResetCommandBuffer(batch.commands, 0);
    free_buffers_.push_back(batch.commands);
    throw;
  }
  batch.value = last_value_;
  in_flight_.push_back(std::move(batch));
}

void VulkanStream::Flush() {
  Guard lock(*this);
  FlushLocked();
}

uint64_t VulkanStream::last_value() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_value_;
}

void VulkanStream::AddWait(VkSemaphore semaphore, uint64_t value) {
  Guard lock(*this);
  if (semaphore == timeline_->handle()) return;  // its own earlier work is ordered already
  wait_semaphores_.push_back(semaphore);
  wait_values_.push_back(value);
}

void VulkanStream::WaitNative(const NativeSyncPoint& point) {
  if (point.handle == nullptr)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": WaitNative needs a timeline VkSemaphore (the handle is null)");
  Flush();  // the work recorded so far does not wait
  AddWait(reinterpret_cast<VkSemaphore>(point.handle), point.value);
}

void VulkanStream::Synchronize() {
  uint64_t value = 0;
  {
    Guard lock(*this);
    if (capturing_) Fail(ErrorCode::kRuntime, kEpName, ": a stream being captured cannot be synchronized");
    FlushLocked();
    value = last_value_;
  }
  timeline_->WaitFor(value);
  Guard lock(*this);
  RecycleLocked();
}

void VulkanStream::BeginCapture() {
  Guard lock(*this);
  if (capturing_) Fail(ErrorCode::kRuntime, kEpName, ": a capture is already open on this stream");
  FlushLocked();
  // The captured command buffer comes from a pool of its own, so that it outlives this stream.
  capture_ = std::make_unique<CapturedWork>();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.queueFamilyIndex = device_.info().compute_queue_family;
  Check(vkCreateCommandPool(device_.handle(), &pool, nullptr, &capture_->pool), "vkCreateCommandPool (capture)");
  capture_->device = &device_;
  VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  allocate.commandPool = capture_->pool;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  Check(vkAllocateCommandBuffers(device_.handle(), &allocate, &capture_->commands), "vkAllocateCommandBuffers");
  capturing_ = true;
  free_buffers_.push_back(capture_->commands);  // BeginBatchLocked takes it and begins it for simultaneous use
  BeginBatchLocked();
}

std::unique_ptr<CapturedWork> VulkanStream::EndCapture() {
  Guard lock(*this);
  if (!capturing_) Fail(ErrorCode::kRuntime, kEpName, ": EndCapture without BeginCapture");
  capturing_ = false;
  EndBarrierLocked();
  Check(vkEndCommandBuffer(current_.commands), "vkEndCommandBuffer (capture)");
  std::unique_ptr<CapturedWork> work = std::move(capture_);
  work->keep_alive = std::move(current_.keep_alive);
  current_ = Batch{};
  return work;
}

void VulkanStream::Replay(const CapturedWork& work) {
  Guard lock(*this);
  FlushLocked();
  SubmitLocked(work.commands);
}

void OnStream(VulkanDevice& device, Stream* stream, const std::function<void(VulkanStream&)>& record) {
  auto* vulkan = dynamic_cast<VulkanStream*>(stream);
  if (vulkan != nullptr && &vulkan->device() == &device) {
    record(*vulkan);
    return;
  }
  if (stream != nullptr) stream->Synchronize();  // another device's stream: its work first
  VulkanStream temporary(device);
  record(temporary);
  temporary.Synchronize();
}

}  // namespace tessera::vulkan_ep
