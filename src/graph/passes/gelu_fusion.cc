#include "graph/passes/gelu_fusion.h"

#include <cmath>

namespace tessera {
namespace {

constexpr double kTolerance = 1e-3;
const double kSqrt2 = std::sqrt(2.0);
const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);

bool Is(const Node* node, const char* op_type) { return IsStandardOp(node, op_type); }

// The reader of `value` when it is its only reader and of `op_type`.
Node* SoleReader(const GraphIndex& index, const std::string& value, const char* op_type) {
  Node* reader = index.SoleReader(value);
  return Is(reader, op_type) ? reader : nullptr;
}

struct GeluMatch {
  std::vector<Node*> nodes;  // the last one is rewritten
  std::string x;
  bool tanh = false;
};

// x / sqrt(2) or x * (1/sqrt(2)) producing `scaled`: returns x.
std::optional<std::string> MatchErfArgument(const Graph& graph, const GraphIndex& index, const std::string& scaled,
                                            std::vector<Node*>& nodes) {
  Node* node = index.Producer(scaled);
  if (Is(node, "Div") && IsScalarConstant(graph, node->inputs[1], kSqrt2, kTolerance)) {
    nodes.push_back(node);
    return node->inputs[0];
  }
  if (Is(node, "Mul"))
    if (std::optional<size_t> x = OtherThanScalar(graph, *node, 1.0 / kSqrt2, kTolerance)) {
      nodes.push_back(node);
      return node->inputs[*x];
    }
  return std::nullopt;
}

// Whether `cube` is x^3: Pow(x, 3) or Mul(x, Mul(x, x)) / Mul(Mul(x, x), x).
bool MatchCube(const Graph& graph, const GraphIndex& index, const std::string& cube, const std::string& x,
               std::vector<Node*>& nodes) {
  Node* node = index.Producer(cube);
  if (Is(node, "Pow") && node->inputs[0] == x && IsScalarConstant(graph, node->inputs[1], 3.0, kTolerance)) {
    nodes.push_back(node);
    return true;
  }
  if (!Is(node, "Mul") || node->inputs.size() != 2) return false;
  const std::string& square = node->inputs[0] == x ? node->inputs[1] : node->inputs[0];
  if (OtherOperand(*node, square) != x) return false;
  Node* square_node = index.Producer(square);
  if (!Is(square_node, "Mul") || square_node->inputs[0] != x || square_node->inputs[1] != x ||
      !index.OnlyReadBy(square, *node))
    return false;
  nodes.push_back(square_node);
  nodes.push_back(node);
  return true;
}

// sqrt(2/pi) * (x + 0.044715 * x^3) producing `scaled`: returns x.
std::optional<std::string> MatchTanhArgument(const Graph& graph, const GraphIndex& index, const std::string& scaled,
                                             std::vector<Node*>& nodes) {
  Node* scale = index.Producer(scaled);
  std::optional<size_t> inner_index;
  if (!Is(scale, "Mul") || !(inner_index = OtherThanScalar(graph, *scale, kSqrt2OverPi, kTolerance)))
    return std::nullopt;
  const std::string& inner = scale->inputs[*inner_index];
  Node* add = index.Producer(inner);
  if (!Is(add, "Add") || add->inputs.size() != 2 || !index.OnlyReadBy(inner, *scale)) return std::nullopt;
  for (size_t x_index = 0; x_index < 2; ++x_index) {
    const std::string& x = add->inputs[x_index];
    const std::string& term = add->inputs[1 - x_index];
    Node* times = index.Producer(term);
    std::optional<size_t> cube_index;
    if (!Is(times, "Mul") || !index.OnlyReadBy(term, *add) ||
        !(cube_index = OtherThanScalar(graph, *times, 0.044715, kTolerance)))
      continue;
    std::vector<Node*> cube_nodes;
    const std::string& cube = times->inputs[*cube_index];
    if (!index.OnlyReadBy(cube, *times) || !MatchCube(graph, index, cube, x, cube_nodes)) continue;
    nodes.insert(nodes.end(), cube_nodes.begin(), cube_nodes.end());
    nodes.insert(nodes.end(), {times, add, scale});
    return x;
  }
  return std::nullopt;
}

// From `one_plus` = 1 + f(x): x * one_plus * 0.5 in any of the accepted groupings. Appends the nodes.
bool MatchHalfProduct(const Graph& graph, const GraphIndex& index, const std::string& one_plus, const std::string& x,
                      std::vector<Node*>& nodes) {
  const std::vector<Node*>& readers = index.Consumers(one_plus);
  if (readers.size() != 1 || !Is(readers[0], "Mul") || !index.OnlyReadBy(one_plus, *readers[0])) return false;
  Node* mul = readers[0];
  const std::string& other = OtherOperand(*mul, one_plus);
  if (other == x) {  // (x * (1 + f)) * 0.5
    Node* half = SoleReader(index, mul->outputs[0], "Mul");
    if (half == nullptr || !OtherThanScalar(graph, *half, 0.5, kTolerance)) return false;
    nodes.insert(nodes.end(), {mul, half});
    return true;
  }
  if (IsScalarConstant(graph, other, 0.5, kTolerance)) {  // x * ((1 + f) * 0.5)
    Node* times_x = SoleReader(index, mul->outputs[0], "Mul");
    if (times_x == nullptr || OtherOperand(*times_x, mul->outputs[0]) != x) return false;
    nodes.insert(nodes.end(), {mul, times_x});
    return true;
  }
  Node* half_x = index.Producer(other);  // (x * 0.5) * (1 + f)
  std::optional<size_t> x_index;
  if (!Is(half_x, "Mul") || !(x_index = OtherThanScalar(graph, *half_x, 0.5, kTolerance)) ||
      half_x->inputs[*x_index] != x || !index.OnlyReadBy(other, *mul))
    return false;
  nodes.insert(nodes.end(), {half_x, mul});
  return true;
}

// Matches a pattern around its Erf or Tanh node.
std::optional<GeluMatch> Match(const Graph& graph, const GraphIndex& index, Node& core) {
  GeluMatch match;
  match.tanh = Is(&core, "Tanh");
  if (!match.tanh && !Is(&core, "Erf")) return std::nullopt;
  std::optional<std::string> x = match.tanh ? MatchTanhArgument(graph, index, core.inputs[0], match.nodes)
                                            : MatchErfArgument(graph, index, core.inputs[0], match.nodes);
  if (!x || !index.OnlyReadBy(core.inputs[0], core)) return std::nullopt;
  const DataType type = graph.TypeOf(*x);
  if (type != DataType::kFloat && type != DataType::kFloat16) return std::nullopt;
  match.x = *x;
  Node* plus_one = SoleReader(index, core.outputs[0], "Add");
  if (plus_one == nullptr || !OtherThanScalar(graph, *plus_one, 1.0, kTolerance)) return std::nullopt;
  match.nodes.insert(match.nodes.end(), {&core, plus_one});
  if (!MatchHalfProduct(graph, index, plus_one->outputs[0], match.x, match.nodes)) return std::nullopt;
  return match;
}

}  // namespace

size_t FuseGelu(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    std::optional<GeluMatch> match = Match(graph, index, *node);
    if (!match) continue;
    if (AnyClaimed(match->nodes, doomed) || !can_fuse(*node, graph, "Gelu", "", 0)) continue;
    Node& gelu = CollapseMatch(match->nodes, "Gelu", FusedOpset(*node, 20), {match->x}, "_gelu", doomed);
    if (match->tanh) gelu.attributes["approximate"] = StringAttribute("approximate", "tanh");
    ++fused;
  }
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
