#include "graph/passes/matmul_epilogue_fusion.h"

#include "graph/passes/activation_match.h"

namespace tessera {
namespace {

bool IsDefaultDomain(const Node* node, const char* op_type) {
  return node != nullptr && node->op_type == op_type && node->domain.empty() && node->outputs.size() == 1 &&
         node->inputs.size() == 2;
}

// The operand of two-input `node` that is not `value`, or "" when both are `value`.
std::string OtherInput(const Node& node, const std::string& value) {
  if (node.inputs[0] == node.inputs[1]) return "";
  return node.inputs[0] == value ? node.inputs[1] : node.inputs[0];
}

// B's last dimension when static (B a constant or a value of known shape), else -1.
int64_t ColumnCount(const Graph& graph, const std::string& b) {
  if (const Tensor* constant = ConstantTensor(graph, b)) {
    return constant->shape().rank() >= 2 ? constant->shape()[constant->shape().rank() - 1] : -1;
  }
  auto it = graph.value_infos.find(b);
  if (it == graph.value_infos.end() || !it->second.shape || it->second.shape->size() < 2) return -1;
  const Dim& last = it->second.shape->back();
  return last.is_concrete() ? last.value : -1;
}

bool IsBias(const Graph& graph, const std::string& value, int64_t columns, DataType type) {
  const Tensor* tensor = ConstantTensor(graph, value);
  return columns > 0 && tensor != nullptr && tensor->type() == type && tensor->shape().rank() == 1 &&
         tensor->shape()[0] == columns;
}

struct MatMulMatch {
  Node* matmul = nullptr;
  DataType type = DataType::kFloat;  // of the product, the bias and the result
  std::vector<Node*> followers;  // in order; the last one is rewritten
  float alpha = 1.0f;
  std::string bias, addend;
  std::optional<MatchedActivation> activation;
};

// Extends `match` by the scale and bias steps; returns the node after them.
Node* MatchScaleAndBias(const Graph& graph, const GraphIndex& index, MatMulMatch& match, std::string& value) {
  Node* next = index.SoleReader(value);
  const bool is_mul = IsDefaultDomain(next, "Mul"), is_div = IsDefaultDomain(next, "Div");
  if (is_mul || is_div) {
    const std::string other = OtherInput(*next, value);
    const std::optional<double> c = other.empty() ? std::nullopt : ScalarConstant(graph, other);
    if (c && *c != 0.0 && (is_mul || next->inputs[0] == value)) {
      match.alpha = static_cast<float>(is_mul ? *c : 1.0 / *c);
      match.followers.push_back(next);
      value = next->outputs[0];
      next = index.SoleReader(value);
    }
  }
  if (IsDefaultDomain(next, "Add")) {
    const std::string other = OtherInput(*next, value);
    if (!other.empty() && IsBias(graph, other, ColumnCount(graph, match.matmul->inputs[1]), match.type)) {
      match.bias = other;
      match.followers.push_back(next);
      value = next->outputs[0];
      next = index.SoleReader(value);
    }
  }
  return next;
}

std::optional<MatMulMatch> Match(const Graph& graph, const GraphIndex& index, Node& matmul) {
  if (!IsDefaultDomain(&matmul, "MatMul")) return std::nullopt;
  MatMulMatch match;
  match.type = graph.TypeOf(matmul.outputs[0]);
  if (match.type != DataType::kFloat && match.type != DataType::kFloat16) return std::nullopt;
  match.matmul = &matmul;
  std::string value = matmul.outputs[0];
  Node* next = MatchScaleAndBias(graph, index, match, value);
  if ((match.activation = MatchActivation(graph, next, true))) {
    match.followers.push_back(next);
    value = next->outputs[0];
    next = index.SoleReader(value);
  }
  if (IsDefaultDomain(next, "Add") && graph.TypeOf(next->outputs[0]) == match.type) {
    match.addend = OtherInput(*next, value);
    if (!match.addend.empty()) match.followers.push_back(next);
  }
  if (match.followers.empty()) return std::nullopt;
  return match;
}

Node MakeFusedNode(const MatMulMatch& match) {
  Node fused;
  fused.name = match.matmul->name + "_fused";
  fused.op_type = "FusedMatMul";
  fused.domain = "ai.tessera";
  fused.opset = 1;
  fused.inputs = {match.matmul->inputs[0], match.matmul->inputs[1], match.bias};
  if (!match.addend.empty()) fused.inputs.push_back(match.addend);
  while (fused.inputs.back().empty()) fused.inputs.pop_back();
  fused.outputs = {match.followers.back()->outputs[0]};
  if (match.alpha != 1.0f) fused.attributes["alpha"] = FloatAttribute("alpha", match.alpha);
  if (match.activation) SetActivationAttributes(fused, *match.activation);
  return fused;
}

}  // namespace

size_t FuseMatMulEpilogue(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed, claimed;  // claimed: every node of an earlier match, the rewritten one included
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    if (claimed.count(node.get())) continue;
    std::optional<MatMulMatch> match = Match(graph, index, *node);
    if (!match || !can_fuse(*node, graph, "FusedMatMul", "ai.tessera", 0)) continue;
    bool taken = false;
    for (const Node* follower : match->followers) taken = taken || claimed.count(follower);
    if (taken) continue;
    claimed.insert(match->followers.begin(), match->followers.end());
    Node* last = match->followers.back();
    Node fused_node = MakeFusedNode(*match);
    graph.value_infos.erase(match->matmul->outputs[0]);
    doomed.insert(match->matmul);
    for (const Node* follower : match->followers) {
      if (follower == last) continue;
      graph.value_infos.erase(follower->outputs[0]);
      doomed.insert(follower);
    }
    *last = std::move(fused_node);
    ++fused;
  }
  if (fused > 0) graph.opsets.emplace("ai.tessera", 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
