// cuDNN and cuBLAS handles of one EP, shared by its kernels, and the scratch memory the libraries use.
//
// The libraries' handles are not safe to use from two threads at once and carry a stream, while
// kernels run concurrently (Session::Run from many threads). A kernel therefore borrows them through a
// Lease: exclusive use, stream set, for the few host calls that enqueue its work. Handles are created
// on first use, so sessions that never need cuDNN do not pay for loading it.
//
// Workspaces are persistent buffers from the EP's device arena rather than per-call allocations: a CUDA
// graph bakes their addresses in, so they must stay valid (and never be handed to another tensor) for as
// long as the graph may be replayed. Sharing them between kernels is safe because all of a session's
// device work runs in order on its one stream. A workspace that must grow is replaced by a larger one;
// the old one is kept until the handles are destroyed, since captured graphs may still use it.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "tessera/allocator.h"
#include "tessera/status.h"
#include "tessera/tensor.h"

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
  // `device_memory` is the EP's device arena; workspaces come from it (and count against gpu_mem_limit).
  LibraryHandles(int ordinal, AllocatorPtr device_memory)
      : ordinal_(ordinal), device_memory_(std::move(device_memory)) {}
  ~LibraryHandles();
  LibraryHandles(const LibraryHandles&) = delete;
  LibraryHandles& operator=(const LibraryHandles&) = delete;

  class Lease {
   public:
    cudnnHandle_t cudnn() const;
    // The cuBLAS handle bound to the stream, using the persistent cuBLAS workspace.
    cublasHandle_t cublas() const;
    // At least `bytes` of scratch memory for cuDNN, valid while no graph using it can be replayed
    // (i.e. for the EP's lifetime); nullptr for 0 bytes.
    void* workspace(size_t bytes) const;

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
  AllocatorPtr device_memory_;
  std::mutex mutex_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  Tensor cublas_workspace_;
  Tensor cudnn_workspace_;
  std::vector<Tensor> retired_workspaces_;
};

}  // namespace tessera::cuda
