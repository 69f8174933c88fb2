#include "providers/cuda/cudnn_plan_cache.h"

#include <algorithm>
#include <utility>

#include "tessera/ep/logging.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_handles.h"

namespace tessera::cuda {

CudnnPlanCache::CudnnPlanCache(int ordinal, size_t threads) : ordinal_(ordinal), threads_(threads) {}

CudnnPlanCache::~CudnnPlanCache() {
  std::deque<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);  // nobody can wait for them any more: the cache is going away
  }
  for (Task& task : dropped) task.done.set_value(nullptr);
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

size_t CudnnPlanCache::DefaultThreads() {
  const size_t cores = std::thread::hardware_concurrency();
  return std::clamp<size_t>(cores > 1 ? cores - 1 : 1, 1, 8);
}

void CudnnPlanCache::Prefetch(const std::string& key, Build build) {
  if (threads_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || entries_.count(key) != 0) return;
  Task task{key, std::move(build), {}};
  entries_[key].ready = task.done.get_future().share();
  queue_.push_back(std::move(task));
  if (workers_.size() < threads_) workers_.emplace_back([this] { Work(); });
  wake_.notify_one();
}

std::shared_ptr<const CudnnPlanSet> CudnnPlanCache::Find(const std::string& key) {
  std::shared_future<std::shared_ptr<const CudnnPlanSet>> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    ready = it->second.ready;
  }
  return ready.get();
}

std::shared_ptr<const CudnnPlanSet> CudnnPlanCache::Get(const std::string& key, cudnnHandle_t handle,
                                                        const Build& build) {
  if (std::shared_ptr<const CudnnPlanSet> set = Find(key); set != nullptr) return set;
  auto set = std::make_shared<const CudnnPlanSet>(build(handle));
  std::promise<std::shared_ptr<const CudnnPlanSet>> built;
  built.set_value(set);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key].ready = built.get_future().share();
  return set;
}

void CudnnPlanCache::Work() {
  DeviceGuard guard(ordinal_);
  std::shared_ptr<cudnnContext> handle;  // this worker's, created for its first build
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    std::shared_ptr<const CudnnPlanSet> set;
    try {
      if (handle == nullptr) {
        cudnnHandle_t created = nullptr;
        CheckCudnn(cudnnCreate(&created), "cudnnCreate on GPU ", ordinal_, " (plan-building thread)");
        handle = std::shared_ptr<cudnnContext>(created, [](cudnnHandle_t h) { cudnnDestroy(h); });
      }
      CudnnPlanSet built = task.build(handle.get());
      built.builder = handle;
      set = std::make_shared<const CudnnPlanSet>(std::move(built));
    } catch (const std::exception& e) {  // the kernel that needs the set builds it again and reports the error
      Log(LogLevel::kVerbose, "cuDNN plans for ", task.key, ": built ahead without success (", e.what(), ")");
    }
    task.done.set_value(std::move(set));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    idle_.notify_all();
  }
}

void CudnnPlanCache::WaitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return (queue_.empty() || stopping_) && running_ == 0; });
}

}  // namespace tessera::cuda
