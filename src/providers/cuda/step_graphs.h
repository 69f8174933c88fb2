// Step graphs: the device work of one step, captured once into a CUDA graph and replayed with one launch.
//
// In an eager run (no whole-run CUDA graph) the host queues every step, and for a batch-1 model the device
// finishes a step before the host has queued the next, so the run takes as long as the host needs. Library
// calls cost far more host time than the kernels they launch (on the H100 host: cudnnBackendExecute 7-24 us, the
// legacy fused convolution 80-250 us, cublasLtMatmul 6.5 us, against ~4 us for a kernel launch;
// docs/CUDA.md "Step graphs"). What such a call queues is a fixed function of the shape (the kernel's plan), a
// few device addresses and host scalars: once captured, the same work is one cudaGraphLaunch.
//
// A kernel hands the enqueueing of its step to StepGraphs::Run with a StepKey: the run's stream and every address
// and host value the queued work depends on beyond the plan the StepGraphs belongs to (one StepGraphs per plan,
// i.e. per shape). The first time a key is seen the work is queued directly; the second time it is captured
// into a graph and launched; from then on the graph is replayed. In steady state a session's arena hands a step
// the same blocks run after run (one set per stream set), so keys repeat. Capture happens on the EP's private
// capture stream (StepCaptureStream), never on the run's stream: work other threads queue on a shared stream (a
// user_compute_stream) cannot slip into the graph. The graph is then launched on the run's stream, ordered with
// the run's other work as the direct calls would be.
//
// Contract for the work callable, work(stream, lease): it queues its device work on `stream` only, through
// `lease`'s library handles (bound to `stream`; null for work that uses no library), reading no value that is not
// part of the key or the plan (a workspace comes from the run's stream lease and goes into the key), and it may run
// more than once. It may throw; a capture it cannot complete (or a work it throws from while captured) marks the
// key as not capturable, and the work is then queued directly, where its error surfaces as usual.
//
// Not used (the work is queued directly) in sessions that replay whole-run CUDA graphs (enable_cuda_graph), with
// step_graphs = 0, on CUDA's legacy default stream, and while the caller's user_compute_stream is being captured.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <vector>

#include "providers/cuda/cuda_handles.h"
#include "tessera/shape.h"
#include "tessera/ep/kernel.h"

namespace tessera::cuda {

class CudaExecutionProvider;

// The EP's private stream for capturing step graphs: created on first use, one capture at a time.
class StepCaptureStream {
 public:
  explicit StepCaptureStream(int ordinal) : ordinal_(ordinal) {}
  ~StepCaptureStream();
  StepCaptureStream(const StepCaptureStream&) = delete;
  StepCaptureStream& operator=(const StepCaptureStream&) = delete;

 private:
  friend class StepGraphs;
  int ordinal_;
  std::mutex mutex_;  // held for a whole capture
  cudaStream_t stream_ = nullptr;
};

// What a step's queued work depends on beyond its plan: the run's stream and up to kWords addresses or values.
struct StepKey {
  static constexpr size_t kWords = 18;
  cudaStream_t stream = nullptr;
  std::array<uint64_t, kWords> words{};
  size_t size = 0;

  explicit StepKey(cudaStream_t s) : stream(s) {}
  StepKey& Add(const void* address) { return Add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address))); }
  StepKey& Add(uint64_t value);
  StepKey& AddFloat(float value);
  // The dims as one word (rank and a 64-bit FNV-1a hash of the dims): for shapes beyond the plan's own.
  StepKey& AddShape(const Shape& shape);
  bool operator==(const StepKey&) const = default;
};

// The library whose handle a step's work takes from its lease (created before a capture begins: creating a handle
// allocates memory, which a capture does not allow).
enum class StepLibrary { kNone, kCudnn, kCublasLt };

class StepGraphs {
 public:
  StepGraphs() = default;
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Queues the step's work on key.stream: replays its graph, captures it, or calls work(key.stream, lease)
  // (see the file comment). `lease` is the caller's lease of key.stream's handles, null when `library` is kNone
  // (plain kernel launches need no handle, so their steps take no lease); `library` names the handle the work
  // takes from the lease it is given. Thread-safe.
  template <typename Work>
  void Run(const KernelContext& ctx, const CudaExecutionProvider& ep, const LibraryHandles::Lease* lease,
           const StepKey& key, StepLibrary library, Work&& work) const {
    using Callable = std::remove_reference_t<Work>;
    RunErased(ctx, ep, lease, key, library,
              WorkRef{const_cast<void*>(static_cast<const void*>(&work)),
                      [](void* callable, cudaStream_t stream, const LibraryHandles::Lease* l) {
                        (*static_cast<Callable*>(callable))(stream, l);
                      }});
  }

  // Whether steps on `stream` use graphs in this EP's sessions (see the file comment).
  static bool Enabled(const CudaExecutionProvider& ep, cudaStream_t stream);

  // Counters for tests and logs: graphs captured, and launches of captured graphs.
  size_t captures() const { return captures_.load(std::memory_order_relaxed); }
  size_t replays() const { return replays_.load(std::memory_order_relaxed); }

 private:
  struct WorkRef {
    void* callable;
    void (*call)(void*, cudaStream_t, const LibraryHandles::Lease*);
    void operator()(cudaStream_t stream, const LibraryHandles::Lease* lease) const { call(callable, stream, lease); }
  };
  struct Entry;

  void RunErased(const KernelContext& ctx, const CudaExecutionProvider& ep, const LibraryHandles::Lease* lease,
                 const StepKey& key, StepLibrary library, const WorkRef& work) const;
  // The work captured on the EP's capture stream and instantiated; nullptr when it cannot be.
  static cudaGraphExec_t Capture(const CudaExecutionProvider& ep, StepLibrary library, const WorkRef& work);

  bool OnProbation() const;
  // Records a key seen for the first time, evicting one when kMaxEntries are kept.
  void Remember(const StepKey& key, uint64_t tick) const;

  // Keys seen, at most kMaxEntries; those with a graph hold one executable graph each (a few KiB of device
  // memory). Eviction takes the least recently used key seen only once, else the least recently used graph. A
  // plan sees one key per stream set in steady state, more while runs on several stream sets move buffers around.
  static constexpr size_t kMaxEntries = 32;
  // After kCaptureProbation captures, capturing stops while replays stay under kMinReplaysPerCapture per capture:
  // keys that do not repeat (new buffers every run) would pay a capture each and gain nothing.
  static constexpr size_t kCaptureProbation = 64;
  static constexpr size_t kMinReplaysPerCapture = 4;

  mutable std::shared_mutex mutex_;  // entries_ (the entries' own state is atomic)
  mutable std::vector<std::shared_ptr<Entry>> entries_;
  mutable std::atomic<uint64_t> ticks_{0};  // use order, for eviction
  mutable std::atomic<size_t> captures_{0}, replays_{0};
};

}  // namespace tessera::cuda
