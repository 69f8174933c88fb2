#include "graph/passes/gemm_to_matmul.h"

#include <algorithm>
#include <memory>
#include <set>

namespace tessera {

namespace {

// The values of a constant int64 shape whose entries are all explicit sizes (no 0 or -1 to resolve).
std::optional<std::vector<int64_t>> PositiveConstant(const Graph& graph, const std::string& value) {
  const Tensor* t = ConstantTensor(graph, value);
  if (t == nullptr || t->type() != DataType::kInt64 || t->shape().rank() != 1 || !t->memory_info().IsHostReadable())
    return std::nullopt;
  std::vector<int64_t> dims(t->Data<int64_t>(), t->Data<int64_t>() + t->NumElements());
  for (int64_t d : dims)
    if (d <= 0) return std::nullopt;
  return dims;
}

// Elementwise activations the epilogue fusion takes (activation_match.h), which commute with a Reshape.
bool IsActivation(const Node* node) {
  static const std::set<std::string> kinds = {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                                              "Gelu", "Clip"};
  return node != nullptr && node->domain.empty() && kinds.count(node->op_type) != 0 && node->outputs.size() == 1;
}

struct Match {
  Node* reshape_in;
  Node* gemm;
  Node* reshape_out;
  std::string x;
  std::vector<int64_t> out_dims;  // empty: X's shape is unknown, so the product stays 2-D (see `activation`)
  Node* activation = nullptr;     // with an unknown X: the activation read after the second Reshape
};

std::optional<Match> MatchAt(const Graph& graph, const GraphIndex& index, Node& gemm) {
  if (!IsStandardOp(&gemm, "Gemm") || gemm.inputs.size() < 2 || gemm.outputs.size() != 1) return std::nullopt;
  if (gemm.GetInt("transA", 0) != 0 || gemm.GetInt("transB", 0) != 0 || gemm.GetFloat("alpha", 1.0f) != 1.0f)
    return std::nullopt;
  const bool has_c = gemm.inputs.size() > 2 && !gemm.inputs[2].empty();
  if (has_c && gemm.GetFloat("beta", 1.0f) != 1.0f) return std::nullopt;
  const DataType type = graph.TypeOf(gemm.outputs[0]);
  if (type != DataType::kFloat && type != DataType::kFloat16) return std::nullopt;
  const Tensor* b = ConstantTensor(graph, gemm.inputs[1]);
  if (b == nullptr || b->shape().rank() != 2 || b->type() != type) return std::nullopt;
  const int64_t k = b->shape()[0], n = b->shape()[1];
  if (has_c) {
    const Tensor* c = ConstantTensor(graph, gemm.inputs[2]);
    if (c == nullptr || c->type() != type || c->shape() != Shape{n}) return std::nullopt;
  }
  Node* reshape_in = index.Producer(gemm.inputs[0]);
  if (!IsStandardOp(reshape_in, "Reshape") || !index.OnlyReadBy(gemm.inputs[0], gemm)) return std::nullopt;
  Node* reshape_out = index.SoleReader(gemm.outputs[0]);
  if (!IsStandardOp(reshape_out, "Reshape")) return std::nullopt;
  const std::string& x = reshape_in->inputs[0];
  const std::optional<std::vector<int64_t>> x_dims = StaticDims(graph, x);
  std::optional<std::vector<int64_t>> out_dims = StaticDims(graph, reshape_out->outputs[0]);
  if (!out_dims && reshape_out->inputs.size() == 2) out_dims = PositiveConstant(graph, reshape_out->inputs[1]);
  if (x_dims && out_dims && x_dims->size() >= 2 && x_dims->back() == k) {
    std::vector<int64_t> expected(x_dims->begin(), x_dims->end() - 1);
    expected.push_back(n);
    if (*out_dims == expected) return Match{reshape_in, &gemm, reshape_out, x, *out_dims};
  }
  // X's shape unknown (a fused node's output): the product stays on the 2-D rows, and an activation read after the
  // second Reshape moves before it, where the epilogue fusion takes it with the bias.
  Node* activation = index.SoleReader(reshape_out->outputs[0]);
  if (!has_c || !IsActivation(activation) || activation->inputs.empty() ||
      activation->inputs[0] != reshape_out->outputs[0])
    return std::nullopt;
  for (size_t i = 1; i < activation->inputs.size(); ++i)  // Clip's limits: constants only
    if (!activation->inputs[i].empty() && ConstantTensor(graph, activation->inputs[i]) == nullptr) return std::nullopt;
  Match m{reshape_in, &gemm, reshape_out, x, {}};
  m.activation = activation;
  return m;
}

}  // namespace

size_t RewriteReshapedGemm(Graph& graph) {
  GraphIndex index(graph);
  std::vector<Match> matches;
  std::set<const Node*> claimed;
  for (const auto& node : graph.nodes) {
    std::optional<Match> m = MatchAt(graph, index, *node);
    if (!m || claimed.count(m->reshape_in) || claimed.count(m->gemm) || claimed.count(m->reshape_out)) continue;
    claimed.insert({m->reshape_in, m->gemm, m->reshape_out});
    if (m->activation != nullptr) claimed.insert(m->activation);
    matches.push_back(*m);
  }
  std::set<const Node*> doomed;
  std::vector<std::pair<const Node*, std::unique_ptr<Node>>> inserts;  // (after this node, the new node)
  for (const Match& m : matches) {
    Node& gemm = *m.gemm;
    Node& out = *m.reshape_out;
    const bool has_c = gemm.inputs.size() > 2 && !gemm.inputs[2].empty();
    const std::string bias = has_c ? gemm.inputs[2] : "";
    const DataType type = graph.TypeOf(gemm.outputs[0]);
    gemm.op_type = "MatMul";
    gemm.opset = std::max(gemm.opset, 13);
    gemm.attributes.clear();
    if (m.activation != nullptr) {
      // Reshape(X) -> MatMul -> Add(bias) -> activation (2-D) -> Reshape: the second Reshape's node becomes the Add,
      // a new Reshape after the activation restores the shape its readers expect.
      const std::string product = FreshValueName(graph, gemm.outputs[0] + "_product");
      const std::string sum = FreshValueName(graph, gemm.outputs[0] + "_biased");
      const std::string activated = FreshValueName(graph, m.activation->outputs[0] + "_rows");
      gemm.inputs = {gemm.inputs[0], gemm.inputs[1]};
      gemm.outputs[0] = product;
      graph.value_infos[product] = ValueInfo{product, ValueInfo::Kind::kTensor, type, std::nullopt};
      graph.value_infos[sum] = ValueInfo{sum, ValueInfo::Kind::kTensor, type, std::nullopt};
      graph.value_infos[activated] = ValueInfo{activated, ValueInfo::Kind::kTensor, type, std::nullopt};
      const std::string shape = out.inputs[1];
      out.op_type = "Add";
      out.opset = std::max(out.opset, 14);
      out.attributes.clear();
      out.inputs = {product, bias};
      out.outputs[0] = sum;
      m.activation->inputs[0] = sum;
      auto reshape = std::make_unique<Node>();
      reshape->name = m.activation->name + "_reshape";
      reshape->op_type = "Reshape";
      reshape->opset = std::max(out.opset, 14);
      reshape->inputs = {activated, shape};
      reshape->outputs = {m.activation->outputs[0]};
      m.activation->outputs[0] = activated;
      inserts.push_back({m.activation, std::move(reshape)});
      continue;
    }
    // The Gemm becomes the product of X itself; the second Reshape becomes the bias Add (or goes).
    gemm.inputs = {m.x, gemm.inputs[1]};
    std::vector<Dim> dims;
    for (int64_t d : m.out_dims) dims.push_back(Dim{d, "", ""});
    if (has_c) {
      const std::string product = FreshValueName(graph, gemm.outputs[0] + "_product");
      gemm.outputs[0] = product;
      graph.value_infos[product] = ValueInfo{product, ValueInfo::Kind::kTensor, type, dims};
      out.op_type = "Add";
      out.opset = std::max(out.opset, 14);
      out.attributes.clear();
      out.inputs = {product, bias};
    } else {
      gemm.outputs[0] = out.outputs[0];
      doomed.insert(&out);
    }
    doomed.insert(m.reshape_in);
  }
  for (auto& insert : inserts) {
    const Node* after = insert.first;
    auto at = std::find_if(graph.nodes.begin(), graph.nodes.end(), [after](const auto& n) { return n.get() == after; });
    graph.nodes.insert(at + 1, std::move(insert.second));
  }
  RemoveNodes(graph, doomed);
  return matches.size();
}

}  // namespace tessera
