#include "graph/passes/hard_swish_fusion.h"

#include "graph/passes/activation_match.h"

namespace tessera {
namespace {

constexpr double kTolerance = 1e-3;

bool Is(const Node* node, const char* op_type) { return IsStandardOp(node, op_type); }

bool Near(float value, double expected) { return std::abs(value - expected) <= kTolerance * std::abs(expected); }

// Whether `node` divides `value` by 6 (a Div by 6 or a Mul by 1/6).
bool IsSixth(const Graph& graph, const Node* node, const std::string& value) {
  if (Is(node, "Div") && node->inputs.size() == 2 && node->inputs[0] == value)
    return IsScalarConstant(graph, node->inputs[1], 6.0, kTolerance);
  if (Is(node, "Mul") && node->inputs.size() == 2)
    if (std::optional<size_t> other = OtherThanScalar(graph, *node, 1.0 / 6.0, kTolerance))
      return node->inputs[*other] == value;
  return false;
}

struct Match {
  std::vector<Node*> nodes;  // the last one is rewritten
  std::string x;
};

// Around a Clip(Add(x, 3), 0, 6) or a HardSigmoid(x, 1/6, 0.5) node `gate`.
std::optional<Match> MatchAt(const Graph& graph, const GraphIndex& index, Node& gate) {
  Match m;
  if (Is(&gate, "Clip")) {
    const std::optional<MatchedActivation> clip = MatchActivation(graph, &gate, false);
    if (!clip || clip->name != "Clip" || clip->params.size() != 2 || clip->params[0] != 0.0f ||
        !Near(clip->params[1], 6.0))
      return std::nullopt;
    Node* add = index.Producer(gate.inputs[0]);
    std::optional<size_t> x_index;
    if (!Is(add, "Add") || add->inputs.size() != 2 || !(x_index = OtherThanScalar(graph, *add, 3.0, kTolerance)) ||
        !index.OnlyReadBy(gate.inputs[0], gate))
      return std::nullopt;
    m.x = add->inputs[*x_index];
    m.nodes = {add, &gate};
  } else if (Is(&gate, "HardSigmoid")) {
    if (!Near(gate.GetFloat("alpha", 0.2f), 1.0 / 6.0) || !Near(gate.GetFloat("beta", 0.5f), 0.5)) return std::nullopt;
    m.x = gate.inputs[0];
    m.nodes = {&gate};
  } else {
    return std::nullopt;
  }
  if (graph.TypeOf(m.x) != DataType::kFloat) return std::nullopt;
  const std::string& gated = gate.outputs[0];
  Node* next = index.SoleReader(gated);
  if (next == nullptr) return std::nullopt;
  if (Is(next, "Mul") && next->inputs.size() == 2 && OtherOperand(*next, gated) == m.x) {
    m.nodes.push_back(next);
    if (m.nodes.front()->op_type == "HardSigmoid") return m;  // x * HardSigmoid(x): done
    Node* sixth = index.SoleReader(next->outputs[0]);  // (x * clip) / 6
    if (!IsSixth(graph, sixth, next->outputs[0])) return std::nullopt;
    m.nodes.push_back(sixth);
    return m;
  }
  if (m.nodes.front()->op_type == "HardSigmoid" || !IsSixth(graph, next, gated)) return std::nullopt;
  m.nodes.push_back(next);  // x * (clip / 6)
  Node* product = index.SoleReader(next->outputs[0]);
  if (!Is(product, "Mul") || product->inputs.size() != 2 || OtherOperand(*product, next->outputs[0]) != m.x)
    return std::nullopt;
  m.nodes.push_back(product);
  return m;
}

}  // namespace

size_t FuseHardSwish(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    std::optional<Match> match = MatchAt(graph, index, *node);
    if (!match) continue;
    Node* last = match->nodes.back();
    if (AnyClaimed(match->nodes, doomed) || !can_fuse(*last, graph, "HardSwish", "", 0)) continue;
    CollapseMatch(match->nodes, "HardSwish", FusedOpset(*last, 14), {match->x}, "_hard_swish", doomed);
    ++fused;
  }
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
