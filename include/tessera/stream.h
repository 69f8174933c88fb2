// Streams and events: the only way Tessera expresses ordering on a device.
//
// A Stream is an in-order device queue. Work submitted to one stream runs in submission order;
// work on two streams is unordered unless an Event joins them: Record(a) then Wait(b) makes
// everything later on b wait, on the device, for everything before the record on a. A null
// Stream* in any API means "synchronous": the call returns once the work is complete.
#pragma once

#include <memory>

#include "tessera/device.h"

namespace tessera {

class Event;

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
};

}  // namespace tessera
