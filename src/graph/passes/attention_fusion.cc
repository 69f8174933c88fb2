#include "graph/passes/attention_fusion.h"

#include <cmath>

namespace tessera {
namespace {

// Head sizes above this are left unfused (the CUDA kernel's 16 query rows of that size fill its shared memory).
constexpr int64_t kMaxHeadSize = 512;

bool Is(const Node* node, const char* op_type, size_t inputs) {
  return node != nullptr && node->op_type == op_type && node->domain.empty() && node->inputs.size() == inputs &&
         node->outputs.size() == 1;
}

// The known dims of `value` when its rank is 4, else empty.
std::vector<Dim> Rank4Dims(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape || info->shape->size() != 4) return {};
  return *info->shape;
}

// Whether `value` is known to have rank 4: its shape says so, or a Transpose with a 4-axis perm writes it.
bool KnownRankFour(const Graph& graph, const GraphIndex& index, const std::string& value) {
  if (!Rank4Dims(graph, value).empty()) return true;
  const Node* producer = index.Producer(value);
  return Is(producer, "Transpose", 1) && producer->GetInts("perm").size() == 4;
}

struct AttentionMatch {
  std::vector<Node*> nodes;  // every matched node
  Node* qk = nullptr;        // MatMul(q', k')
  Node* last = nullptr;      // the output MatMul, or the output Transpose: rewritten into the fused node
  std::string q, k, v, mask;
  std::vector<int64_t> q_axes{0, 1, 2, 3}, k_axes{0, 1, 3, 2}, v_axes{0, 1, 2, 3}, out_axes{0, 1, 2, 3};
  double scale = 1.0;
  bool masked_rows_zero = false;
};

class Matcher {
 public:
  Matcher(const Graph& graph, const GraphIndex& index) : graph_(graph), index_(index) {}

  std::optional<AttentionMatch> Match(Node& softmax) {
    if (!Is(&softmax, "Softmax", 1)) return std::nullopt;
    const int64_t axis = softmax.GetInt("axis", softmax.opset >= 13 ? -1 : 1);
    if (axis != -1 && axis != 3) return std::nullopt;
    AttentionMatch m;
    m.nodes.push_back(&softmax);
    if (!MatchScores(softmax.inputs[0], softmax, m)) return std::nullopt;
    std::string probabilities = softmax.outputs[0];
    Node* reader = AfterSoftmax(softmax, m);
    if (reader == nullptr) return std::nullopt;
    if (m.masked_rows_zero) probabilities = m.nodes.back()->outputs[0];
    // o = MatMul(p, v'), p its first operand.
    if (!Is(reader, "MatMul", 2) || reader->inputs[0] != probabilities || reader->inputs[1] == probabilities)
      return std::nullopt;
    m.nodes.push_back(reader);
    m.last = reader;
    m.v = reader->inputs[1];
    if (Node* t = AbsorbableTranspose(m.v, *reader)) {
      m.v_axes = t->GetInts("perm");
      m.v = t->inputs[0];
      m.nodes.push_back(t);
    } else if (!KnownRankFour(graph_, index_, m.v)) {
      return std::nullopt;
    }
    if (Node* t = index_.SoleReader(reader->outputs[0]); Is(t, "Transpose", 1) && PermOf(*t)) {
      const std::vector<int64_t> perm = t->GetInts("perm");
      for (int64_t position = 0; position < 4; ++position) m.out_axes[perm[position]] = position;
      m.nodes.push_back(t);
      m.last = t;
    }
    if (!TypesAgree(m) || !HeadSizesFit(m)) return std::nullopt;
    return m;
  }

 private:
  // A Transpose with a 4-axis perm.
  static bool PermOf(const Node& transpose) { return transpose.GetInts("perm").size() == 4; }

  // The Transpose producing `value` when only `reader` reads its output.
  Node* AbsorbableTranspose(const std::string& value, const Node& reader) const {
    Node* t = index_.Producer(value);
    if (!Is(t, "Transpose", 1) || !PermOf(*t) || !index_.OnlyReadBy(value, reader)) return nullptr;
    return t;
  }

  // A Mul or Div of `value`'s producer by a scalar constant, read only by `reader`: multiplies `scale` and
  // returns the other operand; else returns `value` unchanged.
  std::string AbsorbScalar(const std::string& value, const Node& reader, double& scale, AttentionMatch& m,
                           bool allow_div) const {
    Node* node = index_.Producer(value);
    if (node == nullptr || !index_.OnlyReadBy(value, reader)) return value;
    const bool mul = Is(node, "Mul", 2), div = allow_div && Is(node, "Div", 2);
    if (!mul && !div) return value;
    for (size_t c = 0; c < 2; ++c) {
      if (div && c == 0) continue;  // c / x is not a scaling
      const std::optional<double> factor = ScalarConstant(graph_, node->inputs[c]);
      if (!factor || !std::isfinite(*factor) || *factor == 0 || node->inputs[c] == node->inputs[1 - c]) continue;
      scale *= div ? 1.0 / *factor : *factor;
      m.nodes.push_back(node);
      return node->inputs[1 - c];
    }
    return value;
  }

  // scores [+ mask] feeding the Softmax.
  bool MatchScores(const std::string& input, const Node& softmax, AttentionMatch& m) {
    Node* add = index_.Producer(input);
    if (Is(add, "Add", 2) && index_.OnlyReadBy(input, softmax)) {
      for (size_t k = 0; k < 2; ++k) {
        AttentionMatch attempt = m;
        attempt.nodes.push_back(add);
        if (MatchProduct(add->inputs[k], *add, attempt)) {
          SetMask(add->inputs[1 - k], *add, attempt);
          m = std::move(attempt);
          return true;
        }
      }
    }
    return MatchProduct(input, softmax, m);
  }

  // [Div/Mul by a scalar] MatMul(q', k').
  bool MatchProduct(const std::string& value, const Node& reader, AttentionMatch& m) {
    const std::string product = AbsorbScalar(value, reader, m.scale, m, /*allow_div=*/true);
    const Node& product_reader = product == value ? reader : *m.nodes.back();
    Node* matmul = index_.Producer(product);
    if (!Is(matmul, "MatMul", 2) || !index_.OnlyReadBy(product, product_reader) ||
        matmul->inputs[0] == matmul->inputs[1])
      return false;
    m.nodes.push_back(matmul);
    m.qk = matmul;
    bool rank_four = true;
    m.q = Operand(matmul->inputs[0], *matmul, m, m.q_axes, false, rank_four);
    m.k = Operand(matmul->inputs[1], *matmul, m, m.k_axes, true, rank_four);
    return rank_four;
  }

  // An operand of QK^T: [Mul by a scalar] [Transpose]. For K the MatMul reads [b, h, d, s], so the axes of its
  // source hold (b, h, s, d) at (perm[0], perm[1], perm[3], perm[2]). Clears `rank_four` unless the operand is
  // known to have rank 4 (an absorbed Transpose's perm, or the value's shape).
  std::string Operand(const std::string& value, const Node& matmul, AttentionMatch& m, std::vector<int64_t>& axes,
                      bool key, bool& rank_four) {
    std::string source = AbsorbScalar(value, matmul, m.scale, m, /*allow_div=*/false);
    const Node& reader = source == value ? matmul : *m.nodes.back();
    if (Node* t = AbsorbableTranspose(source, reader)) {
      const std::vector<int64_t> perm = t->GetInts("perm");
      axes = key ? std::vector<int64_t>{perm[0], perm[1], perm[3], perm[2]} : perm;
      m.nodes.push_back(t);
      return t->inputs[0];
    }
    if (!KnownRankFour(graph_, index_, source)) rank_four = false;
    return source;
  }

  // The mask operand of the Add; Where(cond, 0, -inf) read only by the Add is absorbed as the Boolean cond.
  void SetMask(const std::string& value, const Node& add, AttentionMatch& m) {
    m.mask = value;
    Node* where = index_.Producer(value);
    if (!Is(where, "Where", 3) || !index_.OnlyReadBy(value, add) || graph_.TypeOf(where->inputs[0]) != DataType::kBool)
      return;
    const std::optional<double> zero = ScalarConstant(graph_, where->inputs[1]);
    const std::optional<double> minus_inf = ScalarConstant(graph_, where->inputs[2]);
    if (!zero || *zero != 0 || !minus_inf || !std::isinf(*minus_inf) || *minus_inf > 0) return;
    m.mask = where->inputs[0];
    m.nodes.push_back(where);
  }

  // The reader of the probabilities: the MatMul, or Where(IsNaN(p), 0, p) (absorbed) and then its reader.
  Node* AfterSoftmax(const Node& softmax, AttentionMatch& m) {
    const std::string& p = softmax.outputs[0];
    if (Node* only = index_.SoleReader(p)) return only;
    const std::vector<Node*>& readers = index_.Consumers(p);
    if (readers.size() != 2) return nullptr;
    Node* isnan = Is(readers[0], "IsNaN", 1) ? readers[0] : readers[1];
    Node* where = isnan == readers[0] ? readers[1] : readers[0];
    if (!Is(isnan, "IsNaN", 1) || !Is(where, "Where", 3) || where->inputs[0] != isnan->outputs[0] ||
        where->inputs[2] != p || !index_.OnlyReadBy(isnan->outputs[0], *where) ||
        ScalarConstant(graph_, where->inputs[1]) != 0.0)
      return nullptr;
    m.nodes.push_back(isnan);
    m.nodes.push_back(where);
    m.masked_rows_zero = true;
    return index_.SoleReader(where->outputs[0]);
  }

  bool TypesAgree(const AttentionMatch& m) const {
    const DataType type = graph_.TypeOf(m.q);
    if (type != DataType::kFloat && type != DataType::kFloat16) return false;
    if (graph_.TypeOf(m.k) != type || graph_.TypeOf(m.v) != type) return false;
    return m.mask.empty() || graph_.TypeOf(m.mask) == type || graph_.TypeOf(m.mask) == DataType::kBool;
  }

  // Head sizes, where the shapes of Q and V are known: at most kMaxHeadSize.
  bool HeadSizesFit(const AttentionMatch& m) const {
    for (const auto& [source, axes] : {std::pair{m.q, m.q_axes}, std::pair{m.v, m.v_axes}}) {
      const std::vector<Dim> dims = Rank4Dims(graph_, source);
      if (!dims.empty() && dims[axes[3]].is_concrete() && dims[axes[3]].value > kMaxHeadSize) return false;
    }
    return true;
  }

  const Graph& graph_;
  const GraphIndex& index_;
};

Node MakeFusedNode(const AttentionMatch& m, const Node& softmax) {
  Node fused;
  fused.name = softmax.name + "_attention";
  fused.op_type = "Attention";
  fused.domain = "ai.tessera";
  fused.opset = 1;
  fused.inputs = {m.q, m.k, m.v};
  if (!m.mask.empty()) fused.inputs.push_back(m.mask);
  fused.outputs = {m.last->outputs[0]};
  fused.attributes["q_axes"] = IntsAttribute("q_axes", m.q_axes);
  fused.attributes["k_axes"] = IntsAttribute("k_axes", m.k_axes);
  fused.attributes["v_axes"] = IntsAttribute("v_axes", m.v_axes);
  fused.attributes["out_axes"] = IntsAttribute("out_axes", m.out_axes);
  fused.attributes["scale"] = FloatAttribute("scale", static_cast<float>(m.scale));
  fused.attributes["masked_rows_zero"] = IntAttribute("masked_rows_zero", m.masked_rows_zero ? 1 : 0);
  return fused;
}

}  // namespace

size_t FuseAttention(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  Matcher matcher(graph, index);
  std::set<const Node*> doomed, claimed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    std::optional<AttentionMatch> match = matcher.Match(*node);
    if (!match) continue;
    bool free = true, runs = true;
    for (const Node* n : match->nodes) {
      free = free && claimed.count(n) == 0;
      runs = runs && can_fuse(*n, graph, "Attention", "ai.tessera", 0);
    }
    if (!free || !runs) continue;
    Node* last = match->last;
    for (const Node* n : match->nodes) {
      claimed.insert(n);
      if (n == last) continue;
      doomed.insert(n);
      for (const std::string& out : n->outputs) graph.value_infos.erase(out);
    }
    *last = MakeFusedNode(*match, *node);
    ++fused;
  }
  if (fused > 0) graph.opsets.emplace("ai.tessera", 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
