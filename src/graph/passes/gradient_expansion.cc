#include "graph/passes/gradient_expansion.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera {
namespace {

constexpr char kTrainingDomain[] = "ai.onnx.preview.training";
constexpr char kHelperDomain[] = "ai.tessera";

bool IsGradient(const Node& node) { return node.op_type == "Gradient" && node.domain == kTrainingDomain; }

// Ops whose outputs describe shapes, not values: nothing flows back through them.
bool CarriesNoGradient(const Node& node) {
  return node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size");
}

// Emits the backward nodes of one Gradient node into the graph (appended; the caller re-sorts).
class BackwardBuilder {
 public:
  BackwardBuilder(Graph& graph, const Node& gradient, std::set<std::string>& used_names)
      : graph_(graph), gradient_(gradient), used_names_(used_names) {}

  void Expand() {
    const std::vector<std::string> xs = gradient_.GetStrings("xs");
    const std::string y = gradient_.GetString("y");
    if (gradient_.outputs.size() > xs.size())
      Fail(ErrorCode::kInvalidModel, gradient_.Describe(), ": ", gradient_.outputs.size(), " outputs but only ",
           xs.size(), " names in xs");
    const std::vector<Node*> path = NodesBetween(xs);
    if (!Exists(y)) Fail(ErrorCode::kInvalidModel, gradient_.Describe(), ": y '", y, "' is not a value of the graph");
    contributions_[y].push_back(Filled(y, 1.0f));
    for (auto it = path.rbegin(); it != path.rend(); ++it) Backpropagate(**it);
    for (size_t i = 0; i < gradient_.outputs.size(); ++i) {
      const std::string& out = gradient_.outputs[i];
      if (out.empty()) continue;
      const std::vector<std::string>& parts = contributions_[xs[i]];
      if (parts.empty())
        Emit("Identity", {Filled(xs[i], 0.0f)}, {}, out);
      else
        Emit("Sum", parts, {}, out);
      ValueInfo& info = graph_.value_infos[out];  // replaces what inference guessed for the Gradient node
      info.name = out;
      info.kind = ValueInfo::Kind::kTensor;
      info.type = graph_.TypeOf(xs[i]);
    }
  }

 private:
  // The original non-Gradient nodes, in topological order, whose outputs depend on some x. A node
  // producing an x is left out: each x is a leaf of the differentiation.
  std::vector<Node*> NodesBetween(const std::vector<std::string>& xs) {
    active_.insert(xs.begin(), xs.end());
    std::vector<Node*> path;
    for (const auto& node : graph_.nodes) {
      if (IsGradient(*node) || CarriesNoGradient(*node)) continue;
      bool produces_x = false, reads_active = false;
      for (const std::string& out : node->outputs) produces_x = produces_x || (!out.empty() && active_.count(out));
      for (const std::string& in : node->inputs) reads_active = reads_active || (!in.empty() && active_.count(in));
      if (produces_x || !reads_active) continue;
      path.push_back(node.get());
      for (const std::string& out : node->outputs)
        if (!out.empty()) active_.insert(out);
    }
    return path;
  }

  bool Exists(const std::string& value) const {
    if (graph_.IsGraphInput(value) || graph_.IsInitializer(value) || active_.count(value)) return true;
    for (const auto& node : graph_.nodes)
      for (const std::string& out : node->outputs)
        if (out == value) return true;
    return false;
  }

  // Adds the gradients of `node`'s active inputs, given those of its outputs.
  void Backpropagate(const Node& node) {
    std::vector<std::string> output_grads;
    bool any = false;
    for (const std::string& out : node.outputs) {
      output_grads.push_back(out.empty() ? std::string() : Total(out));
      any = any || !output_grads.back().empty();
    }
    if (!any) return;  // y does not depend on this node
    const std::vector<std::string> input_grads = InputGradients(node, output_grads[0]);
    for (size_t i = 0; i < input_grads.size() && i < node.inputs.size(); ++i)
      if (!input_grads[i].empty() && active_.count(node.inputs[i]))
        contributions_[node.inputs[i]].push_back(input_grads[i]);
  }

  // The sum of every contribution to `value`'s gradient so far, or "" when there is none.
  std::string Total(const std::string& value) {
    std::vector<std::string>& parts = contributions_[value];
    if (parts.size() > 1) parts = {Emit("Sum", parts)};
    return parts.empty() ? std::string() : parts[0];
  }

  // The gradient of each input of `node` ("" where none flows) from `g`, the gradient of its output.
  std::vector<std::string> InputGradients(const Node& node, const std::string& g) {
    const std::string& op = node.op_type;
    if (!node.domain.empty() || g.empty()) Unsupported(node);
    const auto& in = node.inputs;
    const std::string& y = node.outputs[0];
    if (op == "Identity") return {g};
    if (op == "Neg") return {Emit("Neg", {g})};
    if (op == "Add") return {ToShapeOf(g, in[0]), ToShapeOf(g, in[1])};
    if (op == "Sub") return {ToShapeOf(g, in[0]), Lazy(in[1], [&] { return ToShapeOf(Emit("Neg", {g}), in[1]); })};
    if (op == "Sum") {
      std::vector<std::string> grads;
      for (const std::string& input : in) grads.push_back(Lazy(input, [&] { return ToShapeOf(g, input); }));
      return grads;
    }
    if (op == "Mul")
      return {Lazy(in[0], [&] { return ToShapeOf(Emit("Mul", {g, in[1]}), in[0]); }),
              Lazy(in[1], [&] { return ToShapeOf(Emit("Mul", {g, in[0]}), in[1]); })};
    if (op == "Div") {
      // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -(1/b) * (a/b).
      const std::string g_over_b = Emit("Div", {g, in[1]});
      return {ToShapeOf(g_over_b, in[0]),
              Lazy(in[1], [&] { return ToShapeOf(Emit("Neg", {Emit("Mul", {g_over_b, y})}), in[1]); })};
    }
    if (op == "Relu") return {Emit("Mul", {g, Emit("Sign", {y})})};
    if (op == "Sigmoid") return {Emit("Mul", {g, Emit("Sub", {y, Emit("Mul", {y, y})})})};  // s(1 - s)
    if (op == "Tanh") return {Emit("Sub", {g, Emit("Mul", {Emit("Mul", {g, y}), y})})};     // g(1 - t^2)
    if (op == "Exp") return {Emit("Mul", {g, y})};
    if (op == "Log") return {Emit("Div", {g, in[0]})};
    if (op == "Sqrt") return {Emit("Div", {g, Emit("Add", {y, y})})};
    if (op == "MatMul") return MatMulGradients(node, g);
    Unsupported(node);
  }

  // Y = A B with A [m, k] and B [k, n]: dA = G B^T, dB = A^T G.
  std::vector<std::string> MatMulGradients(const Node& node, const std::string& g) {
    for (const std::string& input : node.inputs) {
      const ValueInfo* info = graph_.FindValueInfo(input);
      if (info && info->shape && info->shape->size() != 2)
        Fail(ErrorCode::kNotImplemented, gradient_.Describe(), ": differentiating ", node.Describe(),
             " is implemented for 2-D operands only; '", input, "' has rank ", info->shape->size());
    }
    const auto& in = node.inputs;
    return {Lazy(in[0], [&] { return Emit("MatMul", {g, Transposed(in[1])}); }),
            Lazy(in[1], [&] { return Emit("MatMul", {Transposed(in[0]), g}); })};
  }

  std::string Transposed(const std::string& value) {
    Attribute perm;
    perm.name = "perm";
    perm.type = Attribute::Type::kInts;
    perm.ints = {1, 0};
    return Emit("Transpose", {value}, {perm});
  }

  // Builds a gradient only for an input that depends on xs (the others need none).
  template <typename Build>
  std::string Lazy(const std::string& input, Build build) {
    return active_.count(input) ? build() : std::string();
  }

  // `grad` summed over the axes along which `like` was broadcast, reshaped to `like`'s shape.
  std::string ToShapeOf(const std::string& grad, const std::string& like) {
    if (!active_.count(like)) return {};
    return Emit("ReduceToShapeOf", {grad, like}, {}, {}, kHelperDomain);
  }

  // A tensor shaped like `like`, every element `value`, of like's element type.
  std::string Filled(const std::string& like, float value) {
    Attribute fill;
    fill.name = "value";
    fill.type = Attribute::Type::kTensor;
    fill.t = Tensor::FromVector<float>(Shape{1}, {value});
    std::string filled = Emit("ConstantOfShape", {Emit("Shape", {like})}, {fill});
    const DataType type = graph_.TypeOf(like);
    if (type == DataType::kFloat || type == DataType::kUndefined) return filled;
    Attribute to;
    to.name = "to";
    to.type = Attribute::Type::kInt;
    to.i = static_cast<int64_t>(type);
    return Emit("Cast", {filled}, {to});
  }

  // Appends a node and returns its (single) output, named `output` or a fresh name.
  std::string Emit(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<Attribute>& attributes = {}, const std::string& output = {},
                   const std::string& domain = {}) {
    auto node = std::make_unique<Node>();
    node->op_type = op;
    node->domain = domain;
    node->opset = domain.empty() ? graph_.opsets[""] : 1;
    if (!domain.empty()) graph_.opsets.emplace(domain, 1);
    node->name = Fresh(gradient_.name + "/" + op);
    node->inputs = inputs;
    node->outputs = {output.empty() ? Fresh(gradient_.name + "/" + op + "_out") : output};
    for (const Attribute& a : attributes) node->attributes[a.name] = a;
    graph_.nodes.push_back(std::move(node));
    return graph_.nodes.back()->outputs[0];
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int suffix = 1; used_names_.count(name); ++suffix) name = base + "_" + std::to_string(suffix);
    used_names_.insert(name);
    return name;
  }

  [[noreturn]] void Unsupported(const Node& node) const {
    Fail(ErrorCode::kNotImplemented, gradient_.Describe(), ": cannot differentiate through ", node.Describe(),
         node.domain.empty() ? "" : " (domain " + node.domain + ")",
         "; supported ops: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Sum, MatMul");
  }

  Graph& graph_;
  const Node& gradient_;
  std::set<std::string>& used_names_;
  std::set<std::string> active_;  // values that depend on some x
  std::map<std::string, std::vector<std::string>> contributions_;  // value -> gradient terms to sum
};

std::set<std::string> UsedNames(const Graph& graph) {
  std::set<std::string> used;
  for (const auto& node : graph.nodes) {
    used.insert(node->name);
    used.insert(node->outputs.begin(), node->outputs.end());
  }
  for (const auto& [name, tensor] : graph.initializers) used.insert(name);
  for (const auto& [name, info] : graph.value_infos) used.insert(name);
  for (const ValueInfo& input : graph.inputs) used.insert(input.name);
  return used;
}

}  // namespace

size_t ExpandGradients(Graph& graph) {
  size_t expanded = 0;
  std::set<std::string> used_names;
  // One at a time, re-sorting in between, so that a Gradient may differentiate another's expansion.
  for (;;) {
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), [](const auto& n) { return IsGradient(*n); });
    if (it == graph.nodes.end()) break;
    if (used_names.empty()) used_names = UsedNames(graph);
    std::unique_ptr<Node> gradient = std::move(*it);
    graph.nodes.erase(it);
    BackwardBuilder(graph, *gradient, used_names).Expand();
    graph.TopologicalSort();
    ++expanded;
  }
  return expanded;
}

}  // namespace tessera
