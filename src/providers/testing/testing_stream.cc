#include "providers/testing/testing_stream.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "tessera/status.h"

namespace tessera::testing_ep {

class TestingStream::Queue : public TestingQueue {
 public:
  explicit Queue(std::chrono::microseconds task_delay) : task_delay_(task_delay), worker_([this] { Work(); }) {}

  ~Queue() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    worker_.join();
  }

  void Enqueue(std::function<void()> work) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(std::move(work));
      ++submitted_;
    }
    work_ready_.notify_one();
  }

  // Waits for everything queued so far, then rethrows (and clears) the first error since the last call.
  void Synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t target = submitted_;
    work_done_.wait(lock, [&] { return completed_ >= target; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and everything queued has run
      std::function<void()> work = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      if (task_delay_.count() > 0) std::this_thread::sleep_for(task_delay_);
      try {
        work();
      } catch (...) {
        error = std::current_exception();
      }
      // Destroyed unlocked: the tensors a task holds may be freed now, and freeing can queue an event (stream fences).
      work = nullptr;
      lock.lock();
      if (error && !error_) error_ = error;
      ++completed_;
      work_done_.notify_all();
    }
  }

  const std::chrono::microseconds task_delay_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<std::function<void()>> pending_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the members it uses exist
};

namespace {

// A point in a stream's queue; reached once every task queued before it has run.
class Marker {
 public:
  void Reach() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reached_ = true;
    }
    reached_cv_.notify_all();
  }
  void WaitUntilReached() {
    std::unique_lock<std::mutex> lock(mutex_);
    reached_cv_.wait(lock, [&] { return reached_; });
  }
  bool reached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reached_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable reached_cv_;
  bool reached_ = false;
};

TestingStream& AsTestingStream(Stream& stream) {
  auto* testing = dynamic_cast<TestingStream*>(&stream);
  if (testing == nullptr)
    Fail(ErrorCode::kInvalidArgument, "a ", stream.memory_info().ToString(),
         " stream cannot be used with the testing device's events or copies");
  return *testing;
}

// Records inside a graph recording order work within the recording, so they queue no marker: they remember where
// they were recorded; a stream waiting for them joins the recording (TestingStream::JoinCapture), and the work of a
// joined stream before the record enters the recording at the wait (TestingStream::PlaceFloating).
class TestingEvent : public Event {
 public:
  void Record(Stream& stream) override {
    TestingStream& on = AsTestingStream(stream);
    if (TestingStream* origin = on.CaptureOrigin()) {
      const size_t position = &on == origin ? 0 : on.FloatingMark();
      std::lock_guard<std::mutex> lock(mutex_);
      marker_ = nullptr;
      captured_ = {origin, &on, position};
      return;
    }
    auto marker = std::make_shared<Marker>();
    on.Enqueue([marker] { marker->Reach(); });
    std::lock_guard<std::mutex> lock(mutex_);
    marker_ = std::move(marker);
    captured_ = {};
  }

  void Wait(Stream& stream) override {
    TestingStream& waiting = AsTestingStream(stream);
    const Captured captured = CapturedRecord();
    if (captured.origin != nullptr) {
      TestingStream* origin = waiting.CaptureOrigin();
      if (origin == nullptr && captured.origin->recording()) {
        waiting.JoinCapture(captured.origin);
      } else if (origin != nullptr && origin != captured.origin) {
        Fail(ErrorCode::kRuntime, "testing stream: waiting for an event recorded in another graph recording");
      }
      // The work the event follows enters the recording here, before what `waiting` queues next.
      if (&waiting != captured.on && captured.on != captured.origin) captured.on->PlaceFloating(captured.position);
      return;
    }
    std::shared_ptr<Marker> marker = Current();
    if (marker != nullptr) waiting.Enqueue([marker] { marker->WaitUntilReached(); });
  }

  void Synchronize() override {
    CheckNotRecording("Synchronize");
    std::shared_ptr<Marker> marker = Current();
    if (marker != nullptr) marker->WaitUntilReached();
  }

  bool Query() override {
    CheckNotRecording("Query");
    std::shared_ptr<Marker> marker = Current();
    return marker == nullptr || marker->reached();
  }

 private:
  struct Captured {
    TestingStream* origin = nullptr;  // the recording's stream
    TestingStream* on = nullptr;      // the stream the event was recorded on
    size_t position = 0;              // on a joined stream: its FloatingMark when recorded
  };
  std::shared_ptr<Marker> Current() {
    std::lock_guard<std::mutex> lock(mutex_);
    return marker_;
  }
  Captured CapturedRecord() {
    std::lock_guard<std::mutex> lock(mutex_);
    return captured_;
  }
  // A host wait on an event recorded inside an open recording is an error (as cudaEventSynchronize in a capture).
  void CheckNotRecording(const char* what) {
    const Captured captured = CapturedRecord();
    if (captured.origin != nullptr && captured.origin->recording())
      Fail(ErrorCode::kRuntime, "testing event: ", what, " on an event recorded inside an open graph recording");
  }

  std::mutex mutex_;
  std::shared_ptr<Marker> marker_;  // the latest Record outside a recording; null before the first
  Captured captured_;               // the latest Record, when it was inside a recording
};

}  // namespace

TestingStream::TestingStream(const MemoryInfo& info, std::chrono::microseconds task_delay)
    : info_(info), queue_(std::make_unique<Queue>(task_delay)) {}

TestingStream::~TestingStream() = default;

void* TestingStream::native_handle() const { return static_cast<TestingQueue*>(queue_.get()); }

void TestingStream::Synchronize() { queue_->Synchronize(); }

std::unique_ptr<Event> TestingStream::CreateEvent() { return std::make_unique<TestingEvent>(); }

void TestingStream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(recording_mutex_);
    if (recording_) {
      recorded_.push_back(std::move(work));
      return;
    }
    if (joined_to_ != nullptr) {  // a joined stream: floats until another stream waits for it (PlaceFloating)
      floating_.push_back(std::move(work));
      ++floated_;
      return;
    }
  }
  queue_->Enqueue(std::move(work));
}

size_t TestingStream::FloatingMark() {
  std::lock_guard<std::mutex> lock(recording_mutex_);
  return floated_;
}

void TestingStream::PlaceFloating(size_t upto) {
  std::vector<std::function<void()>> placed;
  TestingStream* origin = nullptr;
  {
    std::lock_guard<std::mutex> lock(recording_mutex_);
    origin = joined_to_;
    while (placed_ < upto && !floating_.empty()) {
      placed.push_back(std::move(floating_.front()));
      floating_.pop_front();
      ++placed_;
    }
  }
  if (origin == nullptr || placed.empty()) return;
  std::lock_guard<std::mutex> lock(origin->recording_mutex_);
  for (auto& work : placed) origin->recorded_.push_back(std::move(work));
}

void TestingStream::BeginRecording() {
  std::lock_guard<std::mutex> lock(recording_mutex_);
  if (recording_) Fail(ErrorCode::kRuntime, "testing stream: a recording is already open");
  recording_ = true;
  recorded_.clear();
  joined_.clear();
}

std::vector<std::function<void()>> TestingStream::EndRecording() {
  std::vector<TestingStream*> joined;
  std::vector<std::function<void()>> recorded;
  {
    std::lock_guard<std::mutex> lock(recording_mutex_);
    recording_ = false;
    joined = std::exchange(joined_, {});
    recorded = std::exchange(recorded_, {});
  }
  bool unjoined = false;
  for (TestingStream* s : joined) {
    std::lock_guard<std::mutex> lock(s->recording_mutex_);
    unjoined = unjoined || !s->floating_.empty();
    s->joined_to_ = nullptr;
    s->floating_.clear();
    s->floated_ = s->placed_ = 0;
  }
  if (unjoined)
    Fail(ErrorCode::kRuntime, "testing stream: the recording ended with work on a joined stream that the recording's ",
         "other streams never waited for (unjoined)");
  return recorded;
}

bool TestingStream::recording() {
  std::lock_guard<std::mutex> lock(recording_mutex_);
  return recording_;
}

TestingStream* TestingStream::CaptureOrigin() {
  std::lock_guard<std::mutex> lock(recording_mutex_);
  return recording_ ? this : joined_to_;
}

void TestingStream::JoinCapture(TestingStream* origin) {
  {
    std::lock_guard<std::mutex> lock(recording_mutex_);
    joined_to_ = origin;
    floating_.clear();
    floated_ = placed_ = 0;
  }
  std::lock_guard<std::mutex> lock(origin->recording_mutex_);
  origin->joined_.push_back(this);
}

void RunOn(Stream* stream, std::function<void()> work) {
  if (stream == nullptr) {
    work();
    return;
  }
  AsTestingStream(*stream).Enqueue(std::move(work));
}

}  // namespace tessera::testing_ep
