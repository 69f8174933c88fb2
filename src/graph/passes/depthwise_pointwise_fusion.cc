#include "graph/passes/depthwise_pointwise_fusion.h"

#include <algorithm>
#include <utility>

namespace tessera {
namespace {

constexpr const char* kDomain = "ai.tessera";

bool IsConvOrFusedConv(const Node* node) {
  if (node == nullptr || node->outputs.size() != 1 || node->NumInputs() < 2) return false;
  return (node->op_type == "Conv" && node->domain.empty()) ||
         (node->op_type == "FusedConv" && node->domain == kDomain);
}

bool AllEqual(const std::vector<int64_t>& values, int64_t expected) {
  return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == expected; });
}

// D: a 2-D depthwise convolution without a residual: W [C, 1, R, S], group = C.
bool IsDepthwise(const Graph& graph, const Node& conv) {
  if (conv.inputs.size() > 3) return false;  // FusedConv's residual
  const Tensor* w = ConstantTensor(graph, conv.inputs[1]);
  if (w == nullptr || w->shape().rank() != 4) return false;
  const int64_t group = conv.GetInt("group", 1);
  return group > 1 && w->shape()[0] == group && w->shape()[1] == 1;
}

// Y: a 2-D pointwise convolution over D's C channels: W [K, C, 1, 1], group 1, strides and dilations 1, no padding.
bool IsPointwiseOver(const Graph& graph, const Node& conv, int64_t channels) {
  const Tensor* w = ConstantTensor(graph, conv.inputs[1]);
  if (w == nullptr || w->shape().rank() != 4 || w->shape()[1] != channels || w->shape()[2] != 1 ||
      w->shape()[3] != 1)
    return false;
  const std::string auto_pad = conv.GetString("auto_pad", "NOTSET");
  return conv.GetInt("group", 1) == 1 && AllEqual(conv.GetInts("strides", {}), 1) &&
         AllEqual(conv.GetInts("dilations", {}), 1) && AllEqual(conv.GetInts("pads", {}), 0) &&
         (auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad.empty());
}

// Copies `from`'s attribute `name` to `to` as `as`, when it is there.
void MoveAttribute(const Node& from, const std::string& name, Node& to, const std::string& as) {
  auto it = from.attributes.find(name);
  if (it == from.attributes.end()) return;
  Attribute copy = it->second;
  copy.name = as;
  to.attributes[as] = std::move(copy);
}

}  // namespace

size_t FuseDepthwisePointwise(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    Node& pointwise = *node;
    if (!IsConvOrFusedConv(&pointwise) || doomed.count(&pointwise)) continue;
    const std::string& d = pointwise.inputs[0];
    Node* depthwise = index.Producer(d);
    if (!IsConvOrFusedConv(depthwise) || doomed.count(depthwise) || !IsDepthwise(graph, *depthwise)) continue;
    const int64_t channels = ConstantTensor(graph, depthwise->inputs[1])->shape()[0];
    if (!IsPointwiseOver(graph, pointwise, channels) || !index.OnlyReadBy(d, pointwise) || graph.IsGraphOutput(d) ||
        index.ReadBySubgraph(d) || std::count(pointwise.inputs.begin(), pointwise.inputs.end(), d) != 1)
      continue;
    if (!can_fuse(pointwise, graph, "DepthwisePointwiseConv", kDomain, 0)) continue;
    Node fused_node;
    fused_node.name = depthwise->name + "_" + pointwise.name + "_fused";
    fused_node.op_type = "DepthwisePointwiseConv";
    fused_node.domain = kDomain;
    fused_node.opset = 1;
    const auto input = [](const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : std::string(); };
    fused_node.inputs = {depthwise->inputs[0], depthwise->inputs[1], input(*depthwise, 2),
                         pointwise.inputs[1],  input(pointwise, 2),  input(pointwise, 3)};
    while (!fused_node.inputs.empty() && fused_node.inputs.back().empty()) fused_node.inputs.pop_back();
    fused_node.outputs = pointwise.outputs;
    for (const char* window : {"kernel_shape", "strides", "pads", "dilations", "auto_pad"})
      MoveAttribute(*depthwise, window, fused_node, window);
    MoveAttribute(*depthwise, "activation", fused_node, "depthwise_activation");
    MoveAttribute(*depthwise, "activation_params", fused_node, "depthwise_activation_params");
    MoveAttribute(pointwise, "activation", fused_node, "activation");
    MoveAttribute(pointwise, "activation_params", fused_node, "activation_params");
    graph.value_infos.erase(d);
    doomed.insert(depthwise);
    pointwise = std::move(fused_node);
    ++fused;
  }
  if (fused > 0) graph.opsets.emplace(kDomain, 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
