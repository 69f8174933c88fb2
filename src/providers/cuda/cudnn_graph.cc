#include "providers/cuda/cudnn_graph.h"

#include <algorithm>
#include <sstream>

namespace tessera::cuda::cudnn_graph {

namespace {

void Check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) Fail(ErrorCode::kRuntime, what, ": ", cudnnGetErrorString(status));
}

// The notes of an engine (numerical or behavior), as a list of enum values.
template <typename Note>
std::vector<Note> Notes(cudnnBackendDescriptor_t engine, cudnnBackendAttributeName_t name,
                        cudnnBackendAttributeType_t type, int capacity) {
  std::vector<Note> notes(static_cast<size_t>(capacity));
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine, name, type, capacity, &count, notes.data()) != CUDNN_STATUS_SUCCESS) return {};
  notes.resize(static_cast<size_t>(std::clamp<int64_t>(count, 0, capacity)));
  return notes;
}

template <typename Note>
bool Has(const std::vector<Note>& notes, Note note) {
  return std::find(notes.begin(), notes.end(), note) != notes.end();
}

// The engine configurations heuristics `mode` proposes, best first (empty when the mode has none).
std::vector<Descriptor> EngineConfigs(const Descriptor& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendDescriptor_t g = graph.get();
  heuristics.Set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
  heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heuristics.TryFinalize() != CUDNN_STATUS_SUCCESS) return {};
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                               &count, nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return {};
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t returned = 0;
  Check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 count, &returned, raw.data()),
        "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)");
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  return configs;
}

}  // namespace

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) {
  Check(cudnnBackendCreateDescriptor(type, &handle_), "cudnnBackendCreateDescriptor");
}

Descriptor::~Descriptor() {
  if (handle_ != nullptr) cudnnBackendDestroyDescriptor(handle_);
}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cudnnBackendDestroyDescriptor(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

Descriptor& Descriptor::Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* values) {
  const cudnnStatus_t status = cudnnBackendSetAttribute(handle_, name, type, count, values);
  if (status != CUDNN_STATUS_SUCCESS)
    Fail(ErrorCode::kRuntime, "cudnnBackendSetAttribute(attribute ", static_cast<int>(name),
         "): ", cudnnGetErrorString(status));
  return *this;
}

Descriptor& Descriptor::SetInt64(cudnnBackendAttributeName_t name, int64_t value) {
  return Set(name, CUDNN_TYPE_INT64, 1, &value);
}

Descriptor& Descriptor::SetInt64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
  return Set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}

Descriptor& Descriptor::SetDataType(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
  return Set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}

Descriptor& Descriptor::SetBool(cudnnBackendAttributeName_t name, bool value) {
  return Set(name, CUDNN_TYPE_BOOLEAN, 1, &value);
}

Descriptor& Descriptor::SetFloat(cudnnBackendAttributeName_t name, float value) {
  return Set(name, CUDNN_TYPE_FLOAT, 1, &value);
}

Descriptor& Descriptor::SetDescriptor(cudnnBackendAttributeName_t name, const Descriptor& value) {
  const cudnnBackendDescriptor_t raw = value.get();
  return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

Descriptor& Descriptor::SetDescriptors(cudnnBackendAttributeName_t name,
                                       const std::vector<cudnnBackendDescriptor_t>& values) {
  return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(values.size()), values.data());
}

Descriptor& Descriptor::SetHandle(cudnnBackendAttributeName_t name, cudnnHandle_t handle) {
  return Set(name, CUDNN_TYPE_HANDLE, 1, &handle);
}

void Descriptor::Finalize(const char* what) { Check(cudnnBackendFinalize(handle_), what); }

cudnnStatus_t Descriptor::TryFinalize() { return cudnnBackendFinalize(handle_); }

Descriptor MakeTensor(const TensorSpec& spec) {
  Descriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.SetDataType(CUDNN_ATTR_TENSOR_DATA_TYPE, spec.type)
      .SetInt64s(CUDNN_ATTR_TENSOR_DIMENSIONS, spec.dims)
      .SetInt64s(CUDNN_ATTR_TENSOR_STRIDES, spec.strides)
      .SetInt64(CUDNN_ATTR_TENSOR_UNIQUE_ID, spec.uid)
      .SetInt64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, spec.alignment)
      .SetBool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, spec.is_virtual);
  d.Finalize("cuDNN tensor descriptor");
  return d;
}

Descriptor MakeConvolution(const ConvolutionSpec& spec) {
  Descriptor d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  d.SetInt64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(spec.pads.size()))
      .SetDataType(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, spec.compute_type)
      .Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .SetInt64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, spec.dilations)
      .SetInt64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, spec.strides)
      .SetInt64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, spec.pads)
      .SetInt64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, spec.pads);
  d.Finalize("cuDNN convolution descriptor");
  return d;
}

Descriptor MakePointwise(cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b, const Descriptor& y) {
  Descriptor pointwise(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pointwise.Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .SetDataType(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  pointwise.Finalize("cuDNN pointwise descriptor");
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pointwise)
      .SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b != nullptr) op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.Finalize("cuDNN pointwise operation");
  return op;
}

Descriptor TryMakeConvolutionForward(const Descriptor& x, const Descriptor& w, const Descriptor& y,
                                     const Descriptor& convolution) {
  Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
      .SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, convolution)
      .SetFloat(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
      .SetFloat(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f);
  if (op.TryFinalize() != CUDNN_STATUS_SUCCESS) return Descriptor();
  return op;
}

Descriptor TryMakeOperationGraph(cudnnHandle_t handle, const std::vector<const Descriptor*>& operations) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const Descriptor* op : operations) raw.push_back(op->get());
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.SetHandle(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle).SetDescriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, raw);
  if (graph.TryFinalize() != CUDNN_STATUS_SUCCESS) return Descriptor();
  return graph;
}

std::ostream& operator<<(std::ostream& os, const Plan& plan) { return os << plan.Describe(); }

std::string Plan::Describe() const {
  std::ostringstream out;
  out << "engine " << engine_index << ", workspace " << workspace_bytes << (tensor_cores ? ", tensor cores" : "")
      << (runtime_compiled ? ", runtime-compiled" : "");
  return out.str();
}

std::vector<Plan> MakePlans(cudnnHandle_t handle, const Descriptor& graph, const PlanFilter& filter) {
  std::vector<Plan> plans;
  const cudnnBackendHeurMode_t lists[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
  for (int list = 0; list < 2; ++list) {
    if (filter.only_list >= 0 && list != filter.only_list) continue;
    std::vector<Descriptor> configs = EngineConfigs(graph, lists[list]);
    for (size_t position = 0; position < configs.size(); ++position) {
      if (plans.size() >= filter.max_plans) return plans;
      if (filter.only_position >= 0 && static_cast<int64_t>(position) != filter.only_position) continue;
      Descriptor& config = configs[position];
      Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t raw_engine = engine.get();
      int64_t count = 0;
      if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                   &raw_engine) != CUDNN_STATUS_SUCCESS)
        continue;
      Plan plan;
      plan.heuristics_list = list;
      plan.position = static_cast<int64_t>(position);
      const auto numerical = Notes<cudnnBackendNumericalNote_t>(
          raw_engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
      const auto behavior = Notes<cudnnBackendBehaviorNote_t>(
          raw_engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
      plan.tensor_cores = Has(numerical, CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
      plan.nondeterministic = Has(numerical, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
      plan.runtime_compiled = Has(behavior, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
      cudnnBackendGetAttribute(raw_engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                               &plan.engine_index);
      if (plan.tensor_cores && !filter.allow_tensor_cores) continue;
      if (plan.runtime_compiled && !filter.allow_runtime_compiled) continue;
      if (plan.nondeterministic && !filter.allow_nondeterministic) continue;
      int64_t config_workspace = 0;
      if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                   &config_workspace) == CUDNN_STATUS_SUCCESS &&
          config_workspace > filter.max_workspace_bytes)
        continue;
      plan.plan = Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.plan.SetHandle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle)
          .SetDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      if (plan.plan.TryFinalize() != CUDNN_STATUS_SUCCESS) continue;
      if (cudnnBackendGetAttribute(plan.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                   &count, &plan.workspace_bytes) != CUDNN_STATUS_SUCCESS ||
          plan.workspace_bytes > filter.max_workspace_bytes)
        continue;
      plans.push_back(std::move(plan));
    }
    if (!plans.empty()) break;  // the fallback list only when mode A proposes nothing usable
  }
  return plans;
}

Descriptor MakeVariantPack(const int64_t* uids, void* const* pointers, int count, void* workspace,
                           cudnnStatus_t* status) {
  cudnnBackendDescriptor_t raw = nullptr;
  *status = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &raw);
  if (*status != CUDNN_STATUS_SUCCESS) return Descriptor();
  Descriptor pack = Descriptor::Adopt(raw);
  if ((*status = cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids)) !=
          CUDNN_STATUS_SUCCESS ||
      (*status = cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count,
                                          pointers)) != CUDNN_STATUS_SUCCESS ||
      (*status = cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                          &workspace)) != CUDNN_STATUS_SUCCESS ||
      (*status = cudnnBackendFinalize(raw)) != CUDNN_STATUS_SUCCESS)
    return Descriptor();
  return pack;
}

cudnnStatus_t Execute(cudnnHandle_t handle, const Plan& plan, const Descriptor& pack) {
  return cudnnBackendExecute(handle, plan.plan.get(), pack.get());
}

cudnnStatus_t Execute(cudnnHandle_t handle, const Plan& plan, const int64_t* uids, void* const* pointers, int count,
                      void* workspace) {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  Descriptor pack = MakeVariantPack(uids, pointers, count, workspace, &status);
  return status == CUDNN_STATUS_SUCCESS ? Execute(handle, plan, pack) : status;
}

}  // namespace tessera::cuda::cudnn_graph
