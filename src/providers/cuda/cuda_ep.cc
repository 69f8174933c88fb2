#include "providers/cuda/cuda_ep.h"

#include "providers/cuda/cuda_allocator.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_stream.h"
#include "providers/cuda/kernels/cuda_kernels.h"

namespace tessera::cuda {

namespace {

int CheckedOrdinal(int ordinal, const CudaProviderOptions& options) {
  if (options.device_id_set && options.device_id != ordinal)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option 'device_id' is ", options.device_id,
         " but this EP device is GPU ", ordinal, " (choose the GPU with ProviderRequest::device_index)");
  return ordinal;
}

}  // namespace

CudaExecutionProvider::CudaExecutionProvider(int ordinal, const CudaProviderOptions& options)
    : type_(kEpName),
      ordinal_(CheckedOrdinal(ordinal, options)),
      options_(options),
      device_memory_(DeviceMemoryInfo(ordinal)),
      device_allocator_(CreateCudaArena(ordinal, false, options.gpu_mem_limit, options.arena_extend_strategy)),
      pinned_allocator_(CreateCudaArena(ordinal, true, 0, options.arena_extend_strategy)),
      handles_(ordinal, device_allocator_),
      graphs_(ordinal) {
  RegisterCudaKernels(kernels_);
}

AllocatorPtr CudaExecutionProvider::allocator(MemoryType type) {
  return type == MemoryType::kDefault ? device_allocator_ : pinned_allocator_;
}

std::unique_ptr<Stream> CudaExecutionProvider::CreateStream() {
  if (options_.user_compute_stream != nullptr)
    return std::make_unique<CudaStream>(ordinal_, static_cast<cudaStream_t>(options_.user_compute_stream));
  return std::make_unique<CudaStream>(ordinal_);
}

void CudaExecutionProvider::BeginCapture(Stream& stream, int key) {
  graphs_.Begin(NativeStream(&stream, "BeginCapture"), key);
}

void CudaExecutionProvider::EndCapture(Stream& stream, int key) { graphs_.End(NativeStream(&stream, "EndCapture"), key); }

void CudaExecutionProvider::ReplayGraph(Stream& stream, int key) {
  graphs_.Replay(NativeStream(&stream, "ReplayGraph"), key);
}

std::vector<size_t> CudaExecutionProvider::GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const {
  std::vector<size_t> taken;
  for (size_t i : ExecutionProvider::GetCapability(graph, unassigned))
    if (NodeIsSupported(*graph.nodes[i])) taken.push_back(i);
  return taken;
}

}  // namespace tessera::cuda
