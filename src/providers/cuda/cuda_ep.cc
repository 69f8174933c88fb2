#include "providers/cuda/cuda_ep.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "tessera/ep/logging.h"
#include "providers/cuda/cuda_allocator.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_stream.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "tessera/ep/shape_computations.h"

namespace tessera::cuda {

namespace {

int CheckedOrdinal(int ordinal, const CudaProviderOptions& options) {
  if (options.device_id_set && options.device_id != ordinal)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option 'device_id' is ", options.device_id,
         " but this EP device is GPU ", ordinal, " (choose the GPU with ProviderRequest::device_index)");
  return ordinal;
}

// Whether device memory is used on more than one stream: copy streams, or streams per concurrent run (every
// session without user_compute_stream). Its arena then orders reuse across streams.
bool RunsOnSeveralStreams(const CudaProviderOptions& options) {
  return !options.do_copy_in_default_stream || options.user_compute_stream == nullptr;
}

// Backs `tuning` with the tuning cache file the options name (tuning_results.h). A file that cannot be used is
// logged and skipped: searches then run as without a cache.
void AttachTuningCache(TuningResults& tuning, int ordinal, const CudaProviderOptions& options) {
  const std::optional<std::string>& named = options.tuning_cache_file;
  if (named && (named->empty() || *named == "none")) return;
  cudaDeviceProp properties{};
  int runtime = 0, driver = 0;
  if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess || cudaRuntimeGetVersion(&runtime) != cudaSuccess ||
      cudaDriverGetVersion(&driver) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  const std::string tag = std::string(properties.name) + " sm" + std::to_string(properties.major) +
                          std::to_string(properties.minor) + " cuDNN " + std::to_string(cudnnGetVersion());
  const std::string path = named ? *named : DefaultTuningCachePath(tag);
  if (path.empty()) return;
  const std::string identity = tag + ", CUDA runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver) +
                               ", cuBLASLt " + std::to_string(cublasLtGetVersion());
  std::string why;
  if (!tuning.AttachFile(path, identity, &why)) {
    Log(LogLevel::kInfo, kEpName, ": tuning cache not used: ", why);
    return;
  }
  Log(LogLevel::kVerbose, kEpName, ": tuning cache ", path, ": ", tuning.loaded(), " result(s) read");
}

}  // namespace

CudaExecutionProvider::CudaExecutionProvider(int ordinal, const CudaProviderOptions& options)
    : type_(kEpName),
      ordinal_(CheckedOrdinal(ordinal, options)),
      options_(options),
      device_memory_(DeviceMemoryInfo(ordinal)),
      device_allocator_(CreateCudaArena(ordinal, false, options.gpu_mem_limit, options.arena_extend_strategy,
                                        /*stream_fences=*/RunsOnSeveralStreams(options))),
      pinned_allocator_(CreateCudaArena(ordinal, true, 0, options.arena_extend_strategy, false)),
      step_capture_(ordinal),
      handles_(ordinal, device_allocator_),
      cudnn_plans_(ordinal_, options.plan_build_threads.value_or(CudnnPlanCache::DefaultThreads())),
      graphs_(ordinal),
      runs_replayed_(options.enable_cuda_graph || options.automatic_cuda_graphs),
      library_warmup_(ordinal_, options.library_warmup) {
  RegisterCudaKernels(kernels_);
  AttachTuningCache(tuning_, ordinal_, options_);
}

AllocatorPtr CudaExecutionProvider::allocator(MemoryType type) {
  return type == MemoryType::kDefault ? device_allocator_ : pinned_allocator_;
}

std::unique_ptr<Stream> CudaExecutionProvider::CreateStream() {
  if (options_.user_compute_stream != nullptr)
    return std::make_unique<CudaStream>(ordinal_, static_cast<cudaStream_t>(options_.user_compute_stream));
  return std::make_unique<CudaStream>(ordinal_);
}

std::unique_ptr<Stream> CudaExecutionProvider::CreateCopyStream() {
  return options_.do_copy_in_default_stream ? nullptr : std::make_unique<CudaStream>(ordinal_);
}

void CudaExecutionProvider::BeginCapture(Stream& stream, int key) {
  graphs_.Begin(NativeStream(&stream, "BeginCapture"), key);
}

void CudaExecutionProvider::EndCapture(Stream& stream, int key) {
  graphs_.End(NativeStream(&stream, "EndCapture"), key);
}

void CudaExecutionProvider::ReleaseGraph(int key) { graphs_.Release(key); }

void CudaExecutionProvider::ReplayGraph(Stream& stream, int key) {
  graphs_.Replay(NativeStream(&stream, "ReplayGraph"), key);
}

std::optional<int64_t> CudaExecutionProvider::PreferredChannelBlock(const Node& conv, const Graph& graph) const {
  if (conv.inputs.empty()) return std::nullopt;
  const DataType type = graph.TypeOf(conv.inputs[0]);
  // cuDNN's tensor-core convolutions work in NHWC and transpose NCHW tensors around every call.
  const bool tensor_cores = type == DataType::kFloat16 || (type == DataType::kFloat && options_.use_tf32);
  const bool nhwc = (type == DataType::kFloat16 || type == DataType::kFloat) && options_.prefer_nhwc.value_or(tensor_cores);
  return nhwc ? std::optional<int64_t>(0) : std::nullopt;
}

std::vector<size_t> CudaExecutionProvider::GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const {
  const std::set<size_t> shape_computations = ShapeComputations(graph);
  std::vector<size_t> taken;
  for (size_t i : ExecutionProvider::GetCapability(graph, unassigned))
    if (NodeIsSupported(*graph.nodes[i]) && shape_computations.count(i) == 0) taken.push_back(i);
  return taken;
}

}  // namespace tessera::cuda
