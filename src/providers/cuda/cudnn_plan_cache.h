// The CUDA EP's cuDNN graph-API plans, shared by the nodes of a session and built ahead on worker threads.
//
// Finalizing an execution plan costs 2-3 ms of host time, and the first plan of each cuDNN engine (and data type)
// in a process costs 50-150 ms more while cuDNN loads its kernels (bench/gpu/cudnn_first_use.cc, H100/H200 host).
// Built one after another in a session's first run, MobileNetV2's and ResNet-50's plans were most of their session
// creation. So: nodes with the same convolution (ResNet's repeated blocks) share one set of plans, and kernels
// that know their shapes when they are created (KernelInfo::InputShape) ask for their plans right away; worker
// threads, one cuDNN handle each, build them while the session goes on planning, and several at once (cuDNN's
// first-use loads overlap across threads). A kernel that needs a set waits for its build, or builds it on its own
// handle when nobody asked before.
//
// Plans do not depend on the buffers or the stream: any handle of the device executes them. A set keeps the
// worker handles alive for as long as it lives.
#pragma once

#include <cudnn.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "providers/cuda/cudnn_graph.h"

namespace tessera::cuda {

// The candidate plans of one operation graph, best first (none when cuDNN has no engine for it), and the
// descriptors they were built from.
struct CudnnPlanSet {
  std::shared_ptr<void> builder;  // keeps the handle that built the plans alive (destroyed last)
  std::vector<cudnn_graph::Descriptor> parts;
  std::vector<cudnn_graph::Plan> plans;
};

class CudnnPlanCache {
 public:
  // Builds a set with `handle`; throws Error when cuDNN fails outright (a graph it merely has no engine for gives an
  // empty set).
  using Build = std::function<CudnnPlanSet(cudnnHandle_t handle)>;

  // `threads`: worker threads for Prefetch (0: none; Prefetch then does nothing and Get builds on the caller).
  CudnnPlanCache(int ordinal, size_t threads);
  ~CudnnPlanCache();  // waits for the builds in flight
  CudnnPlanCache(const CudnnPlanCache&) = delete;
  CudnnPlanCache& operator=(const CudnnPlanCache&) = delete;

  // Queues the build of `key` on a worker unless it is built, queued or being built.
  void Prefetch(const std::string& key, Build build);
  // The set for `key`: a built one; one being built or queued (waits for it); else built now with `handle`. A
  // prefetched build that failed is retried on `handle`, so that its error reaches the caller.
  std::shared_ptr<const CudnnPlanSet> Get(const std::string& key, cudnnHandle_t handle, const Build& build);
  // The set for `key` if it is built, or being built or queued (waits for it); nullptr otherwise.
  std::shared_ptr<const CudnnPlanSet> Find(const std::string& key);

  // Waits until no build is queued or running: a search that times candidates on the GPU calls it first, so
  // that the workers' host work and cuDNN's kernel loading do not disturb its measurements.
  void WaitIdle();

  // Whether Prefetch builds anything (threads > 0).
  bool builds_ahead() const { return threads_ > 0; }

  // Automatic worker count: up to 8, leaving one core to the thread creating the session.
  static size_t DefaultThreads();

 private:
  struct Entry {
    std::shared_future<std::shared_ptr<const CudnnPlanSet>> ready;  // nullptr value: the prefetch failed
  };
  struct Task {
    std::string key;
    Build build;
    std::promise<std::shared_ptr<const CudnnPlanSet>> done;
  };
  void Work();

  const int ordinal_;
  const size_t threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  size_t running_ = 0;  // builds taken from the queue and not finished
  std::map<std::string, Entry> entries_;
  std::deque<Task> queue_;
  std::vector<std::thread> workers_;  // started on the first Prefetch
  bool stopping_ = false;
};

}  // namespace tessera::cuda
