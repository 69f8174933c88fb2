#include "providers/cuda/cuda_handles.h"

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

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
  }
  CheckCublas(cublasSetStream(owner_->cublas_, stream_), "cublasSetStream");
  return owner_->cublas_;
}

}  // namespace tessera::cuda
