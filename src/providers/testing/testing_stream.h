// Streams and events of the simulated device: a real asynchronous in-order queue.
//
// Each stream owns a worker thread that runs queued work in submission order. Event::Record queues
// a marker, Event::Wait queues a task that blocks the waiting stream's worker until the marker has run
// (a device-side wait: the host returns at once), Synchronize blocks the host. A task that throws
// does not stop the queue; the first error is rethrown by the next Stream::Synchronize.
//
//   auto* queue = static_cast<TestingQueue*>(stream->native_handle());
//   queue->Enqueue([] { /* runs on the device */ });
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/stream.h"

namespace tessera::testing_ep {

// The native object behind a testing stream. Virtual so that code outside the plugin (tests) can
// queue work through native_handle() without linking the plugin.
class TestingQueue {
 public:
  virtual ~TestingQueue() = default;
  // Queues `work` after everything queued before it; returns without waiting.
  virtual void Enqueue(std::function<void()> work) = 0;
};

class TestingStream : public Stream {
 public:
  // `task_delay` is slept on the worker before each queued task: a slower simulated device.
  explicit TestingStream(const MemoryInfo& info, std::chrono::microseconds task_delay = {});
  // Finishes the queued work, then stops the worker. Errors still pending are dropped.
  ~TestingStream() override;
  void* native_handle() const override;
  void Synchronize() override;
  std::unique_ptr<Event> CreateEvent() override;
  const MemoryInfo& memory_info() const override { return info_; }
  // Queues `work`, or records it while a recording is open.
  void Enqueue(std::function<void()> work);
  // Graph capture: between BeginRecording and EndRecording, work given to Enqueue is recorded instead of
  // run; EndRecording returns it in order. The caller must not queue other work meanwhile.
  // Like a CUDA stream capture, a recording spreads to other streams through events: a stream that waits for an
  // event recorded inside the recording joins it, and every joined stream must be joined back -- all its work
  // waited for by another stream of the recording -- before EndRecording, which otherwise throws (CUDA's
  // "unjoined" capture). A joined stream's work floats: it enters the recording only where another stream waits
  // for an event recorded after it, so a replay runs side-stream work as late as its recorded dependencies allow,
  // and a missing wait shows as stale data instead of being hidden by the order the host queued things in.
  void BeginRecording();
  std::vector<std::function<void()>> EndRecording();
  bool recording();
  // The stream whose recording this stream's work goes into (itself while recording); nullptr when none.
  TestingStream* CaptureOrigin();
  // Joins `origin`'s recording (an event of it was waited for).
  void JoinCapture(TestingStream* origin);
  // A joined stream: how much work it has queued in the recording so far (an event's position), and placing its
  // floating work up to such a position into the recording (another stream waited for that event).
  size_t FloatingMark();
  void PlaceFloating(size_t upto);

 private:
  class Queue;
  MemoryInfo info_;
  std::unique_ptr<Queue> queue_;
  std::mutex recording_mutex_;
  bool recording_ = false;
  std::vector<std::function<void()>> recorded_;
  TestingStream* joined_to_ = nullptr;   // the recording this stream joined
  std::deque<std::function<void()>> floating_;  // joined: work [placed_, floated_) not yet in the recording
  size_t floated_ = 0, placed_ = 0;
  std::vector<TestingStream*> joined_;   // recording: the streams that joined it
};

// Queues `work` on `stream` when it is a testing stream; runs it before returning when `stream` is
// null. Any other kind of stream throws kInvalidArgument.
void RunOn(Stream* stream, std::function<void()> work);

}  // namespace tessera::testing_ep
