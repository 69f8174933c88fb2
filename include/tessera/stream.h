// Streams and events: the only way Tessera expresses ordering on a device.
//
// A Stream is an in-order device queue. Work submitted to one stream runs in submission order;
// work on two streams is unordered unless an Event joins them: Record(a) then Wait(b) makes
// everything later on b wait, on the device, for everything before the record on a. A null
// Stream* in any API means "synchronous": the call returns once the work is complete.
#pragma once

#include <cstdint>
#include <memory>

#include "tessera/device.h"
#include "tessera/status.h"

namespace tessera {

class Event;

// A point on a device timeline in the device API's own terms, for applications that order their own device work
// with Tessera's without a host wait (Stream::WaitNative, Event::native_point):
//   CUDA:   `handle` is a cudaEvent_t; the point is reached when the work recorded on it has completed (`value` 0).
//   Vulkan: `handle` is a timeline VkSemaphore of the stream's VkDevice; the point is reached when the semaphore's
//           value is >= `value`.
struct NativeSyncPoint {
  void* handle = nullptr;
  uint64_t value = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // cudaStream_t, VkQueue, ...; nullptr for streams without a native object.
  virtual void* native_handle() const = 0;
  // Blocks the host until all work queued so far has finished; rethrows a device error.
  virtual void Synchronize() = 0;
  virtual std::unique_ptr<Event> CreateEvent() = 0;
  // The memory space whose work this stream orders.
  virtual const MemoryInfo& memory_info() const = 0;
  // Later work on this stream waits, on the device, until `point` is reached: one the application made (a cudaEvent_t
  // it recorded on its own stream; a timeline semaphore of this stream's VkDevice that its queue or the host will
  // signal) or one of an Event's (Event::native_point). Throws kInvalidArgument for a null handle and kNotImplemented
  // on streams without native synchronization (the default).
  virtual void WaitNative(const NativeSyncPoint& point) {
    (void)point;
    Fail(ErrorCode::kNotImplemented, "this stream (", memory_info().ToString(), ") has no native synchronization");
  }
};

class Event {
 public:
  virtual ~Event() = default;
  // Marks the point after all work queued on `stream` so far.
  virtual void Record(Stream& stream) = 0;
  // Later work on `stream` waits (device-side) until the recorded point is reached.
  virtual void Wait(Stream& stream) = 0;
  // Blocks the host until the recorded point is reached. A never-recorded event is complete.
  virtual void Synchronize() = 0;
  // Whether the recorded point has been reached, without blocking (a never-recorded event has). An EP that
  // cannot tell cheaply keeps the default, false: callers then wait as if it had not.
  virtual bool Query() { return false; }
  // The recorded point as the device API's own object (NativeSyncPoint), for an application to wait for on its own
  // queue or stream: valid while this Event lives and until it is recorded again. A null handle when the EP has no
  // native synchronization, or (Vulkan) before the first Record.
  virtual NativeSyncPoint native_point() const { return {}; }
};

}  // namespace tessera
