#include "providers/cuda/cuda_handles.h"

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

// cuBLAS's recommended workspace on Hopper; enough for every GEMM algorithm it picks.
constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;

}  // namespace

LibraryHandles::~LibraryHandles() {
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
}

LibraryHandles::Lease::Lease(LibraryHandles& owner, cudaStream_t stream)
    : lock_(owner.mutex_), owner_(&owner), stream_(stream) {}

cudnnHandle_t LibraryHandles::Lease::cudnn() const {
  if (owner_->cudnn_ == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    CheckCudnn(cudnnCreate(&owner_->cudnn_), "cudnnCreate on GPU ", owner_->ordinal_);
  }
  CheckCudnn(cudnnSetStream(owner_->cudnn_, stream_), "cudnnSetStream");
  return owner_->cudnn_;
}

cublasHandle_t LibraryHandles::Lease::cublas() const {
  if (owner_->cublas_ == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    CheckCublas(cublasCreate(&owner_->cublas_), "cublasCreate on GPU ", owner_->ordinal_);
    owner_->cublas_workspace_ =
        Tensor::Allocate(DataType::kUInt8, Shape{kCublasWorkspaceBytes}, owner_->device_memory_);
  }
  // cublasSetStream resets the workspace to cuBLAS's own pool, so the workspace is set after it.
  CheckCublas(cublasSetStream(owner_->cublas_, stream_), "cublasSetStream");
  CheckCublas(cublasSetWorkspace(owner_->cublas_, owner_->cublas_workspace_.raw_data(),
                                 static_cast<size_t>(kCublasWorkspaceBytes)),
              "cublasSetWorkspace");
  return owner_->cublas_;
}

void* LibraryHandles::Lease::workspace(size_t bytes) const {
  if (bytes == 0) return nullptr;
  Tensor& current = owner_->cudnn_workspace_;
  if (!current.defined() || current.SizeInBytes() < bytes) {
    if (current.defined()) owner_->retired_workspaces_.push_back(current);
    current = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(bytes)}, owner_->device_memory_);
  }
  return current.raw_data();
}

}  // namespace tessera::cuda
