#include "exec/plan_builder.h"

#include <map>

#include "core/logging.h"
#include "graph/passes/constant_folding.h"

namespace tessera {

namespace {

class PlanKernelInfo : public KernelInfo {
 public:
  PlanKernelInfo(const Node& node, const Graph& graph, ExecutionProvider& ep, const PlanStep& step,
                 const KernelSessionSettings& settings)
      : node_(node), graph_(graph), ep_(ep), step_(step), settings_(settings) {}
  const Node& node() const override { return node_; }
  ExecutionProvider& ep() const override { return ep_; }
  // In a subgraph, an initializer of an enclosing graph is a constant too (weights exporters leave outside
  // an If's branches): kernels pre-pack it once instead of on every call.
  const Tensor* ConstantInput(size_t i) const override {
    return node_.HasInput(i) ? FindConstant(graph_, node_.inputs[i]) : nullptr;
  }
  DataType InputType(size_t i) const override {
    return node_.HasInput(i) ? graph_.TypeOf(node_.inputs[i]) : DataType::kUndefined;
  }
  DataType OutputType(size_t i) const override {
    return i < node_.outputs.size() && !node_.outputs[i].empty() ? graph_.TypeOf(node_.outputs[i])
                                                                  : DataType::kUndefined;
  }
  std::optional<Shape> InputShape(size_t i) const override {
    if (!node_.HasInput(i)) return std::nullopt;
    if (const Tensor* constant = ConstantInput(i); constant != nullptr) return constant->shape();
    const ValueInfo* info = graph_.FindValueInfo(node_.inputs[i]);
    if (info == nullptr || info->kind != ValueInfo::Kind::kTensor || !info->shape) return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim& d : *info->shape) {
      if (!d.is_concrete()) return std::nullopt;
      dims.push_back(d.value);
    }
    return Shape(std::move(dims));
  }
  const SubgraphRunner& Subgraph(const std::string& attribute) const override {
    auto it = step_.subgraphs.find(attribute);
    if (it == step_.subgraphs.end())
      Fail(ErrorCode::kInvalidModel, node_.Describe(), ": no subgraph attribute '", attribute, "'");
    return *it->second;
  }
  const KernelSessionSettings& session_settings() const override { return settings_; }

 private:
  const Node& node_;
  const Graph& graph_;
  ExecutionProvider& ep_;
  const PlanStep& step_;
  const KernelSessionSettings& settings_;
};

class Builder {
 public:
  Builder(const Graph& graph, const std::vector<ExecutionProvider*>& assignment, const PlanServices& services,
          const std::set<std::string>& outer_scope)
      : graph_(graph), assignment_(assignment), services_(services), outer_scope_(outer_scope) {}

  ExecutionPlan Build() {
    PlaceInputs();
    for (size_t i = 0; i < graph_.nodes.size(); ++i) AddKernelStep(i);
    for (const ValueInfo& out : graph_.outputs) plan_.output_slots.push_back(PrimarySlot(out.name, "graph output"));
    ComputeWaits();
    ComputeLiveness();
    return std::move(plan_);
  }

 private:
  // Where the first consumer of `name` wants it (host when nothing consumes it).
  MemoryInfo FirstConsumerLocation(const std::string& name) const {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      const Node& node = *graph_.nodes[i];
      for (size_t j = 0; j < node.inputs.size(); ++j)
        if (node.inputs[j] == name) return RequiredLocation(i, static_cast<int>(j));
    }
    return MemoryInfo::Host();
  }

  MemoryInfo RequiredLocation(size_t node_index, int input) const {
    const KernelRegistration& reg = Registration(node_index);
    if (reg.def.IsHostInput(input)) return MemoryInfo::Host();
    if (reg.def.IsHostOrDeviceInput(input)) {  // a node's host-memory result is read where it is
      auto produced = primary_.find(graph_.nodes[node_index]->inputs[input]);
      if (produced != primary_.end() && plan_.slots[produced->second].producer >= 0 &&
          plan_.slots[produced->second].location.IsHostReadable())
        return plan_.slots[produced->second].location;
    }
    return assignment_[node_index]->memory_info();
  }

  const KernelRegistration& Registration(size_t node_index) const {
    const Node& node = *graph_.nodes[node_index];
    const KernelRegistration* reg = assignment_[node_index]->kernels().Find(node, graph_);
    if (reg == nullptr)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": ", assignment_[node_index]->type(), " has no kernel for it");
    return *reg;
  }

  int NewSlot(const std::string& name, const MemoryInfo& location) {
    ValueSlot slot;
    slot.name = name;
    slot.location = location;
    plan_.slots.push_back(std::move(slot));
    const int index = static_cast<int>(plan_.slots.size()) - 1;
    by_location_[{name, location}] = index;
    if (!primary_.count(name)) primary_[name] = index;
    return index;
  }

  void PlaceInputs() {
    for (const ValueInfo& in : graph_.inputs) {
      const int s = NewSlot(in.name, FirstConsumerLocation(in.name));
      plan_.slots[s].is_graph_input = true;
      plan_.input_slots.push_back(s);
    }
    for (const std::string& name : outer_scope_) {
      const int s = NewSlot(name, FirstConsumerLocation(name));
      plan_.slots[s].is_outer_scope = true;
      plan_.outer_slots.push_back(s);
    }
  }

  int PrimarySlot(const std::string& name, const char* role) {
    auto it = primary_.find(name);
    if (it != primary_.end()) return it->second;
    auto init = graph_.initializers.find(name);
    if (init != graph_.initializers.end()) {
      const int s = NewSlot(name, MemoryInfo::Host());
      plan_.slots[s].constant = Value(init->second);
      return s;
    }
    Fail(ErrorCode::kInvalidModel, role, " '", name, "' is not produced by any node, input or initializer");
  }

  // The slot holding `name` in `location`, adding a copy step (or a constant copy) when needed.
  int SlotIn(const std::string& name, const MemoryInfo& location) {
    auto it = by_location_.find({name, location});
    if (it != by_location_.end()) return it->second;
    const int source = PrimarySlot(name, "input");
    if (plan_.slots[source].location == location) return source;
    const MemoryInfo from = plan_.slots[source].location;
    DataTransfer* transfer = services_.find_transfer(from, location);
    if (!plan_.slots[source].constant.is_none()) {
      const int s = NewSlot(name, location);
      plan_.slots[s].constant = CopyConstant(plan_.slots[source].constant.tensor(), location, transfer);
      return s;
    }
    const int dst = NewSlot(name, location);
    PlanStep step;
    step.kind = PlanStep::Kind::kCopy;
    step.inputs = {source};
    step.outputs = {dst};
    step.transfer = transfer;
    step.stream = services_.copy_stream_for(from, location);
    step.allocator = services_.allocator_on(location, step.stream);
    step.label = "copy '" + name + "' " + from.ToString() + " -> " + location.ToString();
    AddStep(std::move(step));
    return dst;
  }

  Value CopyConstant(const Tensor& host, const MemoryInfo& location, DataTransfer* transfer) {
    Tensor dst = Tensor::Allocate(host.type(), host.shape(), services_.allocator_for(location));
    CopyPair pair{&host, &dst};
    transfer->Copy({&pair, 1}, nullptr);
    return Value(dst);
  }

  void AddStep(PlanStep step) {
    const int index = static_cast<int>(plan_.steps.size());
    for (int out : step.outputs) {
      if (out < 0) continue;
      plan_.slots[out].producer = index;
      plan_.slots[out].stream = plan_.slots[out].location.IsHostReadable() && step.kind == PlanStep::Kind::kKernel
                                    ? nullptr
                                    : step.stream;
    }
    if (step.stream != nullptr && std::find(plan_.streams.begin(), plan_.streams.end(), step.stream) == plan_.streams.end())
      plan_.streams.push_back(step.stream);
    plan_.steps.push_back(std::move(step));
  }

  void AddKernelStep(size_t node_index) {
    const Node& node = *graph_.nodes[node_index];
    ExecutionProvider* ep = assignment_[node_index];
    const KernelRegistration& reg = Registration(node_index);
    PlanStep step;
    step.kind = PlanStep::Kind::kKernel;
    step.node = &node;
    step.ep = ep;
    step.def = &reg.def;
    step.stream = services_.stream_for(ep->memory_info());
    step.allocator = services_.allocator_on(ep->memory_info(), step.stream);
    step.label = "node '" + node.name + "' (" + node.op_type + ") on " + ep->type();
    for (size_t j = 0; j < node.inputs.size(); ++j)
      step.inputs.push_back(node.inputs[j].empty() ? -1 : SlotIn(node.inputs[j], RequiredLocation(node_index, static_cast<int>(j))));
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      if (node.outputs[j].empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      if (primary_.count(node.outputs[j]))
        Fail(ErrorCode::kInvalidModel, node.Describe(), ": output '", node.outputs[j], "' is already defined");
      const MemoryInfo where = reg.def.IsHostOutput(static_cast<int>(j)) ? MemoryInfo::Host() : ep->memory_info();
      step.outputs.push_back(NewSlot(node.outputs[j], where));
    }
    for (const auto& [name, attribute] : node.attributes) {
      if (attribute.type != Attribute::Type::kGraph || !attribute.g) continue;
      step.subgraphs[name] = services_.compile_subgraph(*attribute.g, node);
      // An initializer of this graph that only subgraphs read has no consumer here: give it its slot now,
      // so that the subgraph finds it as an outer-scope value.
      for (const std::string& outer : attribute.g->OuterScopeReferences())
        if (!primary_.count(outer) && graph_.initializers.count(outer)) PrimarySlot(outer, "outer-scope value");
    }
    const int index = static_cast<int>(plan_.steps.size());
    AddStep(std::move(step));
    PlanStep& placed = plan_.steps[index];
    placed.kernel = reg.create(PlanKernelInfo(node, graph_, *ep, placed, services_.kernel_settings));
  }

  void ComputeWaits() {
    for (size_t t = 0; t < plan_.steps.size(); ++t) {
      PlanStep& step = plan_.steps[t];
      for (size_t j = 0; j < step.inputs.size(); ++j) {
        const int s = step.inputs[j];
        if (s < 0) continue;
        const ValueSlot& slot = plan_.slots[s];
        if (slot.producer < 0 || slot.stream == nullptr) continue;
        const bool host_read = step.stream == nullptr || (step.def && step.def->IsHostInput(static_cast<int>(j)));
        if (!host_read && slot.stream == step.stream) continue;
        step.wait_for.push_back({slot.producer, host_read});
        plan_.steps[slot.producer].record_event = true;
      }
    }
  }

  // Slots of this graph that the step's subgraphs read as outer-scope values (they must stay alive until
  // the step has run, though they are not among its inputs).
  std::vector<int> SlotsReadBySubgraphs(const PlanStep& step) const {
    std::vector<int> slots;
    for (const auto& [attribute, runner] : step.subgraphs)
      for (const std::string& name : runner->graph().OuterScopeReferences())
        for (size_t s = 0; s < plan_.slots.size(); ++s)
          if (plan_.slots[s].name == name) slots.push_back(static_cast<int>(s));
    return slots;
  }

  void ComputeLiveness() {
    std::vector<int> last_use(plan_.slots.size(), -1);
    for (size_t t = 0; t < plan_.steps.size(); ++t) {
      for (int s : plan_.steps[t].inputs)
        if (s >= 0) last_use[s] = static_cast<int>(t);
      for (int s : SlotsReadBySubgraphs(plan_.steps[t])) last_use[s] = static_cast<int>(t);
      for (int s : plan_.steps[t].outputs)
        if (s >= 0 && last_use[s] < static_cast<int>(t)) last_use[s] = static_cast<int>(t);
    }
    std::set<int> keep(plan_.output_slots.begin(), plan_.output_slots.end());
    for (size_t s = 0; s < plan_.slots.size(); ++s) {
      if (keep.count(static_cast<int>(s)) || !plan_.slots[s].constant.is_none() || last_use[s] < 0) continue;
      plan_.steps[last_use[s]].release_after.push_back(static_cast<int>(s));
    }
  }

  const Graph& graph_;
  const std::vector<ExecutionProvider*>& assignment_;
  const PlanServices& services_;
  const std::set<std::string>& outer_scope_;
  ExecutionPlan plan_;
  std::map<std::pair<std::string, MemoryInfo>, int> by_location_;
  std::map<std::string, int> primary_;
};

}  // namespace

int ExecutionPlan::FindSlot(const std::string& name) const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == name) return static_cast<int>(i);
  return -1;
}

ExecutionPlan BuildExecutionPlan(const Graph& graph, const std::vector<ExecutionProvider*>& assignment,
                                 const PlanServices& services, const std::set<std::string>& outer_scope) {
  return Builder(graph, assignment, services, outer_scope).Build();
}

}  // namespace tessera
