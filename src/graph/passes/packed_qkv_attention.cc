#include "graph/passes/packed_qkv_attention.h"

#include <array>
#include <optional>

namespace tessera {

namespace {

// The int64 values of a constant with at most `max` elements, or nullopt.
std::optional<std::vector<int64_t>> Int64Constant(const Graph& graph, const std::string& value, int64_t max) {
  const Tensor* t = ConstantTensor(graph, value);
  if (t == nullptr || t->type() != DataType::kInt64 || t->NumElements() > max) return std::nullopt;
  return std::vector<int64_t>(t->Data<int64_t>(), t->Data<int64_t>() + t->NumElements());
}

// One entry of a Reshape target: a constant, or dim `dim` of one of `sources` (Unsqueeze(Gather(Shape(t), dim))).
struct TargetEntry {
  std::optional<int64_t> constant;
  int64_t dim = -1;
};

class Matcher {
 public:
  Matcher(const Graph& graph, const GraphIndex& index) : graph_(graph), index_(index) {}

  struct Match {
    Node* split = nullptr;
    std::array<Node*, 3> reshapes{};
    std::vector<Node*> shapes;  // Shape nodes of the Split's outputs, to read the packed projection instead
    int64_t heads = 0, head_size = 0;
  };

  std::optional<Match> Find(const Node& attention) const {
    if (attention.op_type != "Attention" || attention.domain != "ai.tessera" || attention.inputs.size() < 3 ||
        attention.inputs.size() > 4 || attention.GetInt("qkv_packed", 0) != 0)
      return std::nullopt;
    const std::vector<int64_t> q_axes = attention.GetInts("q_axes", {0, 1, 2, 3});
    if (attention.GetInts("k_axes", {0, 1, 3, 2}) != q_axes || attention.GetInts("v_axes", {0, 1, 2, 3}) != q_axes ||
        q_axes.size() != 4 || q_axes[1] != 2 || q_axes[3] != 3)
      return std::nullopt;
    Match m;
    for (size_t i = 0; i < 3; ++i) {
      if (attention.inputs[i].empty()) return std::nullopt;
      Node* reshape = index_.Producer(attention.inputs[i]);
      if (reshape == nullptr || reshape->op_type != "Reshape" || !reshape->domain.empty() ||
          reshape->inputs.size() != 2 || reshape->GetInt("allowzero", 0) != 0 ||
          !index_.OnlyReadBy(attention.inputs[i], attention))
        return std::nullopt;
      Node* split = index_.Producer(reshape->inputs[0]);
      if (split == nullptr || (m.split != nullptr && split != m.split)) return std::nullopt;
      m.split = split;
      m.reshapes[i] = reshape;
    }
    const std::optional<int64_t> width = EqualThirds(*m.split);
    if (!width) return std::nullopt;
    for (size_t i = 0; i < 3; ++i) {
      if (m.split->outputs[i] != m.reshapes[i]->inputs[0]) return std::nullopt;
      const std::optional<std::array<TargetEntry, 4>> target = Target(m.reshapes[i]->inputs[1], *m.split);
      if (!target) return std::nullopt;
      const auto& t = *target;
      for (int64_t j : {0, 1})
        if (!(t[j].constant == 0 || (!t[j].constant && t[j].dim == j))) return std::nullopt;
      if (!t[2].constant || !t[3].constant || *t[2].constant <= 0 || *t[3].constant <= 0 ||
          *t[2].constant * *t[3].constant != *width)
        return std::nullopt;
      if (i > 0 && (*t[2].constant != m.heads || *t[3].constant != m.head_size)) return std::nullopt;
      m.heads = *t[2].constant;
      m.head_size = *t[3].constant;
      if (!OtherReadersAreSizeQueries(m.split->outputs[i], *m.reshapes[i], m.shapes)) return std::nullopt;
    }
    return m;
  }

 private:
  // N when `split` cuts its input into three equal constant parts along axis -1.
  std::optional<int64_t> EqualThirds(const Node& split) const {
    if (split.op_type != "Split" || !split.domain.empty() || split.outputs.size() != 3 ||
        split.GetInt("axis", 0) != -1)
      return std::nullopt;
    std::optional<std::vector<int64_t>> sizes;
    if (split.inputs.size() > 1 && !split.inputs[1].empty()) sizes = Int64Constant(graph_, split.inputs[1], 3);
    else if (split.HasAttribute("split")) sizes = split.GetInts("split");
    if (!sizes || sizes->size() != 3 || (*sizes)[0] <= 0 || (*sizes)[1] != (*sizes)[0] || (*sizes)[2] != (*sizes)[0])
      return std::nullopt;
    return (*sizes)[0];
  }

  // The four entries of a Reshape target: an initializer, or a Concat along axis 0 of one-element constants and
  // Unsqueeze(Gather(Shape(t), j)) with t the Split's input or one of its outputs.
  std::optional<std::array<TargetEntry, 4>> Target(const std::string& value, const Node& split) const {
    std::array<TargetEntry, 4> entries;
    if (const std::optional<std::vector<int64_t>> constant = Int64Constant(graph_, value, 4)) {
      if (constant->size() != 4) return std::nullopt;
      for (size_t j = 0; j < 4; ++j) entries[j].constant = (*constant)[j];
      return entries;
    }
    const Node* concat = index_.Producer(value);
    if (concat == nullptr || concat->op_type != "Concat" || !concat->domain.empty() || concat->inputs.size() != 4 ||
        concat->GetInt("axis", -1) != 0)
      return std::nullopt;
    for (size_t j = 0; j < 4; ++j) {
      const std::string& part = concat->inputs[j];
      if (const std::optional<std::vector<int64_t>> constant = Int64Constant(graph_, part, 1)) {
        if (constant->size() != 1) return std::nullopt;
        entries[j].constant = (*constant)[0];
        continue;
      }
      const std::optional<int64_t> dim = DimOf(part, split);
      if (!dim) return std::nullopt;
      entries[j].dim = *dim;
    }
    return entries;
  }

  // j when `value` is Unsqueeze(Gather(Shape(t), j), axes [0]) with j >= 0 and t the Split's input or output.
  std::optional<int64_t> DimOf(const std::string& value, const Node& split) const {
    const Node* unsqueeze = index_.Producer(value);
    if (unsqueeze == nullptr || unsqueeze->op_type != "Unsqueeze" || !unsqueeze->domain.empty()) return std::nullopt;
    const std::vector<int64_t> axes = unsqueeze->inputs.size() > 1
                                          ? Int64Constant(graph_, unsqueeze->inputs[1], 1).value_or(std::vector<int64_t>{})
                                          : unsqueeze->GetInts("axes");
    if (axes != std::vector<int64_t>{0}) return std::nullopt;
    const Node* gather = index_.Producer(unsqueeze->inputs[0]);
    if (gather == nullptr || gather->op_type != "Gather" || !gather->domain.empty() || gather->GetInt("axis", 0) != 0)
      return std::nullopt;
    const Tensor* index = ConstantTensor(graph_, gather->inputs[1]);
    if (index == nullptr || index->type() != DataType::kInt64 || index->shape().rank() != 0) return std::nullopt;
    const int64_t j = index->Data<int64_t>()[0];
    const Node* shape = index_.Producer(gather->inputs[0]);
    if (j < 0 || shape == nullptr || !IsWholeShape(*shape)) return std::nullopt;
    const std::string& source = shape->inputs[0];
    bool ours = source == split.inputs[0];
    for (const std::string& out : split.outputs) ours = ours || source == out;
    return ours ? std::optional<int64_t>(j) : std::nullopt;
  }

  static bool IsWholeShape(const Node& node) {
    return node.op_type == "Shape" && node.domain.empty() && !node.HasAttribute("start") && !node.HasAttribute("end");
  }

  // Whether every reader of `value` other than `reshape` is a Shape node whose result only Gathers read, at dim 0
  // or 1 (collected into `shapes`).
  bool OtherReadersAreSizeQueries(const std::string& value, const Node& reshape, std::vector<Node*>& shapes) const {
    if (graph_.IsGraphOutput(value) || index_.ReadBySubgraph(value)) return false;
    for (Node* reader : index_.Consumers(value)) {
      if (reader == &reshape) continue;
      if (!IsWholeShape(*reader) || graph_.IsGraphOutput(reader->outputs[0]) ||
          index_.ReadBySubgraph(reader->outputs[0]))
        return false;
      for (const Node* gather : index_.Consumers(reader->outputs[0])) {
        if (gather->op_type != "Gather" || !gather->domain.empty() || gather->inputs[0] != reader->outputs[0] ||
            gather->GetInt("axis", 0) != 0)
          return false;
        const Tensor* index = ConstantTensor(graph_, gather->inputs[1]);
        if (index == nullptr || index->type() != DataType::kInt64 || index->NumElements() != 1) return false;
        const int64_t j = index->Data<int64_t>()[0];
        if (j != 0 && j != 1) return false;
      }
      shapes.push_back(reader);
    }
    return true;
  }

  const Graph& graph_;
  const GraphIndex& index_;
};

}  // namespace

size_t PackAttentionProjections(Graph& graph, const CanFuse& can_fuse) {
  const int default_opset = graph.opsets.count("") ? graph.opsets.at("") : 0;
  if (default_opset < 5) return 0;  // Reshape takes its target as an input from opset 5
  GraphIndex index(graph);
  Matcher matcher(graph, index);
  struct Rewrite {
    Node* attention;
    Matcher::Match match;
  };
  std::vector<Rewrite> rewrites;
  std::set<const Node*> claimed;
  for (const auto& node : graph.nodes) {
    std::optional<Matcher::Match> m = matcher.Find(*node);
    if (!m || claimed.count(m->split) != 0 || !can_fuse(*node, graph, "Reshape", "")) continue;
    claimed.insert(m->split);
    rewrites.push_back({node.get(), std::move(*m)});
  }
  if (rewrites.empty()) return 0;
  NewValues fresh(graph);
  std::set<const Node*> doomed;
  std::vector<std::pair<const Node*, Node>> reshapes;  // (attention, the packed Reshape to insert before it)
  for (Rewrite& r : rewrites) {
    const Matcher::Match& m = r.match;
    const std::string packed = m.split->inputs[0];
    for (Node* shape : m.shapes) shape->inputs[0] = packed;
    Node reshape;
    reshape.name = r.attention->name + "_packed_qkv";
    reshape.op_type = "Reshape";
    reshape.opset = default_opset;
    reshape.inputs = {packed, fresh.Int64s(reshape.name + "_shape", {0, 0, 3 * m.heads, m.head_size})};
    reshape.outputs = {fresh.Fresh(packed + "_heads")};
    r.attention->inputs[0] = reshape.outputs[0];
    r.attention->inputs[1].clear();
    r.attention->inputs[2].clear();
    r.attention->attributes["qkv_packed"] = IntAttribute("qkv_packed", 1);
    doomed.insert(m.split);
    for (const Node* n : m.reshapes) {
      doomed.insert(n);
      graph.value_infos.erase(n->outputs[0]);
    }
    for (const std::string& out : m.split->outputs) graph.value_infos.erase(out);
    reshapes.push_back({r.attention, std::move(reshape)});
  }
  for (auto& [before, reshape] : reshapes)
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      if (graph.nodes[i].get() == before) {
        graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i),
                           std::make_unique<Node>(std::move(reshape)));
        break;
      }
  RemoveNodes(graph, doomed);
  return rewrites.size();
}

}  // namespace tessera
