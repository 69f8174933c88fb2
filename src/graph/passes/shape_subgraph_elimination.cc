#include "graph/passes/shape_subgraph_elimination.h"

#include <algorithm>

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

bool Is(const Node& node, const char* op_type) { return node.op_type == op_type && node.domain == ""; }

// x's dims as known statically (-1 where not concrete), or nullopt when the rank is unknown.
std::optional<std::vector<int64_t>> KnownDims(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || info->kind != ValueInfo::Kind::kTensor || !info->shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& dim : *info->shape) dims.push_back(dim.is_concrete() ? dim.value : -1);
  return dims;
}

// The dims Shape(x) produces (its start/end slice applied), or nullopt.
std::optional<std::vector<int64_t>> ShapeOutput(const Graph& graph, const Node& shape) {
  std::optional<std::vector<int64_t>> dims = KnownDims(graph, shape.inputs[0]);
  if (!dims) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(dims->size());
  auto clamp = [rank](int64_t axis) { return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank); };
  const int64_t start = clamp(shape.GetInt("start", 0));
  const int64_t end = clamp(shape.GetInt("end", rank));
  return std::vector<int64_t>(dims->begin() + start, dims->begin() + std::max(start, end));
}

bool AllConcrete(const std::vector<int64_t>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

// Gather(shape, indices) on axis 0 with constant indices selecting only concrete dims, or nullopt.
std::optional<Tensor> GatheredDims(const Graph& graph, const Node& gather, const std::vector<int64_t>& dims) {
  if (gather.GetInt("axis", 0) != 0 || gather.NumInputs() != 2) return std::nullopt;
  const Tensor* indices = ConstantTensor(graph, gather.inputs[1]);
  if (indices == nullptr || (indices->type() != DataType::kInt64 && indices->type() != DataType::kInt32))
    return std::nullopt;
  Tensor picked = Tensor::Allocate(DataType::kInt64, indices->shape());
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < indices->NumElements(); ++i) {
    int64_t index = indices->type() == DataType::kInt64 ? indices->Data<int64_t>()[i] : indices->Data<int32_t>()[i];
    if (index < 0) index += rank;
    if (index < 0 || index >= rank || dims[index] < 0) return std::nullopt;
    picked.Data<int64_t>()[i] = dims[index];
  }
  return picked;
}

// Whether Concat part `value`, at `position` of a Reshape target, is Unsqueeze(Gather(Shape(data), position)): the
// Reshape's own input's dim at that position, which a 0 entry copies (allowzero = 0).
bool CopiesDataDim(const Graph& graph, const GraphIndex& index, const std::string& value, const std::string& data,
                   int64_t position) {
  const Node* unsqueeze = index.Producer(value);
  if (!IsStandardOp(unsqueeze, "Unsqueeze") || unsqueeze->inputs.empty()) return false;
  std::vector<int64_t> axes;
  if (unsqueeze->inputs.size() >= 2) {
    const Tensor* t = ConstantTensor(graph, unsqueeze->inputs[1]);
    if (t == nullptr || t->type() != DataType::kInt64) return false;
    axes.assign(t->Data<int64_t>(), t->Data<int64_t>() + t->NumElements());
  } else {
    axes = unsqueeze->GetInts("axes", {});
  }
  if (axes != std::vector<int64_t>{0} && axes != std::vector<int64_t>{-1}) return false;  // a scalar made 1-D
  const Node* gather = index.Producer(unsqueeze->inputs[0]);
  if (!IsStandardOp(gather, "Gather") || gather->NumInputs() != 2 || gather->GetInt("axis", 0) != 0) return false;
  const Tensor* at = ConstantTensor(graph, gather->inputs[1]);
  if (at == nullptr || at->shape().rank() != 0) return false;
  const int64_t picked = at->type() == DataType::kInt64   ? at->Data<int64_t>()[0]
                         : at->type() == DataType::kInt32 ? at->Data<int32_t>()[0]
                                                          : -1;
  const Node* shape = index.Producer(gather->inputs[0]);
  return picked == position && IsStandardOp(shape, "Shape") && !shape->inputs.empty() && shape->inputs[0] == data &&
         shape->GetInt("start", 0) == 0 && !shape->HasAttribute("end");
}

// Reshape(x, Concat(..., Unsqueeze(Gather(Shape(x), i)), ...)) with the gathered dim at position i of the target and
// every other part constant: the target becomes a constant with 0 at those positions (Reshape copies x's dim there),
// so the Shape / Gather / Unsqueeze / Concat chain goes whatever x's dims are -- the head-splitting and -merging
// Reshapes of transformer exports over symbolic batch and sequence dims. Returns how many targets it replaced.
size_t ConstantReshapeTargets(Graph& graph) {
  GraphIndex index(graph);
  NewValues values(graph);
  size_t replaced = 0;
  for (const auto& node : graph.nodes) {
    Node& reshape = *node;
    if (!IsStandardOp(&reshape, "Reshape") || reshape.inputs.size() != 2 || reshape.GetInt("allowzero", 0) != 0 ||
        ConstantTensor(graph, reshape.inputs[1]) != nullptr)
      continue;
    const Node* concat = index.Producer(reshape.inputs[1]);
    if (!IsStandardOp(concat, "Concat") || (concat->GetInt("axis", 0) != 0 && concat->GetInt("axis", 0) != -1))
      continue;
    std::vector<int64_t> target;
    bool copies = false, ok = true;
    for (const std::string& part : concat->inputs) {
      const int64_t position = static_cast<int64_t>(target.size());
      if (const Tensor* t = ConstantTensor(graph, part)) {
        ok = t->type() == DataType::kInt64 && t->shape().rank() == 1;
        if (!ok) break;
        target.insert(target.end(), t->Data<int64_t>(), t->Data<int64_t>() + t->NumElements());
      } else if (CopiesDataDim(graph, index, part, reshape.inputs[0], position)) {
        target.push_back(0);
        copies = true;
      } else {
        ok = false;
        break;
      }
    }
    if (!ok || !copies) continue;
    reshape.inputs[1] = values.Int64s(reshape.inputs[1] + "_copying", target);
    ++replaced;
  }
  return replaced;
}

void MakeConstant(Graph& graph, const std::string& value, Tensor tensor) {
  graph.value_infos[value] = ValueInfo{value, ValueInfo::Kind::kTensor, DataType::kInt64, std::nullopt};
  graph.initializers[value] = std::move(tensor);
}

}  // namespace

size_t EliminateShapeSubgraphs(Graph& graph) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  for (const auto& node : graph.nodes) {
    if (!Is(*node, "Shape") || node->outputs.size() != 1 || node->outputs[0].empty() ||
        graph.IsGraphOutput(node->outputs[0]))
      continue;
    const std::optional<std::vector<int64_t>> dims = ShapeOutput(graph, *node);
    if (!dims) continue;
    const std::string& shape_value = node->outputs[0];
    if (AllConcrete(*dims)) {
      MakeConstant(graph, shape_value, Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(dims->size())}, *dims));
      doomed.insert(node.get());
      continue;
    }
    // Partially static: Gathers of concrete dims become constants; the Shape stays for the other readers.
    for (Node* reader : index.Consumers(shape_value)) {
      if (!Is(*reader, "Gather") || reader->inputs[0] != shape_value || doomed.count(reader) ||
          graph.IsGraphOutput(reader->outputs[0]))
        continue;
      if (std::optional<Tensor> picked = GatheredDims(graph, *reader, *dims)) {
        MakeConstant(graph, reader->outputs[0], std::move(*picked));
        doomed.insert(reader);
      }
    }
  }
  RemoveNodes(graph, doomed);
  return doomed.size() + ConstantReshapeTargets(graph);
}

}  // namespace tessera
