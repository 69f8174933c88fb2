// cuDNN and cuBLAS handles of one EP, shared by its kernels.
//
// The libraries' handles are not safe to use from two threads at once and carry a stream, while
// kernels run concurrently (Session::Run from many threads). A kernel therefore borrows them through a
// Lease: exclusive use, stream set, for the few host calls that enqueue its work. Handles are created
// on first use, so sessions that never need cuDNN do not pay for loading it.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "tessera/status.h"

namespace tessera::cuda {

template <typename... Parts>
void CheckCudnn(cudnnStatus_t status, const Parts&... parts) {
  if (status != CUDNN_STATUS_SUCCESS) Fail(ErrorCode::kRuntime, parts..., ": ", cudnnGetErrorString(status));
}

template <typename... Parts>
void CheckCublas(cublasStatus_t status, const Parts&... parts) {
  if (status != CUBLAS_STATUS_SUCCESS)
    Fail(ErrorCode::kRuntime, parts..., ": ", cublasGetStatusName(status), " (", cublasGetStatusString(status), ")");
}

class LibraryHandles {
 public:
  explicit LibraryHandles(int ordinal) : ordinal_(ordinal) {}
  ~LibraryHandles();
  LibraryHandles(const LibraryHandles&) = delete;
  LibraryHandles& operator=(const LibraryHandles&) = delete;

  class Lease {
   public:
    cudnnHandle_t cudnn() const;
    cublasHandle_t cublas() const;

   private:
    friend class LibraryHandles;
    Lease(LibraryHandles& owner, cudaStream_t stream);
    std::unique_lock<std::mutex> lock_;
    LibraryHandles* owner_;
    cudaStream_t stream_;
  };

  // Exclusive use of the handles, bound to `stream`, until the Lease is destroyed.
  Lease Acquire(cudaStream_t stream) { return Lease(*this, stream); }

 private:
  int ordinal_;
  std::mutex mutex_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
};

}  // namespace tessera::cuda
