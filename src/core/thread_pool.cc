#include "tessera/ep/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>

namespace tessera {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads > 0 ? num_threads : omp_get_num_procs()) {}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_tasks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads_, max_tasks));
  if (threads <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // One contiguous block per thread keeps each thread on its own cache lines.
  const int64_t block = (n + threads - 1) / threads;
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = t * block;
    const int64_t end = std::min(n, begin + block);
    if (begin >= end) continue;
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tessera
