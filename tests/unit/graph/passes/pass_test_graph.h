// Shared by the graph-pass tests: a builder for small ONNX models with attributes and constants, and the
// two checks every pass test makes -- which ops a session runs after optimization (Session::Partition())
// and that its outputs match an unoptimized session (OptimizationLevel::kNone) on random inputs.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/model_loader.h"
#include "graph/type_inference.h"
#include "tessera/tessera.h"

namespace tessera::test {

class PassTestGraph {
 public:
  explicit PassTestGraph(int opset = 17) {
    model_.set_ir_version(8);
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("pass_test");
  }
  // A float input (or of `type`, an onnx::TensorProto element type: Feeds() leaves those out); dims < 0 are
  // symbolic ("N").
  PassTestGraph& Input(const std::string& name, const std::vector<int64_t>& dims,
                       int type = onnx::TensorProto::FLOAT) {
    auto* value = model_.mutable_graph()->add_input();
    value->set_name(name);
    auto* tensor_type = value->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(type);
    for (int64_t d : dims) {
      if (d < 0)
        tensor_type->mutable_shape()->add_dim()->set_dim_param("N");
      else
        tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    if (type == onnx::TensorProto::FLOAT) inputs_.push_back({name, dims});
    return *this;
  }
  // A float output (or of `type`); with `dims`, its declared shape too.
  PassTestGraph& Output(const std::string& name, const std::vector<int64_t>& dims = {},
                        int type = onnx::TensorProto::FLOAT) {
    auto* value = model_.mutable_graph()->add_output();
    value->set_name(name);
    auto* tensor_type = value->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(type);
    for (int64_t d : dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  // Imports an operator set (e.g. "com.microsoft", 1) for nodes of that domain.
  PassTestGraph& Import(const std::string& domain, int version) {
    auto* import = model_.add_opset_import();
    import->set_domain(domain);
    import->set_version(version);
    return *this;
  }
  // Adds a node; its attributes are set on the returned proto (see Int/Float/Ints/String below).
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(outputs[0] + "_node");
    for (const auto& in : inputs) node->add_input(in);
    for (const auto& out : outputs) node->add_output(out);
    return *node;
  }
  PassTestGraph& Floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tensor->add_dims(d);
    for (float v : values) tensor->add_float_data(v);
    return *this;
  }
  PassTestGraph& Scalar(const std::string& name, float value) { return Floats(name, {}, {value}); }
  // A float16 initializer (ONNX keeps float16 bits in int32_data).
  PassTestGraph& Halves(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : dims) tensor->add_dims(d);
    for (float v : values) tensor->add_int32_data(ToFloat16(v).bits);
    return *this;
  }
  PassTestGraph& Int32s(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT32);
    for (int64_t d : dims) tensor->add_dims(d);
    for (int32_t v : values) tensor->add_int32_data(v);
    return *this;
  }
  PassTestGraph& Int64s(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) tensor->add_dims(d);
    for (int64_t v : values) tensor->add_int64_data(v);
    return *this;
  }
  // An 8-bit initializer (onnx::TensorProto::UINT8 or INT8), e.g. quantized weights and zero points.
  PassTestGraph& Bytes(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& values,
                       int type = onnx::TensorProto::UINT8) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(type);
    for (int64_t d : dims) tensor->add_dims(d);
    for (int32_t v : values) tensor->add_int32_data(v);
    return *this;
  }
  // Random values in [lo, hi) from a fixed seed, for weights.
  static std::vector<float> Random(size_t count, float lo, float hi, unsigned seed) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> values(count);
    for (float& v : values) v = dist(engine);
    return values;
  }

  std::string Serialize() const { return model_.SerializeAsString(); }
  // Random feeds (symbolic dims = `symbolic_size`), seed fixed.
  Session::NamedValues Feeds(int64_t symbolic_size = 2) const {
    Session::NamedValues feeds;
    unsigned seed = 1;
    for (const auto& [name, dims] : inputs_) {
      std::vector<int64_t> concrete;
      for (int64_t d : dims) concrete.push_back(d < 0 ? symbolic_size : d);
      const Shape shape(concrete);
      feeds.push_back({name, Value(Tensor::FromVector<float>(shape, Random(shape.NumElements(), -2, 2, seed++)))});
    }
    return feeds;
  }

 private:
  onnx::ModelProto model_;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs_;
};

inline void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}
inline void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

// Adds Conv(input, W[out, in / group, k, k], B) with `pads` all equal to `pad`, named after `output` (random
// weights and bias from a fixed sequence of seeds).
inline onnx::NodeProto& AddConv(PassTestGraph& g, const std::string& input, const std::string& output, int64_t in,
                                int64_t out, int64_t k, int64_t pad, int64_t group = 1, int64_t stride = 1) {
  static unsigned seed = 100;
  const int64_t weights = out * (in / group) * k * k;
  g.Floats(output + "_W", {out, in / group, k, k}, PassTestGraph::Random(weights, -0.3f, 0.3f, seed++));
  g.Floats(output + "_B", {out}, PassTestGraph::Random(out, -0.5f, 0.5f, seed++));
  onnx::NodeProto& conv = g.Node("Conv", {input, output + "_W", output + "_B"}, {output});
  SetInts(conv, "pads", {pad, pad, pad, pad});
  SetInts(conv, "strides", {stride, stride});
  if (group > 1) SetInt(conv, "group", group);
  return conv;
}

// The model as the session's graph passes see it (loaded, element types inferred), for tests that call a pass.
inline std::unique_ptr<Model> LoadForPasses(const PassTestGraph& g) {
  const std::string bytes = g.Serialize();
  std::unique_ptr<Model> model = LoadModelFromBytes(bytes.data(), bytes.size(), {});
  InferElementTypes(*model->graph);
  return model;
}

// Session config entries (SessionOptions::config), e.g. {{"session.float16_in_float32", "0"}}.
using Config = std::map<std::string, std::string>;

// Provider options of the CPU EP the pass tests run on, e.g. kFusedAttentionOnCpu.
inline const ProviderOptions kFusedAttentionOnCpu = {{"fused_attention", "1"}};

inline SessionOptions OptionsAt(OptimizationLevel level, const Config& config = {}, const ProviderOptions& cpu = {}) {
  SessionOptions options;
  options.optimization_level = level;
  options.intra_op_threads = 1;
  options.config = config;
  if (!cpu.empty()) options.AddProvider("CPUExecutionProvider", cpu);
  return options;
}

// The op types the session runs (kernel steps in plan order).
inline std::vector<std::string> OpsAt(const PassTestGraph& graph, OptimizationLevel level, const Config& config = {},
                                      const ProviderOptions& cpu = {}) {
  Environment env;
  const std::string bytes = graph.Serialize();
  Session session(env, bytes.data(), bytes.size(), OptionsAt(level, config, cpu));
  std::vector<std::string> ops;
  for (const PartitionEntry& entry : session.Partition())
    if (!entry.is_copy) ops.push_back(entry.op_type);
  return ops;
}

inline size_t Count(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), op));
}

// Runs the model at `level` and at kNone on the same random feeds; expects outputs within `tolerance`.
inline void ExpectSameOutputs(const PassTestGraph& graph, OptimizationLevel level, float tolerance = 1e-5f,
                              int64_t symbolic_size = 2, const Config& config = {}, const ProviderOptions& cpu = {}) {
  Environment env;
  const std::string bytes = graph.Serialize();
  Session optimized(env, bytes.data(), bytes.size(), OptionsAt(level, config, cpu));
  Session reference(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = graph.Feeds(symbolic_size);
  const std::vector<Value> got = optimized.Run(feeds);
  const std::vector<Value> want = reference.Run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& a = got[i].tensor();
    const Tensor& b = want[i].tensor();
    ASSERT_EQ(a.shape(), b.shape()) << "output " << i;
    float worst = 0;
    for (int64_t k = 0; k < a.NumElements(); ++k)
      worst = std::max(worst, std::abs(a.Data<float>()[k] - b.Data<float>()[k]));
    EXPECT_LE(worst, tolerance) << "output " << i << " differs from the unoptimized session";
  }
}

// The attention fusions' tests: level all with the CPU EP's fused attention on (kFusedAttentionOnCpu).
inline std::vector<std::string> OpsFused(const PassTestGraph& graph) {
  return OpsAt(graph, OptimizationLevel::kAll, {}, kFusedAttentionOnCpu);
}
inline void ExpectFusedOutputs(const PassTestGraph& graph, float tolerance, int64_t symbolic_size = 2) {
  ExpectSameOutputs(graph, OptimizationLevel::kAll, tolerance, symbolic_size, {}, kFusedAttentionOnCpu);
}

}  // namespace tessera::test
