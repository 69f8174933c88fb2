// The intra-op thread pool kernels parallelize with. It uses the same OpenMP runtime as oneDNN so
// the two never oversubscribe the cores; num_threads() honours SessionOptions::intra_op_threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace tessera {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // <= 0: one per core
  int num_threads() const { return num_threads_; }
  // Calls fn(begin, end) over disjoint ranges covering [0, n). Ranges hold at least `grain` items
  // (except the last) where the loop has more grains than threads, and n / ceil(n / grain) items where it has
  // fewer (split evenly); with n <= grain or one thread it runs inline. Exceptions propagate (the first
  // one thrown wins; ranges not yet started are then skipped). The ranges are those of PartitionOf, a
  // function of (n, grain, num_threads()) only; which thread runs which range is not fixed.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const;

  // How ParallelFor cuts [0, n): `chunks` ranges of `chunk` items (the last one shorter). At most one range
  // per thread while grain allows no more; larger loops get a multiple of the thread count (up to four per
  // thread, claimed dynamically), so that the threads' shares stay equal.
  struct Partition {
    int64_t chunk = 0, chunks = 0;
  };
  static Partition PartitionOf(int64_t n, int64_t grain, int num_threads);

  // A pool several sessions share (Environment::SetGlobalThreadPools): its copies are the same pool, and one
  // ParallelFor runs on its threads at a time; a call made while another holds them runs its ranges on the
  // calling thread, so concurrent callers do not multiply the threads. (oneDNN primitives the kernels run take the
  // pool's thread count but are not serialized with it.)
  static ThreadPool Shared(int num_threads);
  bool shared() const { return busy_ != nullptr; }

 private:
  int num_threads_;
  std::shared_ptr<std::atomic<bool>> busy_;  // shared pools: whether a ParallelFor holds the threads
};

}  // namespace tessera
