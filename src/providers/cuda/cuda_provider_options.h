// The CUDA EP's provider options: string key/values parsed and validated into typed settings.
//
// Every key ONNX Runtime's CUDA EP documents for this feature set is accepted; an unknown key or a
// malformed value throws Error(kInvalidArgument) naming the key. docs/CUDA.md says which options take
// effect today and which are accepted but not yet acted on.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "tessera/arena.h"
#include "tessera/ep/ep_factory.h"

namespace tessera::cuda {

enum class ConvAlgoSearch { kExhaustive, kHeuristic, kDefault };
// How cuBLASLt products choose their algorithm: the heuristic's first proposal (the default: a search costs ~15-20
// ms per new shape, and the heuristic's first is within 1% on BERT-base), or the fastest of its first eight timed
// on the product's own operands (once per shape per EP; kept in the tuning cache).
enum class MatmulAlgoSearch { kExhaustive, kHeuristic };

struct CudaProviderOptions {
  int device_id = 0;
  bool device_id_set = false;
  size_t gpu_mem_limit = 0;  // bytes; 0 = no limit
  ArenaExtendStrategy arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  ConvAlgoSearch cudnn_conv_algo_search = ConvAlgoSearch::kExhaustive;
  // Tessera's own: see MatmulAlgoSearch.
  MatmulAlgoSearch matmul_algo_search = MatmulAlgoSearch::kHeuristic;
  bool do_copy_in_default_stream = true;
  bool cudnn_conv_use_max_workspace = true;
  bool cudnn_conv1d_pad_to_nc1d = false;
  bool enable_cuda_graph = false;
  bool enable_skip_layer_norm_strict_mode = false;
  void* user_compute_stream = nullptr;  // a cudaStream_t owned by the caller
  bool use_tf32 = true;
  // NHWC convolutions (the nchwc_layout pass with channel block 0): 1 for float32 and float16, 0 never; unset:
  // where they run on tensor cores (float16, float32 with use_tf32), whose cuDNN kernels otherwise transpose
  // NCHW around every convolution.
  std::optional<bool> prefer_nhwc;
  // Tessera's own: in eager sessions, the library calls of a step (cuDNN convolutions, cuBLASLt products) are
  // captured into a small CUDA graph the second time the step sees the same buffers, and replayed with one launch
  // afterwards (step_graphs.h). 0 queues every call directly.
  bool step_graphs = true;
  // Tessera's own: the first EP of a GPU in a process makes one small cuDNN and one cuBLASLt call on threads of its
  // own when it is created, so that the libraries load while the session loads the model (library_warmup.h).
  bool library_warmup = true;
  // Tessera's own: without enable_cuda_graph, the session captures and replays whole runs (Run(feeds) and
  // IoBinding at any address) for models a graph can hold (session/automatic_graphs.h); 0 keeps every run eager.
  bool automatic_cuda_graphs = true;
  // Automatic graphs kept per stream set (one per input signature; the least recently used one is released).
  size_t automatic_cuda_graph_limit = 8;
  // Tessera's own: the file that keeps search results (tuning_results.h) across sessions and processes. Unset: the
  // default file for the GPU and cuDNN (DefaultTuningCachePath); "" or "none": no file.
  std::optional<std::string> tuning_cache_file;
  // Tessera's own: threads that build the cuDNN plans of convolutions whose shapes the model declares while the
  // session is created, several at once (cudnn_plan_cache.h). 0: each plan is built on the running thread when a
  // run first needs it. Unset: one per core but one, at most 8.
  std::optional<size_t> plan_build_threads;
};

// Throws Error(kInvalidArgument) naming the key for an unknown key or a bad value.
CudaProviderOptions ParseProviderOptions(const ProviderOptions& options);

}  // namespace tessera::cuda
