#include "tessera/data_parallel.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "tessera/status.h"

namespace tessera {

namespace {

struct Request {
  Session::NamedValues feeds;
  std::vector<std::string> output_names;
  std::promise<std::vector<Value>> promise;
};

// The session options for one device: `base` with its providers replaced by the device's EP.
SessionOptions OptionsFor(const Environment& env, const EpDevice& device, const SessionOptions& base) {
  SessionOptions options = base;
  ProviderRequest request;
  request.ep_name = device.ep_name;
  for (const ProviderRequest& given : base.providers)
    if (given.ep_name == device.ep_name) {
      request.options = given.options;
      break;
    }
  int index = 0;
  bool found = false;
  for (const EpDevice* d : env.GetEpDevices()) {
    if (d->ep_name != device.ep_name) continue;
    if (d == &device) {
      found = true;
      break;
    }
    ++index;
  }
  if (!found)
    Fail(ErrorCode::kInvalidArgument, "DataParallelRunner: EP device ", device.ep_name, " (ordinal ",
         device.device != nullptr ? device.device->ordinal : 0, ") is not one of this Environment's EP devices");
  request.device_index = index;
  options.providers = {request};
  return options;
}

}  // namespace

struct DataParallelRunner::Impl {
  std::vector<const EpDevice*> devices;
  std::vector<std::unique_ptr<Session>> sessions;
  std::unique_ptr<std::atomic<uint64_t>[]> completed;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Request> queue;
  bool stopping = false;
  std::vector<std::thread> workers;

  void Work(size_t index) {
    Session& session = *sessions[index];
    for (;;) {
      Request request;
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping, and nothing left to do
        request = std::move(queue.front());
        queue.pop_front();
      }
      // Counted before the future is set: whoever waits on it sees the count include this request.
      std::vector<Value> outputs;
      std::exception_ptr failure;
      try {
        outputs = session.Run(request.feeds, request.output_names);
      } catch (...) {
        failure = std::current_exception();
      }
      completed[index].fetch_add(1);
      if (failure)
        request.promise.set_exception(failure);
      else
        request.promise.set_value(std::move(outputs));
    }
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    ready.notify_all();
    for (std::thread& t : workers)
      if (t.joinable()) t.join();
  }
};

DataParallelRunner::DataParallelRunner(Environment& env, const std::filesystem::path& model,
                                       std::vector<const EpDevice*> devices, const DataParallelOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (devices.empty()) Fail(ErrorCode::kInvalidArgument, "DataParallelRunner: no EP device given");
  if (options.runs_per_device < 1)
    Fail(ErrorCode::kInvalidArgument, "DataParallelRunner: runs_per_device must be at least 1, got ",
         options.runs_per_device);
  for (const EpDevice* device : devices)
    if (device == nullptr) Fail(ErrorCode::kInvalidArgument, "DataParallelRunner: a null EP device");
  impl_->devices = std::move(devices);
  for (const EpDevice* device : impl_->devices)
    impl_->sessions.push_back(std::make_unique<Session>(env, model, OptionsFor(env, *device, options.session)));
  impl_->completed = std::make_unique<std::atomic<uint64_t>[]>(impl_->sessions.size());
  try {
    for (size_t i = 0; i < impl_->sessions.size(); ++i)
      for (int k = 0; k < options.runs_per_device; ++k) impl_->workers.emplace_back([this, i] { impl_->Work(i); });
  } catch (...) {
    impl_->Stop();
    throw;
  }
}

DataParallelRunner::~DataParallelRunner() { impl_->Stop(); }

std::future<std::vector<Value>> DataParallelRunner::Submit(Session::NamedValues feeds,
                                                           std::vector<std::string> output_names) {
  Request request;
  request.feeds = std::move(feeds);
  request.output_names = std::move(output_names);
  std::future<std::vector<Value>> result = request.promise.get_future();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopping) Fail(ErrorCode::kInvalidArgument, "DataParallelRunner: Submit after shutdown began");
    impl_->queue.push_back(std::move(request));
  }
  impl_->ready.notify_one();
  return result;
}

std::vector<std::vector<Value>> DataParallelRunner::RunAll(const std::vector<Session::NamedValues>& requests,
                                                           const std::vector<std::string>& output_names) {
  std::vector<std::future<std::vector<Value>>> futures;
  futures.reserve(requests.size());
  for (const Session::NamedValues& feeds : requests) futures.push_back(Submit(feeds, output_names));
  std::vector<std::vector<Value>> results(requests.size());
  std::exception_ptr first_failure;
  for (size_t i = 0; i < futures.size(); ++i) {
    try {
      results[i] = futures[i].get();
    } catch (...) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  if (first_failure) std::rethrow_exception(first_failure);
  return results;
}

size_t DataParallelRunner::size() const { return impl_->sessions.size(); }

Session& DataParallelRunner::session(size_t index) { return *impl_->sessions.at(index); }

const EpDevice& DataParallelRunner::device(size_t index) const { return *impl_->devices.at(index); }

std::vector<uint64_t> DataParallelRunner::CompletedPerSession() const {
  std::vector<uint64_t> counts;
  for (size_t i = 0; i < impl_->sessions.size(); ++i) counts.push_back(impl_->completed[i].load());
  return counts;
}

}  // namespace tessera
