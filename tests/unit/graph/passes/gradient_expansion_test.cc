// Gradient (ai.onnx.preview.training) expansion: small graphs whose gradients are worked out by hand,
// run through a session (the pass runs at creation whatever the optimization level).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::test {
namespace {

class GradientModel {
 public:
  GradientModel() {
    model_.set_ir_version(8);
    auto* onnx_import = model_.add_opset_import();
    onnx_import->set_domain("");
    onnx_import->set_version(17);
    auto* training_import = model_.add_opset_import();
    training_import->set_domain("ai.onnx.preview.training");
    training_import->set_version(1);
    model_.mutable_graph()->set_name("gradient_test");
  }
  GradientModel& Input(const std::string& name, const std::vector<int64_t>& dims) {
    Typed(model_.mutable_graph()->add_input(), name, &dims);
    return *this;
  }
  GradientModel& Output(const std::string& name) {
    Typed(model_.mutable_graph()->add_output(), name, nullptr);
    return *this;
  }
  GradientModel& Node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(output + "_node");
    for (const auto& in : inputs) node->add_input(in);
    node->add_output(output);
    return *this;
  }
  // Gradient(xs; y) named "grad", outputs `outputs` (one per x; "" skips one).
  GradientModel& Gradient(const std::vector<std::string>& xs, const std::string& y,
                          const std::vector<std::string>& outputs) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type("Gradient");
    node->set_domain("ai.onnx.preview.training");
    node->set_name("grad");
    for (const auto& x : xs) node->add_input(x);
    for (const auto& out : outputs) node->add_output(out);
    auto* xs_attr = node->add_attribute();
    xs_attr->set_name("xs");
    xs_attr->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& x : xs) xs_attr->add_strings(x);
    auto* y_attr = node->add_attribute();
    y_attr->set_name("y");
    y_attr->set_type(onnx::AttributeProto::STRING);
    y_attr->set_s(y);
    return *this;
  }
  std::vector<Value> Run(const Session::NamedValues& feeds, OptimizationLevel level = OptimizationLevel::kNone) const {
    Environment env;
    const std::string bytes = model_.SerializeAsString();
    SessionOptions options;
    options.optimization_level = level;
    options.intra_op_threads = 1;
    Session session(env, bytes.data(), bytes.size(), options);
    return session.Run(feeds);
  }

 private:
  static void Typed(onnx::ValueInfoProto* value, const std::string& name, const std::vector<int64_t>* dims) {
    value->set_name(name);
    auto* tensor_type = value->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
    if (dims)
      for (int64_t d : *dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
};

Value Floats(const Shape& shape, const std::vector<float>& values) {
  return Value(Tensor::FromVector<float>(shape, values));
}

void ExpectTensor(const Value& got, const Shape& shape, const std::vector<float>& want, const char* what) {
  const Tensor& t = got.tensor();
  ASSERT_EQ(t.type(), DataType::kFloat) << what;
  ASSERT_EQ(t.shape(), shape) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.Data<float>()[i], want[i], 1e-5f) << what << " element " << i;
}

// y = (a + b) * w with a [2,3], b [3], w [2,1]: dy/da[r][c] = w[r]; dy/db[c] = w[0] + w[1];
// dy/dw[r] = sum_c (a[r][c] + b[c]).
TEST(GradientExpansionTest, AddAndMulWithBroadcasting) {
  GradientModel m;
  m.Input("a", {2, 3}).Input("b", {3}).Input("w", {2, 1});
  m.Node("Add", {"a", "b"}, "c").Node("Mul", {"c", "w"}, "y");
  m.Gradient({"a", "b", "w"}, "y", {"da", "db", "dw"});
  m.Output("y").Output("da").Output("db").Output("dw");
  const std::vector<Value> out = m.Run({{"a", Floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                                        {"b", Floats({3}, {10, 20, 30})},
                                        {"w", Floats({2, 1}, {2, -1})}});
  ExpectTensor(out[1], Shape{2, 3}, {2, 2, 2, -1, -1, -1}, "da");
  ExpectTensor(out[2], Shape{3}, {1, 1, 1}, "db");
  ExpectTensor(out[3], Shape{2, 1}, {66, 75}, "dw");
}

// y = -((a - b) / b): dy/da = -1/b; dy/db = a / b^2.
TEST(GradientExpansionTest, SubDivNeg) {
  GradientModel m;
  m.Input("a", {2}).Input("b", {2});
  m.Node("Sub", {"a", "b"}, "d").Node("Div", {"d", "b"}, "q").Node("Neg", {"q"}, "y");
  m.Gradient({"a", "b"}, "y", {"da", "db"});
  m.Output("da").Output("db");
  const std::vector<Value> out = m.Run({{"a", Floats({2}, {3, -4})}, {"b", Floats({2}, {2, 4})}});
  ExpectTensor(out[0], Shape{2}, {-0.5f, -0.25f}, "da");
  ExpectTensor(out[1], Shape{2}, {0.75f, -0.25f}, "db");
}

// y = a * a + Identity(a): the two paths through `a` accumulate, dy/da = 2a + 1.
TEST(GradientExpansionTest, AccumulatesOverPaths) {
  GradientModel m;
  m.Input("a", {3});
  m.Node("Mul", {"a", "a"}, "sq").Node("Identity", {"a"}, "id").Node("Add", {"sq", "id"}, "y");
  m.Gradient({"a"}, "y", {"da"});
  m.Output("da");
  const std::vector<Value> out = m.Run({{"a", Floats({3}, {1, -2, 0.5f})}});
  ExpectTensor(out[0], Shape{3}, {3, -3, 2}, "da");
}

// y = Sigmoid(Relu(x)): dy/dx = s (1 - s) where x > 0, else 0 (s = Sigmoid(Relu(x))).
TEST(GradientExpansionTest, ReluSigmoid) {
  GradientModel m;
  m.Input("x", {3});
  m.Node("Relu", {"x"}, "r").Node("Sigmoid", {"r"}, "y");
  m.Gradient({"x"}, "y", {"dx"});
  m.Output("dx");
  const std::vector<Value> out = m.Run({{"x", Floats({3}, {-1, 0.5f, 2})}});
  auto slope = [](float v) { const float s = 1 / (1 + std::exp(-v)); return s * (1 - s); };
  ExpectTensor(out[0], Shape{3}, {0, slope(0.5f), slope(2)}, "dx");
}

// y = Tanh(A B) with A [2,2], B [2,1]: G = 1 - y^2, dA = G B^T, dB = A^T G.
TEST(GradientExpansionTest, MatMulTanh) {
  GradientModel m;
  m.Input("A", {2, 2}).Input("B", {2, 1});
  m.Node("MatMul", {"A", "B"}, "p").Node("Tanh", {"p"}, "y");
  m.Gradient({"A", "B"}, "y", {"dA", "dB"});
  m.Output("dA").Output("dB");
  const std::vector<Value> out =
      m.Run({{"A", Floats({2, 2}, {1, 2, -1, 0.5f})}, {"B", Floats({2, 1}, {0.25f, -0.5f})}});
  const float p0 = 1 * 0.25f + 2 * -0.5f, p1 = -1 * 0.25f + 0.5f * -0.5f;
  const float g0 = 1 - std::tanh(p0) * std::tanh(p0), g1 = 1 - std::tanh(p1) * std::tanh(p1);
  ExpectTensor(out[0], Shape{2, 2}, {g0 * 0.25f, g0 * -0.5f, g1 * 0.25f, g1 * -0.5f}, "dA");
  ExpectTensor(out[1], Shape{2, 1}, {1 * g0 + -1 * g1, 2 * g0 + 0.5f * g1}, "dB");
}

// An x that y does not depend on gets zeros of its shape; an x that is y gets ones; skipped outputs stay absent.
TEST(GradientExpansionTest, IndependentAndIdentityVariables) {
  GradientModel m;
  m.Input("a", {2}).Input("unused", {3});
  m.Node("Neg", {"a"}, "y");
  m.Gradient({"a", "unused", "y"}, "y", {"", "dunused", "dy"});
  m.Output("dunused").Output("dy");
  const std::vector<Value> out = m.Run({{"a", Floats({2}, {1, 2})}, {"unused", Floats({3}, {4, 5, 6})}});
  ExpectTensor(out[0], Shape{3}, {0, 0, 0}, "dunused");
  ExpectTensor(out[1], Shape{2}, {1, 1}, "dy");
}

// The expansion happens at every optimization level (here with constant folding and fusions on).
TEST(GradientExpansionTest, ExpandsAtFullOptimization) {
  GradientModel m;
  m.Input("a", {2}).Input("b", {2});
  m.Node("Mul", {"a", "b"}, "y");
  m.Gradient({"a"}, "y", {"da"});
  m.Output("da");
  const std::vector<Value> out =
      m.Run({{"a", Floats({2}, {1, 2})}, {"b", Floats({2}, {3, 4})}}, OptimizationLevel::kAll);
  ExpectTensor(out[0], Shape{2}, {3, 4}, "da");
}

TEST(GradientExpansionTest, UnsupportedOpNamesGradientAndOp) {
  GradientModel m;
  m.Input("x", {2, 3});
  m.Node("Softmax", {"x"}, "y");
  m.Gradient({"x"}, "y", {"dx"});
  m.Output("dx");
  try {
    m.Run({{"x", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
    FAIL() << "expected kNotImplemented";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("Gradient 'grad'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Softmax"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
