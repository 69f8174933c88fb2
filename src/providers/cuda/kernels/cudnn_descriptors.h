// RAII owners of cuDNN's legacy descriptors and the packed tensor layouts the CUDA kernels describe with them
// (Conv, ConvTranspose).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

namespace tessera::cuda {

template <typename Handle, cudnnStatus_t (*Destroy)(Handle)>
struct Descriptor {
  Handle handle = nullptr;
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (handle != nullptr) Destroy(handle);
  }
};

using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDescriptor = Descriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using ActivationDescriptor = Descriptor<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

// Strides of a packed tensor with `dims` in cuDNN's NCHW order; `channels_last` lays it out as NHWC (N,
// spatial..., C) in memory.
inline std::vector<int64_t> LayoutStrides(const std::vector<int>& dims, bool channels_last) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  if (channels_last) {
    strides[1] = 1;
    int64_t stride = dims[1];
    for (size_t i = dims.size(); i-- > 2;) {
      strides[i] = stride;
      stride *= dims[i];
    }
    strides[0] = stride;
  }
  return strides;
}

// `dims` in cuDNN's NCHW order; `channels_last` lays the tensor out as NHWC (N, spatial..., C) in memory. Throws
// Error(kRuntime) when cuDNN refuses it.
void SetTensor(TensorDescriptor& d, cudnnDataType_t type, const std::vector<int>& dims, bool channels_last = false);

}  // namespace tessera::cuda
