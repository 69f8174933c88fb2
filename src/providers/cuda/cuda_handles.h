// cuDNN and cuBLAS handles of one EP, per stream, and the scratch memory the libraries use on it.
//
// The libraries' handles are not safe to use from two threads at once and carry a stream. A session queues its
// runs on one or more streams (one set per concurrent run, kEpRunStreams), so each stream gets its own cuDNN and
// cuBLAS handles, bound to it once, and its own workspaces: runs on different streams never wait for each other
// on the host, nor share scratch memory on the device. A kernel borrows a stream's handles through a Lease:
// exclusive use (runs sharing one stream take turns) for the few host calls that enqueue its work. Handles are
// created on a stream's first use, so sessions that never need cuDNN do not pay for loading it.
//
// Workspaces are persistent buffers from the EP's device arena rather than per-call allocations: a CUDA
// graph bakes their addresses in, so they must stay valid (and never be handed to another tensor) for as
// long as the graph may be replayed. Sharing them between the kernels of a stream is safe because its work runs
// in order. A workspace that must grow is replaced by a larger one; the old one is kept until the handles are
// destroyed, since captured graphs may still use it.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <shared_mutex>
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

 private:
  struct PerStream {
    cudaStream_t stream = nullptr;
    std::mutex mutex;
    cudnnHandle_t cudnn = nullptr;
    cublasHandle_t cublas = nullptr;
    cublasLtHandle_t cublas_lt = nullptr;
    Tensor cublas_workspace;  // shared by cuBLAS and cuBLASLt calls on the stream
    Tensor cudnn_workspace;
    std::vector<Tensor> retired_workspaces;
  };

 public:
  class Lease {
   public:
    // The cuDNN handle bound to the stream.
    cudnnHandle_t cudnn() const;
    // The cuBLAS handle bound to the stream, using the stream's persistent cuBLAS workspace.
    cublasHandle_t cublas() const;
    // A cuBLASLt handle for calls on the stream (cuBLASLt takes the stream per call).
    cublasLtHandle_t cublas_lt() const;
    // The stream's persistent cuBLAS workspace, for cuBLASLt calls: kCublasWorkspaceBytes at cublas_workspace().
    void* cublas_workspace() const;
    static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation on Hopper
    // At least `bytes` of scratch memory for cuDNN on this stream, valid while no graph using it can be
    // replayed (i.e. for the EP's lifetime); nullptr for 0 bytes.
    void* workspace(size_t bytes) const;

   private:
    friend class LibraryHandles;
    Lease(const LibraryHandles& owner, PerStream& handles) : lock_(handles.mutex), owner_(&owner), handles_(&handles) {}
    Tensor& CublasWorkspace() const;
    std::unique_lock<std::mutex> lock_;
    const LibraryHandles* owner_;
    PerStream* handles_;
  };

  // Exclusive use of `stream`'s handles until the Lease is destroyed.
  Lease Acquire(cudaStream_t stream);

 private:
  int ordinal_;
  AllocatorPtr device_memory_;
  std::shared_mutex mutex_;  // streams_ (append-only: a PerStream never moves)
  std::vector<std::unique_ptr<PerStream>> streams_;  // few: one per stream of the session's stream sets
};

}  // namespace tessera::cuda
