// Profiling support of the CUDA EP: NVTX ranges for Nsight Systems and device timers from CUDA events.
//
// NVTX (header-only NVTX3): with run and step hooks on, every run is a range "tessera run <tag>" and
// every CUDA kernel step a nested range "<op_type> <node name>" on the run's thread; `nsys profile
// --trace=cuda,nvtx` shows them above the kernels they launched. The hooks are on when a tool has
// injected NVTX (NVTX_INJECTION64_PATH is set, as profilers do) or TESSERA_NVTX=1; TESSERA_NVTX=0
// turns them off. Otherwise no hook is advertised and runs pay nothing.
//
// Device timers (kEpProfiling, profiled sessions only): a timing cudaEvent_t is recorded on the stream
// at the run's start and before and after each step; cudaEventElapsedTime gives the step's device
// interval. Events are never recorded into a stream that is being captured into a CUDA graph (those
// steps are reported as not measured). Events are reused across runs through a pool.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/ep/execution_provider.h"

namespace tessera::cuda {

class CudaEventPool;

class CudaProfiling {
 public:
  CudaProfiling();
  ~CudaProfiling();
  CudaProfiling(const CudaProfiling&) = delete;
  CudaProfiling& operator=(const CudaProfiling&) = delete;

  // kEpProfiling, plus kEpRunHooks | kEpStepHooks when NVTX ranges are on.
  uint32_t flags() const;
  void RunStart(const std::string& run_tag) const;
  void RunEnd() const;
  void StepBegin(const Node& node) const;
  void StepEnd() const;
  // A timer on `stream`, a CUDA stream of this EP (see DeviceTimer).
  std::unique_ptr<DeviceTimer> CreateTimer(Stream& stream);

 private:
  bool nvtx_;
  std::shared_ptr<CudaEventPool> events_;
};

}  // namespace tessera::cuda
