#include <algorithm>

#include "tessera/ep/execution_provider.h"
#include "tessera/ep/kernel.h"

namespace tessera {

bool KernelDef::IsHostInput(int i) const {
  return std::find(host_inputs.begin(), host_inputs.end(), i) != host_inputs.end();
}
bool KernelDef::IsHostOutput(int i) const {
  return std::find(host_outputs.begin(), host_outputs.end(), i) != host_outputs.end();
}
bool KernelDef::IsHostOrDeviceInput(int i) const {
  return std::find(host_or_device_inputs.begin(), host_or_device_inputs.end(), i) != host_or_device_inputs.end();
}

void KernelRegistry::Register(KernelDef def, KernelFactory create) {
  by_op_.emplace(std::make_pair(def.op_type, def.domain), kernels_.size());
  kernels_.push_back({std::move(def), std::move(create)});
}

namespace {
bool AcceptsTypes(const KernelDef& def, const Node& node, const Graph& graph) {
  for (size_t i = def.max_inputs; i < node.inputs.size(); ++i)
    if (node.HasInput(i)) return false;
  for (const auto& [index, types] : def.input_types) {
    if (!node.HasInput(static_cast<size_t>(index)) || types.empty()) continue;
    const DataType t = graph.TypeOf(node.inputs[static_cast<size_t>(index)]);
    if (t == DataType::kUndefined) continue;  // unknown statically: the kernel checks at run time
    if (std::find(types.begin(), types.end(), t) == types.end()) return false;
  }
  return true;
}

// Whether the kernel implements every extension attribute the node carries.
bool ImplementsExtensions(const KernelDef& def, const Node& node) {
  for (const char* name : kExtensionAttributes)
    if (node.HasAttribute(name) &&
        std::find(def.extension_attributes.begin(), def.extension_attributes.end(), name) ==
            def.extension_attributes.end())
      return false;
  return true;
}
}  // namespace

const KernelRegistration* KernelRegistry::Find(const Node& node, const Graph& graph) const {
  auto [begin, end] = by_op_.equal_range({node.op_type, node.domain});
  for (auto it = begin; it != end; ++it) {
    const KernelRegistration& r = kernels_[it->second];
    if (node.opset < r.def.since_version || node.opset > r.def.until_version) continue;
    if (!ImplementsExtensions(r.def, node)) continue;
    if (AcceptsTypes(r.def, node, graph)) return &r;
  }
  return nullptr;
}

bool KernelRegistry::HasOp(const std::string& op_type, const std::string& domain, size_t num_inputs) const {
  auto [begin, end] = by_op_.equal_range({op_type, domain});
  for (auto it = begin; it != end; ++it)
    if (num_inputs <= kernels_[it->second].def.max_inputs) return true;
  return false;
}

const Tensor& KernelContext::Input(size_t i) const {
  const Value* v = InputValue(i);
  if (v == nullptr) Fail(ErrorCode::kInvalidArgument, node().Describe(), ": required input ", i, " is missing");
  if (!v->is_tensor()) Fail(ErrorCode::kInvalidArgument, node().Describe(), ": input ", i, " is not a tensor");
  return v->tensor();
}

const Tensor* KernelContext::OptionalInput(size_t i) const {
  const Value* v = InputValue(i);
  if (v == nullptr || v->is_none()) return nullptr;
  if (!v->is_tensor()) Fail(ErrorCode::kInvalidArgument, node().Describe(), ": input ", i, " is not a tensor");
  return &v->tensor();
}

std::vector<size_t> ExecutionProvider::GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const {
  std::vector<size_t> taken;
  for (size_t i : unassigned)
    if (kernels().Find(*graph.nodes[i], graph) != nullptr) taken.push_back(i);
  return taken;
}

}  // namespace tessera
