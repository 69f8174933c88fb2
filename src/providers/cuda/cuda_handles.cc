#include "providers/cuda/cuda_handles.h"

#include "providers/cuda/cuda_common.h"

#include <chrono>

#include "tessera/ep/logging.h"

namespace tessera::cuda {

LibraryHandles::~LibraryHandles() {
  for (const auto& handles : streams_) {
    if (handles->cudnn != nullptr) cudnnDestroy(handles->cudnn);
    if (handles->cublas != nullptr) cublasDestroy(handles->cublas);
    if (handles->cublas_lt != nullptr) cublasLtDestroy(handles->cublas_lt);
  }
}

LibraryHandles::Lease LibraryHandles::Acquire(cudaStream_t stream) {
  PerStream* found = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);  // every library call: concurrent runs look up together
    for (const auto& handles : streams_)
      if (handles->stream == stream) found = handles.get();
  }
  if (found == nullptr) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
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

namespace {
// The first handle of a library in a process loads it (tens to hundreds of milliseconds): worth a line in a
// verbose timeline of session creation.
void LogCreated(const char* library, int ordinal, std::chrono::steady_clock::time_point start) {
  if (!LogEnabled(LogLevel::kVerbose)) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Log(LogLevel::kVerbose, library, " handle created on GPU ", ordinal, " in ", ms, " ms");
}
}  // namespace

cudnnHandle_t LibraryHandles::Lease::cudnn() const {
  if (handles_->cudnn == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    cudnnHandle_t handle = nullptr;
    const auto start = std::chrono::steady_clock::now();
    CheckCudnn(cudnnCreate(&handle), "cudnnCreate on GPU ", owner_->ordinal_);
    LogCreated("cuDNN", owner_->ordinal_, start);
    const cudnnStatus_t bound = cudnnSetStream(handle, handles_->stream);
    if (bound != CUDNN_STATUS_SUCCESS) cudnnDestroy(handle);
    CheckCudnn(bound, "cudnnSetStream");
    handles_->cudnn = handle;
  }
  return handles_->cudnn;
}

Tensor& LibraryHandles::Lease::CublasWorkspace() const {
  if (!handles_->cublas_workspace.defined())
    handles_->cublas_workspace = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(kCublasWorkspaceBytes)},
                                                  owner_->device_memory_);
  return handles_->cublas_workspace;
}

cublasHandle_t LibraryHandles::Lease::cublas() const {
  if (handles_->cublas == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    void* workspace = CublasWorkspace().raw_data();
    cublasHandle_t handle = nullptr;
    const auto start = std::chrono::steady_clock::now();
    CheckCublas(cublasCreate(&handle), "cublasCreate on GPU ", owner_->ordinal_);
    LogCreated("cuBLAS", owner_->ordinal_, start);
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the workspace is set after it.
    cublasStatus_t status = cublasSetStream(handle, handles_->stream);
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasSetWorkspace(handle, workspace, kCublasWorkspaceBytes);
    if (status != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
    CheckCublas(status, "binding a cuBLAS handle to its stream and workspace");
    handles_->cublas = handle;
  }
  return handles_->cublas;
}

cublasLtHandle_t LibraryHandles::Lease::cublas_lt() const {
  if (handles_->cublas_lt == nullptr) {
    DeviceGuard guard(owner_->ordinal_);
    cublasLtHandle_t handle = nullptr;
    const auto start = std::chrono::steady_clock::now();
    CheckCublas(cublasLtCreate(&handle), "cublasLtCreate on GPU ", owner_->ordinal_);
    LogCreated("cuBLASLt", owner_->ordinal_, start);
    handles_->cublas_lt = handle;
  }
  return handles_->cublas_lt;
}

void* LibraryHandles::Lease::cublas_workspace() const {
  DeviceGuard guard(owner_->ordinal_);
  return CublasWorkspace().raw_data();
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
