#include "tessera/ep/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

namespace tessera {
namespace {

// Large loops are cut into this many chunks per thread, claimed dynamically, so a thread the OS takes off its
// core for a while delays the loop by one chunk instead of by a whole 1/threads share.
constexpr int64_t kChunksPerThread = 4;

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads > 0 ? num_threads : omp_get_num_procs()) {}

ThreadPool ThreadPool::Shared(int num_threads) {
  ThreadPool pool(num_threads);
  pool.busy_ = std::make_shared<std::atomic<bool>>(false);
  return pool;
}

ThreadPool::Partition ThreadPool::PartitionOf(int64_t n, int64_t grain, int num_threads) {
  if (n <= 0) return {0, 0};
  grain = std::max<int64_t>(grain, 1);
  const int64_t threads = std::max(num_threads, 1);
  const int64_t max_chunks = (n + grain - 1) / grain;
  // Ranges of equal size: a loop of 5 grains on 2 threads as 4 ranges of 1.25 grains (2 per thread), not 5 of one
  // grain (3 on one thread, 2 on the other). Fewer grains than threads: one range per grain's worth, split evenly.
  int64_t chunks = max_chunks;
  if (max_chunks > threads) {
    const int64_t whole_grains = n / grain;  // >= threads here, so every range below holds at least a grain
    chunks = std::min(threads * kChunksPerThread, whole_grains / threads * threads);
  }
  const int64_t chunk = (n + chunks - 1) / chunks;
  return {chunk, (n + chunk - 1) / chunk};
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const {
  const Partition p = PartitionOf(n, grain, num_threads_);
  if (p.chunks == 0) return;
  if (p.chunks == 1 || num_threads_ <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // A shared pool's threads serve one loop at a time; a caller that finds them taken does its loop itself.
  struct Release {
    std::atomic<bool>* busy = nullptr;
    ~Release() {
      if (busy != nullptr) busy->store(false, std::memory_order_release);
    }
  } release;
  if (busy_ != nullptr) {
    if (busy_->exchange(true, std::memory_order_acquire)) {
      fn(0, n);
      return;
    }
    release.busy = busy_.get();
  }
  // Always the full team, however few the chunks: libgomp ends the surplus threads of its pool whenever a
  // parallel region asks for fewer threads than the previous one, and creates them again for the next larger
  // region (oneDNN's primitives use the full count), which costs far more than idle team members do.
  std::atomic<int64_t> next_chunk{0};
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(num_threads_)
  for (int64_t c = next_chunk.fetch_add(1, std::memory_order_relaxed); c < p.chunks;
       c = next_chunk.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t begin = c * p.chunk;
    try {
      fn(begin, std::min(n, begin + p.chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next_chunk.store(p.chunks, std::memory_order_relaxed);  // the loop fails anyway: skip what is left
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tessera
