#include "graph/passes/integer_matmul_fusion.h"

namespace tessera {
namespace {

bool Is(const Node* node, const char* op_type) { return IsStandardOp(node, op_type); }

// Number of elements of `value` when its shape is static.
std::optional<int64_t> StaticCount(const Graph& graph, const std::string& value) {
  const std::optional<std::vector<int64_t>> dims = StaticDims(graph, value);
  if (!dims) return std::nullopt;
  int64_t count = 1;
  for (int64_t d : *dims) count *= d;
  return count;
}

// Whether `value` holds one element: DynamicQuantizeLinear's scale, or a value whose static shape says so.
bool IsScalarShaped(const Graph& graph, const GraphIndex& index, const std::string& value) {
  const Node* producer = index.Producer(value);
  if (IsStandardOp(producer, "DynamicQuantizeLinear") && producer->outputs.size() > 1 && producer->outputs[1] == value)
    return true;
  const std::optional<std::vector<int64_t>> dims = StaticDims(graph, value);
  return dims && dims->size() <= 1 && StaticCount(graph, value) == 1;
}

// A rank-1 value of `n` elements.
bool IsVector(const Graph& graph, const std::string& value, int64_t n) {
  const std::optional<std::vector<int64_t>> dims = StaticDims(graph, value);
  return dims && dims->size() == 1 && (*dims)[0] == n;
}

struct IntegerMatMulMatch {
  std::vector<Node*> nodes;  // [scale Mul,] MatMulInteger, Cast, Mul[, Add]; the last is rewritten
  std::vector<std::string> inputs;
};

std::optional<IntegerMatMulMatch> Match(const Graph& graph, const GraphIndex& index, Node& matmul) {
  if (!Is(&matmul, "MatMulInteger") || matmul.inputs.size() < 2 || matmul.outputs.size() != 1) return std::nullopt;
  // B's last dim: the number of output columns a per-column scale or a bias must match.
  const std::optional<std::vector<int64_t>> b_dims = StaticDims(graph, matmul.inputs[1]);
  if (!b_dims || b_dims->size() != 2) return std::nullopt;
  const int64_t n = (*b_dims)[1];
  Node* cast = index.SoleReader(matmul.outputs[0]);
  if (!Is(cast, "Cast") || cast->GetInt("to", 0) != static_cast<int64_t>(DataType::kFloat)) return std::nullopt;
  Node* mul = index.SoleReader(cast->outputs[0]);
  if (!Is(mul, "Mul") || mul->inputs.size() != 2) return std::nullopt;
  const std::string& scale = OtherOperand(*mul, cast->outputs[0]);
  Node* scale_mul = index.Producer(scale);
  if (!Is(scale_mul, "Mul") || scale_mul->inputs.size() != 2) return std::nullopt;
  std::string a_scale = scale_mul->inputs[0], b_scale = scale_mul->inputs[1];
  if (!IsScalarShaped(graph, index, a_scale)) std::swap(a_scale, b_scale);
  if (!IsScalarShaped(graph, index, a_scale) ||
      !(IsScalarShaped(graph, index, b_scale) || IsVector(graph, b_scale, n)))
    return std::nullopt;
  if (graph.TypeOf(a_scale) != DataType::kFloat || graph.TypeOf(b_scale) != DataType::kFloat) return std::nullopt;

  IntegerMatMulMatch match;
  match.nodes = {&matmul, cast, mul};
  if (index.OnlyReadBy(scale, *mul)) match.nodes.insert(match.nodes.begin(), scale_mul);
  const auto optional_input = [&](size_t i) { return i < matmul.inputs.size() ? matmul.inputs[i] : std::string(); };
  match.inputs = {matmul.inputs[0], matmul.inputs[1], a_scale, b_scale, optional_input(2), optional_input(3)};
  // A bias added to the product: a float constant [N].
  Node* add = index.SoleReader(mul->outputs[0]);
  if (Is(add, "Add") && add->inputs.size() == 2) {
    const std::string& bias = OtherOperand(*add, mul->outputs[0]);
    const Tensor* constant = ConstantTensor(graph, bias);
    if (constant && constant->type() == DataType::kFloat && constant->shape().rank() == 1 &&
        constant->shape()[0] == n) {
      match.nodes.push_back(add);
      match.inputs.push_back(bias);
    }
  }
  return match;
}

}  // namespace

size_t FuseIntegerMatMulToFloat(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    std::optional<IntegerMatMulMatch> match = Match(graph, index, *node);
    if (!match || AnyClaimed(match->nodes, doomed) ||
        !can_fuse(*node, graph, "MatMulIntegerToFloat", "com.microsoft", 0))
      continue;
    Node& fused_node =
        CollapseMatch(match->nodes, "MatMulIntegerToFloat", 1, std::move(match->inputs), "_to_float", doomed);
    fused_node.domain = "com.microsoft";
    ++fused;
  }
  RemoveNodes(graph, doomed);
  if (fused > 0) graph.opsets.emplace("com.microsoft", 1);
  return fused;
}

}  // namespace tessera
