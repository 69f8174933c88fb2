// The CUDA execution provider: one instance per session, on one GPU.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "providers/cuda/cuda_graph.h"
#include "providers/cuda/cuda_handles.h"
#include "providers/cuda/cudnn_plan_cache.h"
#include "providers/cuda/library_warmup.h"
#include "providers/cuda/cuda_profiling.h"
#include "providers/cuda/cuda_provider_options.h"
#include "providers/cuda/cuda_transfer.h"
#include "providers/cuda/step_graphs.h"
#include "providers/cuda/tuning_results.h"
#include "tessera/ep/execution_provider.h"

namespace tessera::cuda {

class CudaExecutionProvider : public ExecutionProvider {
 public:
  // Throws kInvalidArgument when `options.device_id` names another GPU than `ordinal`.
  CudaExecutionProvider(int ordinal, const CudaProviderOptions& options);

  const std::string& type() const override { return type_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  const MemoryInfo& memory_info() const override { return device_memory_; }
  AllocatorPtr allocator(MemoryType type) override;
  DataTransfer* data_transfer() override { return &transfer_; }
  // A new non-blocking stream, or a non-owning wrapper of user_compute_stream when that option is set.
  std::unique_ptr<Stream> CreateStream() override;
  // Copy streams (new non-blocking streams) when do_copy_in_default_stream = 0; the device arena then has
  // stream fences.
  std::unique_ptr<Stream> CreateCopyStream() override;
  // Nodes with a CUDA kernel whose attributes the kernel supports (see NodeIsSupported), except shape
  // computations on Shape's outputs, which are left to the CPU (see ShapeComputations in cuda_ep.cc).
  std::vector<size_t> GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const override;

  // NHWC (0) for float16 and float32 convolutions with prefer_nhwc = 1, none with 0; unset: NHWC where the
  // convolution runs on tensor cores (float16; float32 with use_tf32).
  std::optional<int64_t> PreferredChannelBlock(const Node& conv, const Graph& graph) const override;
  // Declines ai.tessera::MatMulSkipLayerNormalization in strict mode (enable_skip_layer_norm_strict_mode promises
  // the unfused graph's float16 results; the fused op adds the product in float32).
  bool PrefersFusion(const std::string& op_type, const std::string& domain) const override {
    return !(options_.enable_skip_layer_norm_strict_mode && op_type == "MatMulSkipLayerNormalization" &&
             domain == "ai.tessera");
  }

  // CUDA graphs (enable_cuda_graph): the session captures whole runs on its stream and replays them.
  // Streams per concurrent run (kEpRunStreams) unless the session runs on the caller's user_compute_stream.
  uint32_t capability_flags() const override {
    return kEpGraphCapture | profiling_.flags() | (options_.user_compute_stream == nullptr ? kEpRunStreams : 0u);
  }
  bool graph_capture_enabled() const override { return options_.enable_cuda_graph; }
  bool automatic_graphs_enabled() const override { return options_.automatic_cuda_graphs; }
  size_t automatic_graph_limit() const override { return options_.automatic_cuda_graph_limit; }
  void ReleaseGraph(int key) override;
  void BeginCapture(Stream& stream, int key) override;
  void EndCapture(Stream& stream, int key) override;
  void ReplayGraph(Stream& stream, int key) override;
  // Whether the session replays every run as a whole-run graph (enable_cuda_graph, or automatic graphs on a plan
  // that allows them): kernels with a host-cheap and a device-fast implementation (Conv) then take the device-fast
  // one. Assumed from the options until the session says (SetRunsReplayed, before any run).
  void SetRunsReplayed(bool replayed) override { runs_replayed_ = replayed || options_.enable_cuda_graph; }
  bool runs_replayed() const { return runs_replayed_; }
  // The library warm-up this EP started (library_warmup.h) ends before the session's creation does.
  void OnSessionReady() override { library_warmup_.Wait(); }

  // Profiling (cuda_profiling.h): NVTX run and node ranges when a tool listens, device timers from CUDA events.
  void OnRunStart(Stream*, const std::string& run_tag) override { profiling_.RunStart(run_tag); }
  void OnRunEnd(Stream*) override { profiling_.RunEnd(); }
  void OnStepBegin(const Node& node, Stream*) override { profiling_.StepBegin(node); }
  void OnStepEnd(const Node&, Stream*) override { profiling_.StepEnd(); }
  std::unique_ptr<DeviceTimer> CreateDeviceTimer(Stream& stream) override { return profiling_.CreateTimer(stream); }

  int ordinal() const { return ordinal_; }
  const CudaProviderOptions& options() const { return options_; }
  LibraryHandles& handles() const { return handles_; }
  // The private stream step graphs are captured on (step_graphs.h).
  StepCaptureStream& step_capture() const { return step_capture_; }
  // Search results shared by the EP's kernels (tuning_results.h).
  TuningResults& tuning() const { return tuning_; }
  // cuDNN graph-API plans shared by the EP's kernels and built ahead (cudnn_plan_cache.h).
  CudnnPlanCache& cudnn_plans() const { return cudnn_plans_; }

 private:
  const std::string type_;
  int ordinal_;
  CudaProviderOptions options_;
  MemoryInfo device_memory_;
  KernelRegistry kernels_;
  AllocatorPtr device_allocator_;
  AllocatorPtr pinned_allocator_;
  CudaDataTransfer transfer_;
  mutable TuningResults tuning_;
  mutable StepCaptureStream step_capture_;  // destroyed after handles_, whose handles may be bound to it
  mutable LibraryHandles handles_;
  mutable CudnnPlanCache cudnn_plans_;
  CudaGraphSet graphs_;
  std::atomic<bool> runs_replayed_;
  CudaProfiling profiling_;
  LibraryWarmup library_warmup_;  // last: its threads are joined before anything else of the EP goes
};

}  // namespace tessera::cuda
