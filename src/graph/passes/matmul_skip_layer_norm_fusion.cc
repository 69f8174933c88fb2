#include "graph/passes/matmul_skip_layer_norm_fusion.h"

namespace tessera {
namespace {

bool IsSkipLayerNorm(const Node& node) {
  return node.op_type == "SkipLayerNormalization" && (node.domain == "ai.tessera" || node.domain == "com.microsoft") &&
         node.inputs.size() >= 3 && !node.inputs[0].empty() && !node.inputs[1].empty() && !node.inputs[2].empty();
}

bool NamesOnlyOutput0(const Node& node) {
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return false;
  return !node.outputs.empty() && !node.outputs[0].empty();
}

// A default-domain MatMul of two inputs whose B is a 2-D initializer of A's type (float or float16).
bool IsConstantProduct(const Graph& graph, const Node* node) {
  if (node == nullptr || node->op_type != "MatMul" || !node->domain.empty() || node->inputs.size() != 2 ||
      node->outputs.size() != 1 || node->inputs[0].empty())
    return false;
  const DataType type = graph.TypeOf(node->inputs[0]);
  const Tensor* b = ConstantTensor(graph, node->inputs[1]);
  return (type == DataType::kFloat || type == DataType::kFloat16) && b != nullptr && b->type() == type &&
         b->shape().rank() == 2;
}

}  // namespace

size_t FuseMatMulSkipLayerNorm(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    Node& norm = *node;
    if (doomed.count(&norm) || !IsSkipLayerNorm(norm) || !NamesOnlyOutput0(norm)) continue;
    // The product as the normalization's input, else as its skip (the two are added, in either order).
    for (size_t operand = 0; operand < 2; ++operand) {
      Node* product = index.Producer(norm.inputs[operand]);
      if (!IsConstantProduct(graph, product) || doomed.count(product) ||
          !index.OnlyReadBy(product->outputs[0], norm) ||
          graph.TypeOf(norm.inputs[1 - operand]) != graph.TypeOf(product->inputs[0]) ||
          !can_fuse(norm, graph, "MatMulSkipLayerNormalization", "ai.tessera", 0) ||
          !can_fuse(*product, graph, "MatMulSkipLayerNormalization", "ai.tessera", 0))
        continue;
      Node fused_node;
      fused_node.name = norm.name + "_matmul";
      fused_node.op_type = "MatMulSkipLayerNormalization";
      fused_node.domain = "ai.tessera";
      fused_node.opset = 1;
      fused_node.inputs = {product->inputs[0], product->inputs[1], norm.inputs[1 - operand], norm.inputs[2],
                           norm.inputs.size() > 3 ? norm.inputs[3] : "", norm.inputs.size() > 4 ? norm.inputs[4] : ""};
      while (fused_node.inputs.back().empty()) fused_node.inputs.pop_back();
      fused_node.outputs = {norm.outputs[0]};
      fused_node.attributes["epsilon"] = FloatAttribute("epsilon", norm.GetFloat("epsilon", 1e-12f));
      graph.value_infos.erase(product->outputs[0]);
      doomed.insert(product);
      norm = std::move(fused_node);
      ++fused;
      break;
    }
  }
  if (fused > 0) graph.opsets.emplace("ai.tessera", 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
