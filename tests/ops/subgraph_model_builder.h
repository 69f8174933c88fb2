// Multi-node ONNX models with subgraphs (If/Loop/Scan/SequenceMap bodies), sequences and optionals,
// for op tests that OpTester's one-node models cannot express.
//
//   GraphProtoBuilder body("body");
//   body.Input("i", TensorType(kInt64, Ints{})).Output("y", TensorType(kFloat));
//   body.Node("Add", {"a", "b"}, {"y"});
//   GraphProtoBuilder main("main");
//   SetAttr(main.Node("Loop", {"M", "", "a0"}, {"a"}), "body", body.proto());
//   std::vector<Value> out = RunModel(main.proto(), 17, {{"M", ...}}, "cpu");
#pragma once

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <optional>
#include <string>
#include <vector>

#include "test_env.h"
#include "tessera/tessera.h"

namespace tessera::test {

// ONNX TensorProto element types used by the tests.
inline constexpr int kOnnxFloat = 1;
inline constexpr int kOnnxInt64 = 7;
inline constexpr int kOnnxBool = 9;

// A tensor type; dims nullopt = unknown rank, -1 = a symbolic dim.
inline onnx::TypeProto TensorType(int elem, std::optional<std::vector<int64_t>> dims = std::nullopt) {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(elem);
  if (dims) {
    auto* shape = tensor->mutable_shape();
    for (int64_t d : *dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }
  return type;
}

inline onnx::TypeProto SequenceType(const onnx::TypeProto& element) {
  onnx::TypeProto type;
  *type.mutable_sequence_type()->mutable_elem_type() = element;
  return type;
}

inline onnx::TypeProto OptionalType(const onnx::TypeProto& element) {
  onnx::TypeProto type;
  *type.mutable_optional_type()->mutable_elem_type() = element;
  return type;
}

class GraphProtoBuilder {
 public:
  explicit GraphProtoBuilder(const std::string& name) { graph_.set_name(name); }

  GraphProtoBuilder& Input(const std::string& name, const onnx::TypeProto& type) {
    auto* v = graph_.add_input();
    v->set_name(name);
    *v->mutable_type() = type;
    return *this;
  }
  GraphProtoBuilder& Output(const std::string& name, const onnx::TypeProto& type) {
    auto* v = graph_.add_output();
    v->set_name(name);
    *v->mutable_type() = type;
    return *this;
  }
  // Adds a node; the returned reference stays valid while the builder lives (for attributes).
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph_.node_size()));
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  GraphProtoBuilder& Int64Initializer(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
    auto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(kOnnxInt64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  GraphProtoBuilder& FloatInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
    auto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(kOnnxFloat);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  const onnx::GraphProto& proto() const { return graph_; }

 private:
  onnx::GraphProto graph_;
};

inline void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& graph) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = graph;
}
inline void SetAttr(onnx::NodeProto& node, const std::string& name, const onnx::TypeProto& type) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TYPE_PROTO);
  *a->mutable_tp() = type;
}

inline std::string SerializeModel(const onnx::GraphProto& graph, int opset) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *model.mutable_graph() = graph;
  return model.SerializeAsString();
}

// Creates a session for the model on `ep` ("cpu", "testing") and runs it once.
inline std::vector<Value> RunModel(const onnx::GraphProto& graph, int opset, const Session::NamedValues& feeds,
                                   const std::string& ep = "cpu") {
  const std::string bytes = SerializeModel(graph, opset);
  Session session(TestEnv(), bytes.data(), bytes.size(), OptionsFor(ep));
  return session.Run(feeds);
}

}  // namespace tessera::test
