// A small builder for multi-node test models (onnx::ModelProto), serialized for Session.
#pragma once

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::test {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // A float input with the given dims (-1 = symbolic "N").
  GraphBuilder& Input(const std::string& name, const std::vector<int64_t>& dims, int elem = 1) {
    AddValueInfo(model_.mutable_graph()->add_input(), name, dims, elem);
    return *this;
  }
  GraphBuilder& Output(const std::string& name, int elem = 1) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  GraphBuilder& Node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outputs[0] + "_node" : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *this;
  }
  // Attributes of the node added last.
  GraphBuilder& IntsAttribute(const std::string& name, const std::vector<int64_t>& values) {
    auto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
    return *this;
  }
  GraphBuilder& FloatAttribute(const std::string& name, float value) {
    auto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
    return *this;
  }
  GraphBuilder& IntAttribute(const std::string& name, int64_t value) {
    auto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
    return *this;
  }
  GraphBuilder& StringAttribute(const std::string& name, const std::string& value) {
    auto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
    return *this;
  }
  GraphBuilder& FloatInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  GraphBuilder& Int64Initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(7);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  std::string Serialize() const { return model_.SerializeAsString(); }

 private:
  onnx::NodeProto* LastNode() {
    auto* nodes = model_.mutable_graph()->mutable_node();
    if (nodes->empty()) throw std::logic_error("GraphBuilder: an attribute needs a node");
    return nodes->Mutable(nodes->size() - 1);
  }
  static void AddValueInfo(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int elem) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (int64_t d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

inline Session MakeSession(const std::string& bytes, const SessionOptions& options, Environment& env) {
  return Session(env, bytes.data(), bytes.size(), options);
}

}  // namespace tessera::test
