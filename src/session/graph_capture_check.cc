#include "session/graph_capture_check.h"

#include <algorithm>
#include <vector>

#include "core/retaining_allocator.h"

namespace tessera {

std::string GraphCaptureBlocker(const ExecutionPlan& plan, const ExecutionProvider& ep) {
  std::vector<bool> from_shapes(plan.slots.size(), false);
  for (size_t s = 0; s < plan.slots.size(); ++s) from_shapes[s] = !plan.slots[s].constant.is_none();
  for (const PlanStep& step : plan.steps) {
    if (step.kind == PlanStep::Kind::kCopy) {
      // A host value computed from shapes alone, read on the device: the capture run copies it outside the recorded
      // work into a buffer the graph keeps (ExecutePlan), which holds the right value for every replay of that
      // graph's input shapes.
      const int src = step.inputs[0], dst = step.outputs[0];
      if (src >= 0 && dst >= 0 && from_shapes[src] && plan.slots[src].location.IsHostReadable() &&
          plan.slots[dst].location == ep.memory_info()) {
        from_shapes[dst] = true;
        continue;
      }
      return step.label + " crosses memory spaces inside the run (a node runs on another execution provider)";
    }
    if (step.ep != &ep) {
      const bool shape_only = step.subgraphs.empty() && std::all_of(step.inputs.begin(), step.inputs.end(), [&](int s) {
                                return s < 0 || from_shapes[s];
                              });
      if (!shape_only)
        return step.node->Describe() + " runs on " + step.ep->type() +
               " and reads values that are not computed from shapes alone";
      for (int s : step.outputs)
        if (s >= 0) from_shapes[s] = true;
      continue;
    }
    for (int s : step.inputs)  // read on the host when queued: the value is baked into the graph
      if (s >= 0 && plan.slots[s].location.IsHostReadable() && !from_shapes[s])
        return step.node->Describe() + " reads '" + plan.slots[s].name +
               "' in host memory, which can change between replays";
    for (size_t i = 0; i < step.outputs.size(); ++i)
      if (step.outputs[i] >= 0 && step.def->IsHostOutput(static_cast<int>(i))) from_shapes[step.outputs[i]] = true;
    if (!step.subgraphs.empty()) return step.node->Describe() + " has control flow (subgraphs)";
    for (const PlanStep::Wait& wait : step.wait_for)
      if (wait.on_host) return step.node->Describe() + " reads a device-produced value on the host";
  }
  return "";
}

RunStreams RetainingStreams(const ExecutionPlan& plan, const RunStreams* set_streams, const PlanServices* services) {
  RunStreams table;
  if (set_streams != nullptr) table = *set_streams;
  table.services = services;
  for (const PlanStep& step : plan.steps) {
    if (step.allocator == nullptr) continue;
    auto it = std::find_if(table.allocators.begin(), table.allocators.end(),
                           [&](const auto& entry) { return entry.first == step.allocator.get(); });
    if (it != table.allocators.end() && dynamic_cast<RetainingAllocator*>(it->second.get()) != nullptr) continue;
    const AllocatorPtr mapped = set_streams != nullptr ? set_streams->Map(step.allocator) : step.allocator;
    const AllocatorPtr retaining = std::make_shared<RetainingAllocator>(mapped);
    if (it == table.allocators.end())
      table.allocators.push_back({step.allocator.get(), retaining});
    else
      it->second = retaining;
  }
  return table;
}

}  // namespace tessera
