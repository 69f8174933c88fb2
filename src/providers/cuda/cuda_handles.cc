#include "providers/cuda/cuda_handles.h"

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

// cuBLAS's recommended workspace on Hopper; enough for every GEMM algorithm it picks.
constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;

}  // namespace

LibraryHandles::~LibraryHandles() {
  for (const auto& handles : streams_) {
    if (handles->cudnn != nullptr) cudnnDestroy(handles->cudnn);
    if (handles->cublas != nullptr) cublasDestroy(handles->cublas);
  }
}

LibraryHandles::Lease LibraryHandles::Acquire(cudaStream_t stream) {
  PerStream* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& handles : streams_)
      if (handles->stream == stream) found = handles.get();
    if (found == nullptr) {
      streams_.push_back(std::make_unique<PerStream>());
      found = streams_.back().get();
      found->stream = stream;
    }
  }
  return Lease(*this, *found);
}

cudnnHandle_t LibraryHandles::Lease::cudnn() const {
  if (handles_->cudnn == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    cudnnHandle_t handle = nullptr;
    CheckCudnn(cudnnCreate(&handle), "cudnnCreate on GPU ", owner_->ordinal_);
    const cudnnStatus_t bound = cudnnSetStream(handle, handles_->stream);
    if (bound != CUDNN_STATUS_SUCCESS) cudnnDestroy(handle);
    CheckCudnn(bound, "cudnnSetStream");
    handles_->cudnn = handle;
  }
  return handles_->cudnn;
}

cublasHandle_t LibraryHandles::Lease::cublas() const {
  if (handles_->cublas == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    Tensor workspace = Tensor::Allocate(DataType::kUInt8, Shape{kCublasWorkspaceBytes}, owner_->device_memory_);
    cublasHandle_t handle = nullptr;
    CheckCublas(cublasCreate(&handle), "cublasCreate on GPU ", owner_->ordinal_);
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the workspace is set after it.
    cublasStatus_t status = cublasSetStream(handle, handles_->stream);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasSetWorkspace(handle, workspace.raw_data(), static_cast<size_t>(kCublasWorkspaceBytes));
    if (status != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
    CheckCublas(status, "binding a cuBLAS handle to its stream and workspace");
    handles_->cublas = handle;
    handles_->cublas_workspace = std::move(workspace);
  }
  return handles_->cublas;
}

void* LibraryHandles::Lease::workspace(size_t bytes) const {
  if (bytes == 0) return nullptr;
  Tensor& current = handles_->cudnn_workspace;
  if (!current.defined() || current.SizeInBytes() < bytes) {
    if (current.defined()) handles_->retired_workspaces.push_back(current);
    current = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(bytes)}, owner_->device_memory_);
  }
  return current.raw_data();
}

}  // namespace tessera::cuda
