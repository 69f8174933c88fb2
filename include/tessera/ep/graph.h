// The graph IR, as execution providers and passes see it.
//
// A Model owns one main Graph; If/Loop/Scan nodes own subgraphs through graph attributes. Value
// names are the edges: a node input names a graph input, an initializer, an outer-scope value (in a
// subgraph) or another node's output. An empty input name is an omitted optional input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/data_type.h"
#include "tessera/tensor.h"

namespace tessera {

class Graph;

// A dimension in model metadata: a concrete size, a symbolic name ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when concrete
  std::string symbol;  // non-empty when symbolic
  std::string denotation;  // the model's dimension denotation ("DATA_BATCH", ...), when it gives one
  bool is_concrete() const { return value >= 0; }
};

// Static knowledge about a value: its kind, element type and (optional) shape.
struct ValueInfo {
  enum class Kind { kTensor, kSequence, kOptional, kUnknown };
  std::string name;
  Kind kind = Kind::kTensor;
  DataType type = DataType::kUndefined;  // element type (of the tensors inside, for sequences)
  std::optional<std::vector<Dim>> shape;  // nullopt when the rank is unknown
  std::string ShapeString() const;        // "[batch,3,224,224]" or "?"
};

struct Attribute {
  enum class Type { kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs, kTypeProto };
  std::string name;
  Type type = Type::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  ValueInfo type_proto;  // for kTypeProto attributes (e.g. Optional's `type`)
};

class Node {
 public:
  std::string name;     // may be empty in the file; the loader fills "<op_type>_<index>"
  std::string op_type;
  std::string domain;   // "" for the default ONNX domain ("ai.onnx" is normalized to "")
  int opset = 0;        // the model's opset import for `domain`
  std::vector<std::string> inputs;   // "" = omitted optional input
  std::vector<std::string> outputs;  // "" = omitted optional output
  std::map<std::string, Attribute> attributes;

  bool HasAttribute(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed getters: the value, or `fallback` when absent; throw kInvalidModel naming the node on a
  // type mismatch. The overloads without fallback throw when the attribute is absent.
  int64_t GetInt(const std::string& key, int64_t fallback) const;
  int64_t GetInt(const std::string& key) const;
  float GetFloat(const std::string& key, float fallback) const;
  float GetFloat(const std::string& key) const;
  std::string GetString(const std::string& key, const std::string& fallback) const;
  std::string GetString(const std::string& key) const;
  std::vector<int64_t> GetInts(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> GetFloats(const std::string& key, std::vector<float> fallback = {}) const;
  std::vector<std::string> GetStrings(const std::string& key, std::vector<std::string> fallback = {}) const;
  const Tensor& GetTensor(const std::string& key) const;
  const Graph& GetGraph(const std::string& key) const;
  // "Conv 'conv1' (opset 17)" for error messages.
  std::string Describe() const;
  // Number of inputs actually supplied (trailing omitted inputs do not count).
  size_t NumInputs() const;
  bool HasInput(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

// Writes node.Describe(). Error-message parts take the node itself, so that the description is only built
// when a check fails (checks run on every step; building the string costs more than many launches).
std::ostream& operator<<(std::ostream& os, const Node& node);

class Graph {
 public:
  std::string name;
  std::vector<std::unique_ptr<Node>> nodes;  // topologically sorted once loading completes
  std::vector<ValueInfo> inputs;             // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, ValueInfo> value_infos;  // every typed value: inputs, outputs, intermediates
  std::map<std::string, Tensor> initializers;    // constant tensors (host memory)
  std::map<std::string, int> opsets;             // domain -> version (shared with the model)
  const Graph* parent = nullptr;                 // the enclosing graph, for subgraphs

  // Sorts `nodes` topologically; throws kInvalidModel naming a node on a cycle or a missing input.
  // `outer_scope` lists names a subgraph may read from enclosing graphs.
  void TopologicalSort(const std::set<std::string>& outer_scope = {});
  // Names this graph (and its nested subgraphs) read that it does not define itself.
  std::set<std::string> OuterScopeReferences() const;
  const ValueInfo* FindValueInfo(const std::string& value) const;
  DataType TypeOf(const std::string& value) const;  // kUndefined when unknown
  bool IsInitializer(const std::string& value) const { return initializers.count(value) != 0; }
  bool IsGraphInput(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const;
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int> opsets;  // domain -> version
  std::string producer_name, producer_version, domain, doc_string, graph_name;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata;
  std::filesystem::path path;  // empty for models loaded from memory
  std::unique_ptr<Graph> graph;
  // Initializers the file kept as external data read from a file: by name, the file (absolute), the offset and
  // length there, and the buffer the loader read them into (a graph initializer still holding that buffer is the
  // data as stored; an optimizer's rewrite holds another).
  struct ExternalSource {
    std::filesystem::path file;
    uint64_t offset = 0, length = 0;
    const void* data = nullptr;
  };
  std::map<std::string, ExternalSource> external_sources;
};

}  // namespace tessera
