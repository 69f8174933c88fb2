// A thin RAII layer over cuDNN's graph (backend) API: descriptors, operation graphs, engine heuristics and
// execution plans. The convolution kernel builds one operation graph per input shape (convolution, then
// bias, residual and activation as pointwise operations where an engine fuses them), finalizes execution
// plans once, and then runs a step with one cudnnBackendExecute: no descriptor, heuristic query or plan is
// created per step.
//
// Every function throws Error(kRuntime) naming what failed and cuDNN's status, except the Try* ones, which
// report an unsupported graph or configuration by returning an empty result.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::cuda::cudnn_graph {

// Owns one cudnnBackendDescriptor_t. Move-only.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  // Takes ownership of a descriptor created by the caller.
  static Descriptor Adopt(cudnnBackendDescriptor_t handle) {
    Descriptor d;
    d.handle_ = handle;
    return d;
  }
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return handle_; }
  bool defined() const { return handle_ != nullptr; }

  Descriptor& Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                  const void* values);
  Descriptor& SetInt64(cudnnBackendAttributeName_t name, int64_t value);
  Descriptor& SetInt64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
  Descriptor& SetDataType(cudnnBackendAttributeName_t name, cudnnDataType_t value);
  Descriptor& SetBool(cudnnBackendAttributeName_t name, bool value);
  Descriptor& SetFloat(cudnnBackendAttributeName_t name, float value);
  Descriptor& SetDescriptor(cudnnBackendAttributeName_t name, const Descriptor& value);
  Descriptor& SetDescriptors(cudnnBackendAttributeName_t name, const std::vector<cudnnBackendDescriptor_t>& values);
  Descriptor& SetHandle(cudnnBackendAttributeName_t name, cudnnHandle_t handle);

  // Finalizes; throws naming `what` on failure.
  void Finalize(const char* what);
  // Finalizes; returns cuDNN's status (CUDNN_STATUS_NOT_SUPPORTED and the like are not errors here).
  cudnnStatus_t TryFinalize();

 private:
  cudnnBackendDescriptor_t handle_ = nullptr;
};

// One tensor of an operation graph, identified by `uid` in variant packs. `alignment`: the byte alignment
// every data pointer bound to it will have. Virtual tensors are intermediates that never reach memory.
struct TensorSpec {
  int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  int64_t alignment = 16;
  bool is_virtual = false;
};
Descriptor MakeTensor(const TensorSpec& spec);

// The attributes of a convolution: spatial pads (begin = end), strides and dilations; cross-correlation.
struct ConvolutionSpec {
  std::vector<int64_t> pads, strides, dilations;
  cudnnDataType_t compute_type = CUDNN_DATA_FLOAT;
};
Descriptor MakeConvolution(const ConvolutionSpec& spec);

// A pointwise operation y = mode(x) or y = mode(x, b), computed in float.
Descriptor MakePointwise(cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b, const Descriptor& y);

// A convolution forward operation y = conv(x, w) (alpha 1, beta 0); empty when cuDNN refuses the combination.
Descriptor TryMakeConvolutionForward(const Descriptor& x, const Descriptor& w, const Descriptor& y,
                                     const Descriptor& convolution);

// An operation graph of `operations` (finalized); nullopt-like empty Descriptor when cuDNN does not support it.
Descriptor TryMakeOperationGraph(cudnnHandle_t handle, const std::vector<const Descriptor*>& operations);

// An engine configuration and what it needs: the finalized plan, its workspace, and its notes.
struct Plan {
  Descriptor plan;
  int64_t workspace_bytes = 0;
  bool tensor_cores = false;         // CUDNN_NUMERICAL_NOTE_TENSOR_CORE (TF32 for float32 data)
  bool runtime_compiled = false;     // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
  bool nondeterministic = false;     // CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
  int64_t engine_index = -1;         // CUDNN_ATTR_ENGINE_GLOBAL_INDEX, for logs
  // Where the heuristics proposed it: mode A (0) or the fallback list (1), and its position in that list; the same
  // graph on the same GPU and cuDNN gets the same list, so (mode, position) names the configuration again.
  int heuristics_list = -1;
  int64_t position = -1;
  std::string Describe() const;
};
// Writes plan.Describe() (for error-message parts, built only when a check fails).
std::ostream& operator<<(std::ostream& os, const Plan& plan);

// Which engine configurations a caller accepts.
struct PlanFilter {
  int64_t max_workspace_bytes = INT64_MAX;
  bool allow_tensor_cores = true;       // false: float32 stays on FMA arithmetic (use_tf32 = 0)
  bool allow_runtime_compiled = true;   // false: skip engines that compile kernels at finalize (slow to build)
  bool allow_nondeterministic = true;   // false: skip engines cuDNN notes as nondeterministic
  size_t max_plans = 8;                 // the first this many that finalize, in heuristic order
  // When set (>= 0): only the configuration at this position of this list (Plan::heuristics_list, Plan::position),
  // with the filters above still applied; no other configuration is finalized.
  int only_list = -1;
  int64_t only_position = -1;
};

// The engine configurations cuDNN's heuristics (mode A, then the fallback list when A yields nothing)
// propose for `graph`, finalized as plans, best first, filtered. Empty when none is supported.
std::vector<Plan> MakePlans(cudnnHandle_t handle, const Descriptor& graph, const PlanFilter& filter);

// A finalized variant pack: the tensors (uids[i] bound to pointers[i]) and the workspace of an execution. It can
// be executed any number of times while those buffers stay where they are. Sets *status (empty pack on failure).
Descriptor MakeVariantPack(const int64_t* uids, void* const* pointers, int count, void* workspace,
                           cudnnStatus_t* status);

// Queues `plan` on the handle's stream with the buffers of `pack`.
cudnnStatus_t Execute(cudnnHandle_t handle, const Plan& plan, const Descriptor& pack);

// Queues `plan` on the handle's stream with the given tensors, through a variant pack made for this call.
cudnnStatus_t Execute(cudnnHandle_t handle, const Plan& plan, const int64_t* uids, void* const* pointers, int count,
                      void* workspace);

}  // namespace tessera::cuda::cudnn_graph
