// One-node SkipLayerNormalization models for the CPU op test (tests/ops/skip_layer_norm_test.cc) and the CUDA
// test (tests/cuda/cuda_skip_layer_norm_test.cc): the node can name the sum as output 3 with outputs 1 and 2
// omitted, which the OpTester cannot express. Every input is a graph input, which RandomFeeds fills, except gamma, beta
// and bias with `constant_parameters`: initializers holding what RandomFeeds(c, c.seed) would feed.
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/op_tester.h"
#include "tessera/tessera.h"

namespace tessera::test {

struct SkipLayerNormCase {
  std::string domain = "ai.tessera";
  DataType type = DataType::kFloat;
  Shape input, skip;  // broadcast against each other; the last dimension of the result is the hidden size
  bool beta = true, bias = false, sum = false;
  float epsilon = 1e-5f;
  bool constant_parameters = false;  // gamma, beta and bias as initializers
  uint32_t seed = 21;                // of the initializers' random values (RandomFeeds' seed)

  int64_t Hidden() const { return std::max(input[input.rank() - 1], skip[skip.rank() - 1]); }
};

// gamma, beta or bias: `hidden` random values, as RandomFeeds makes them.
inline Tensor SkipLayerNormParameter(const SkipLayerNormCase& c, const std::string& name, uint32_t seed) {
  const Shape vector{c.Hidden()};
  if (name == "gamma") return RandomTensor(c.type, vector, seed + 2, 0.5, 1.5);
  return RandomTensor(c.type, vector, name == "beta" ? seed + 3 : seed + 4);
}

inline std::string SkipLayerNormModel(const SkipLayerNormCase& c) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* onnx_import = model.add_opset_import();
  onnx_import->set_domain("");
  onnx_import->set_version(17);
  auto* op_import = model.add_opset_import();
  op_import->set_domain(c.domain);
  op_import->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("skip_layer_norm");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("SkipLayerNormalization");
  node->set_domain(c.domain);
  node->set_name("sln");
  auto* epsilon = node->add_attribute();
  epsilon->set_name("epsilon");
  epsilon->set_type(onnx::AttributeProto::FLOAT);
  epsilon->set_f(c.epsilon);
  const auto add_value = [&](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
    onnx::ValueInfoProto* info = list->Add();
    info->set_name(name);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(c.type));
  };
  for (const char* name : {"input", "skip", "gamma", "beta", "bias"}) {
    const std::string n = name;
    const bool present = (n != "beta" || c.beta) && (n != "bias" || c.bias);
    node->add_input(present ? n : "");
    const bool parameter = n == "gamma" || n == "beta" || n == "bias";
    if (present && parameter && c.constant_parameters) {
      const Tensor value = SkipLayerNormParameter(c, n, c.seed);
      onnx::TensorProto* init = graph->add_initializer();
      init->set_name(n);
      init->set_data_type(static_cast<int32_t>(c.type));
      init->add_dims(c.Hidden());
      init->set_raw_data(std::string(static_cast<const char*>(value.raw_data()), value.SizeInBytes()));
    } else if (present) {
      add_value(graph->mutable_input(), n);
    }
  }
  while (!node->input().empty() && node->input(node->input_size() - 1).empty()) node->mutable_input()->RemoveLast();
  node->add_output("output");
  add_value(graph->mutable_output(), "output");
  if (c.sum) {
    for (const char* name : {"", "", "input_skip_bias_sum"}) node->add_output(name);
    add_value(graph->mutable_output(), "input_skip_bias_sum");
  }
  return model.SerializeAsString();
}

inline Session::NamedValues RandomFeeds(const SkipLayerNormCase& c, uint32_t seed) {
  Session::NamedValues feeds = {{"input", Value(RandomTensor(c.type, c.input, seed, -2, 2))},
                                {"skip", Value(RandomTensor(c.type, c.skip, seed + 1, -2, 2))}};
  if (c.constant_parameters) return feeds;
  feeds.push_back({"gamma", Value(SkipLayerNormParameter(c, "gamma", seed))});
  if (c.beta) feeds.push_back({"beta", Value(SkipLayerNormParameter(c, "beta", seed))});
  if (c.bias) feeds.push_back({"bias", Value(SkipLayerNormParameter(c, "bias", seed))});
  return feeds;
}

}  // namespace tessera::test
