#include "providers/cuda/kernels/cudnn_descriptors.h"

#include "providers/cuda/cuda_handles.h"

namespace tessera::cuda {

void SetTensor(TensorDescriptor& d, cudnnDataType_t type, const std::vector<int>& dims, bool channels_last) {
  CheckCudnn(cudnnCreateTensorDescriptor(&d.handle), "cudnnCreateTensorDescriptor");
  const std::vector<int64_t> wide = LayoutStrides(dims, channels_last);
  const std::vector<int> strides(wide.begin(), wide.end());
  CheckCudnn(cudnnSetTensorNdDescriptor(d.handle, type, static_cast<int>(dims.size()), dims.data(), strides.data()),
             "cudnnSetTensorNdDescriptor");
}

}  // namespace tessera::cuda
