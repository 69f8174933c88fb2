// Helpers shared by the pattern-rewriting passes: who produces and who reads each value, constant
// lookups, and the edits a fusion makes (fresh names, rewiring readers, removing matched nodes).
//
// A pass typically builds one GraphIndex, collects matches (never letting two matches claim the same
// node), rewrites the last node of each match in place -- it keeps its position, so topological order
// holds as long as the fused node only reads values produced before the match's first node -- and then
// removes the matched nodes with RemoveNodes.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ep/graph.h"

namespace tessera {

// Whether the EP that would run `anchor` has a kernel for op_type in domain that takes a node of `num_inputs`
// inputs (0: any; KernelDef::max_inputs) and prefers the fusion (OptimizerContext::can_fuse).
using CanFuse = std::function<bool(const Node& anchor, const Graph& graph, const std::string& op_type,
                                   const std::string& domain, size_t num_inputs)>;
// Whether the EP that would run `anchor` has a kernel for exactly `replacement` (its op, opset, input types and
// extension attributes, kernel.h) and prefers the fusion (OptimizerContext::can_run); unset: no.
using CanRun = std::function<bool(const Node& anchor, const Graph& graph, const Node& replacement)>;

class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);
  // The node writing `value`, or nullptr for graph inputs, initializers and outer-scope values.
  Node* Producer(const std::string& value) const;
  // Nodes reading `value` (a node reading it twice appears twice); nodes whose subgraphs read it as an
  // outer-scope value count as readers.
  const std::vector<Node*>& Consumers(const std::string& value) const;
  // Whether `value` is an intermediate that only `reader` uses: not a graph output, read by nobody else.
  bool OnlyReadBy(const std::string& value, const Node& reader) const;
  // The node that alone reads intermediate `value` (see OnlyReadBy), or nullptr.
  Node* SoleReader(const std::string& value) const;
  // Whether `value` feeds a subgraph as an outer-scope value (renaming it would break the subgraph).
  bool ReadBySubgraph(const std::string& value) const { return subgraph_reads_.count(value) != 0; }

 private:
  const Graph& graph_;
  std::map<std::string, Node*> producer_;
  std::map<std::string, std::vector<Node*>> consumers_;
  std::set<std::string> subgraph_reads_;
};

// The constant tensor named `value` (an initializer), or nullptr.
const Tensor* ConstantTensor(const Graph& graph, const std::string& value);
// The dims of `value` when its shape is known and every dim is concrete, else nullopt.
std::optional<std::vector<int64_t>> StaticDims(const Graph& graph, const std::string& value);
// The rank of `value` when its shape states it.
std::optional<int64_t> RankOf(const Graph& graph, const std::string& value);
// `axis` counted from the front, when it can be (a negative one needs the rank).
std::optional<int64_t> NormalizedAxis(int64_t axis, std::optional<int64_t> rank);
// A Split's part lengths along its (normalized) axis, when they are known at creation: its constant `split` input
// (opset 13+) or attribute, or the parts of an axis whose size the input's shape states (equal, or opset 18's
// num_outputs; not for a negative `axis`, which a caller passes when the rank is unknown).
std::optional<std::vector<int64_t>> SplitSizes(const Graph& graph, const Node& split, int64_t axis);
// The single element of a one-element float/double/float16/bfloat16/int32/int64 constant, as a double (float16
// models scale, clip and mask with float16 scalars); nullopt otherwise.
std::optional<double> ScalarConstant(const Graph& graph, const std::string& value);
// Whether `value` is a one-element constant within a relative tolerance of `expected`.
bool IsScalarConstant(const Graph& graph, const std::string& value, double expected, double tolerance = 1e-4);
// For a two-input node with one scalar-constant input: the index (0 or 1) of the other input.
std::optional<size_t> OtherThanScalar(const Graph& graph, const Node& node, double expected, double tolerance = 1e-4);

// A name not yet used by any initializer, value info or node output of `graph`, built from `base`.
std::string FreshValueName(const Graph& graph, const std::string& base);
// The names and int64 constants of the nodes a rewrite builds before they join the graph: a fresh name is one
// that neither the graph nor an earlier call of this object gave out.
class NewValues {
 public:
  explicit NewValues(Graph& graph) : graph_(graph) {}
  std::string Fresh(const std::string& base);
  std::string Int64s(const std::string& base, const std::vector<int64_t>& values);  // a 1-D initializer
  std::string Int64Scalar(const std::string& base, int64_t value);                  // a scalar initializer

 private:
  Graph& graph_;
  std::set<std::string> given_;
};
// Replaces every read of `from` by `to` in the nodes of `graph` (not in subgraphs; check ReadBySubgraph).
void RenameReads(Graph& graph, const std::string& from, const std::string& to);
// Removes the given nodes, keeping the order of the others.
void RemoveNodes(Graph& graph, const std::set<const Node*>& doomed);
Attribute IntAttribute(const std::string& name, int64_t value);
Attribute FloatAttribute(const std::string& name, float value);
Attribute StringAttribute(const std::string& name, const std::string& value);
Attribute IntsAttribute(const std::string& name, std::vector<int64_t> values);

// Whether `node` is a default-domain `op_type` node with an output (false for nullptr).
bool IsStandardOp(const Node* node, const char* op_type);
// For a binary node reading `value`: the other operand.
const std::string& OtherOperand(const Node& node, const std::string& value);
// Whether a node of a match is already in `doomed` (taken by an earlier rewrite of the same pass).
bool AnyClaimed(const std::vector<Node*>& nodes, const std::set<const Node*>& doomed);
// Collapses a matched pattern into one default-domain node: `nodes` is the pattern, the last one writing its
// result (it reads, transitively, all the others, so it comes last in the order). The last becomes `op_type`
// (`opset`, named after it plus `suffix`) reading `inputs` and writing the same output; the others go into
// `doomed` for RemoveNodes. Returns the new node, for its attributes.
Node& CollapseMatch(const std::vector<Node*>& nodes, const std::string& op_type, int opset,
                    std::vector<std::string> inputs, const std::string& suffix, std::set<const Node*>& doomed);

// The fused node's opset for an op whose semantics are those of `minimum_opset` or later.
inline int FusedOpset(const Node& anchor, int minimum_opset) { return std::max(anchor.opset, minimum_opset); }

}  // namespace tessera
