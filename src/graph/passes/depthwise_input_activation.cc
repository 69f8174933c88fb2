#include "graph/passes/depthwise_input_activation.h"

#include "tessera/data_type.h"

namespace tessera {
namespace {

constexpr const char* kDomain = "ai.tessera";

bool IsNchwcConv(const Node* node) {
  return node != nullptr && node->op_type == "NchwcConv" && node->domain == kDomain && node->outputs.size() == 1;
}

// A float32 value that float16 holds exactly (so that clipping commutes with rounding to either type).
bool ExactInFloat16(float v) { return ToFloat(ToFloat16(v)) == v; }

// Whether P's activation commutes with rounding to the element type: Relu, or a Clip with float16 limits.
bool MovableActivation(const Node& producer) {
  if (producer.HasAttribute("activation_clip")) return false;  // a clamp after it: the two move together or not at all
  const std::string name = producer.GetString("activation", "");
  if (name == "Relu") return true;
  if (name != "Clip") return false;
  const std::vector<float> limits = producer.GetFloats("activation_params", {});
  return limits.size() == 2 && ExactInFloat16(limits[0]) && ExactInFloat16(limits[1]) && limits[0] <= limits[1];
}

// D is a 2-D depthwise convolution: W [C, 1, R, S] with group = C.
bool IsDepthwise(const Graph& graph, const Node& conv) {
  const Tensor* w = ConstantTensor(graph, conv.inputs[1]);
  if (w == nullptr || w->shape().rank() != 4) return false;
  const int64_t group = conv.GetInt("group", 1);
  return group > 1 && w->shape()[0] == group && w->shape()[1] == 1;
}

}  // namespace

size_t FuseDepthwiseInputActivation(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    Node& depthwise = *node;
    if (!IsNchwcConv(&depthwise) || depthwise.NumInputs() < 2 || depthwise.attributes.count("input_activation") ||
        !IsDepthwise(graph, depthwise))
      continue;
    const std::string& x = depthwise.inputs[0];
    Node* producer = index.Producer(x);
    if (!IsNchwcConv(producer) || producer == &depthwise || !MovableActivation(*producer) ||
        !index.OnlyReadBy(x, depthwise) || graph.IsGraphOutput(x) || index.ReadBySubgraph(x))
      continue;
    if (!can_fuse(depthwise, graph, "ActivatedNchwcConv", kDomain, 0)) continue;
    Attribute activation = producer->attributes.at("activation");
    activation.name = "input_activation";
    depthwise.attributes["input_activation"] = activation;
    if (auto params = producer->attributes.find("activation_params"); params != producer->attributes.end()) {
      Attribute moved = params->second;
      moved.name = "input_activation_params";
      depthwise.attributes["input_activation_params"] = moved;
    }
    producer->attributes.erase("activation");
    producer->attributes.erase("activation_params");
    depthwise.op_type = "ActivatedNchwcConv";
    ++fused;
  }
  return fused;
}

}  // namespace tessera
