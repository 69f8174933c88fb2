// The intra-op thread pool kernels parallelize with. It uses the same OpenMP runtime as oneDNN so
// the two never oversubscribe the cores; num_threads() honours SessionOptions::intra_op_threads.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // <= 0: one per core
  int num_threads() const { return num_threads_; }
  // Calls fn(begin, end) over disjoint ranges covering [0, n). Ranges hold at least `grain` items
  // (except the last); with n <= grain or one thread it runs inline. Exceptions propagate (the first
  // one thrown wins).
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const;

 private:
  int num_threads_;
};

}  // namespace tessera
