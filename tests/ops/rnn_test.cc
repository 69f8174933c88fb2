// RNN, GRU and LSTM against naive per-entry, per-step reference implementations written straight from the
// ONNX equations (in double, layout 0; layout 1 cases permute inputs and expected outputs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "ops/op_tester.h"
#include "ops/subgraph_model_builder.h"

namespace tessera::test {
namespace {

inline constexpr int kOnnxInt32 = 6;
inline constexpr int kOnnxDouble = 11;

struct RecurrentCase {
  std::string op;  // RNN, GRU or LSTM
  int opset = 14;
  DataType type = DataType::kFloat;
  int64_t seq = 4, batch = 3, input = 5, hidden = 6;
  std::string direction = "forward";
  bool bias = true, initial_h = false, initial_c = false, peepholes = false;
  std::vector<int32_t> lengths = {};  // empty: no sequence_lens input
  int64_t layout = 0;
  std::vector<std::string> activations = {};  // empty: the op's defaults
  std::vector<float> alphas = {}, betas = {};
  float clip = 0;
  bool linear_before_reset = false, input_forget = false;
  uint32_t seed = 1;

  int64_t directions() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
};

std::vector<double> ToDoubles(const Tensor& t) {
  if (t.type() == DataType::kDouble) return t.ToVector<double>();
  std::vector<float> f = t.ToVector<float>();
  return {f.begin(), f.end()};
}

Tensor FromDoubles(DataType type, const Shape& shape, const std::vector<double>& values) {
  if (type == DataType::kDouble) return Tensor::FromVector<double>(shape, values);
  return Tensor::FromVector<float>(shape, std::vector<float>(values.begin(), values.end()));
}

// Permutes the dims of a dense tensor: out dim i is in dim perm[i].
Tensor Permute(const Tensor& t, const std::vector<size_t>& perm) {
  const std::vector<int64_t>& in_dims = t.shape().dims();
  std::vector<int64_t> out_dims, in_strides(in_dims.size(), 1);
  for (size_t i = in_dims.size(); i-- > 1;) in_strides[i - 1] = in_strides[i] * in_dims[i];
  for (size_t p : perm) out_dims.push_back(in_dims[p]);
  const std::vector<double> in = ToDoubles(t);
  std::vector<double> out(in.size());
  for (int64_t index = 0; index < static_cast<int64_t>(out.size()); ++index) {
    int64_t offset = 0;
    for (int64_t r = index, i = static_cast<int64_t>(perm.size()) - 1; i >= 0; --i) {
      offset += (r % out_dims[i]) * in_strides[perm[i]];
      r /= out_dims[i];
    }
    out[index] = in[offset];
  }
  return FromDoubles(t.type(), Shape(out_dims), out);
}

struct NamedActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

double Activate(const NamedActivation& a, double x, double clip) {
  if (clip > 0) x = std::min(std::max(x, -clip), clip);
  const std::string& n = a.name;
  if (n == "Relu") return std::max(x, 0.0);
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "ThresholdedRelu") return x >= a.alpha ? x : 0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "HardSigmoid") return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  if (n == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::fabs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << n;
  return 0;
}

// Activations of all directions, with alpha/beta consumed in order by the functions that take them.
std::vector<NamedActivation> ResolveActivations(const RecurrentCase& c) {
  std::vector<std::string> names = c.activations;
  if (names.empty()) {
    names = c.op == "RNN"   ? std::vector<std::string>{"Tanh"}
            : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                            : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    if (c.directions() == 2) {
      const std::vector<std::string> forward = names;
      names.insert(names.end(), forward.begin(), forward.end());
    }
  }
  const std::map<std::string, std::pair<double, double>> defaults = {
      {"Affine", {1, 0}},     {"LeakyRelu", {0.01, 0}},    {"ThresholdedRelu", {1, 0}},
      {"ScaledTanh", {1, 1}}, {"HardSigmoid", {0.2, 0.5}}, {"Elu", {1, 0}}};
  size_t next_alpha = 0, next_beta = 0;
  std::vector<NamedActivation> resolved;
  for (const std::string& name : names) {
    NamedActivation a{name};
    if (auto it = defaults.find(name); it != defaults.end()) {
      a.alpha = next_alpha < c.alphas.size() ? c.alphas[next_alpha++] : it->second.first;
      const bool takes_beta = name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid";
      if (takes_beta) a.beta = next_beta < c.betas.size() ? c.betas[next_beta++] : it->second.second;
    }
    resolved.push_back(a);
  }
  return resolved;
}

// Inputs in layout 0 (the reference's layout).
struct RecurrentInputs {
  Tensor x, w, r, b, lengths, h0, c0, p;
};

RecurrentInputs MakeInputs(const RecurrentCase& c) {
  const int64_t d = c.directions(), g = c.gates(), h = c.hidden;
  RecurrentInputs in;
  in.x = RandomTensor(c.type, {c.seq, c.batch, c.input}, c.seed);
  in.w = RandomTensor(c.type, {d, g * h, c.input}, c.seed + 1, -0.6, 0.6);
  in.r = RandomTensor(c.type, {d, g * h, h}, c.seed + 2, -0.6, 0.6);
  if (c.bias) in.b = RandomTensor(c.type, {d, 2 * g * h}, c.seed + 3, -0.5, 0.5);
  if (!c.lengths.empty()) in.lengths = Tensor::FromVector<int32_t>({c.batch}, c.lengths);
  if (c.initial_h) in.h0 = RandomTensor(c.type, {d, c.batch, h}, c.seed + 4);
  if (c.initial_c) in.c0 = RandomTensor(c.type, {d, c.batch, h}, c.seed + 5);
  if (c.peepholes) in.p = RandomTensor(c.type, {d, 3 * h}, c.seed + 6, -0.5, 0.5);
  return in;
}

struct RecurrentOutputs {
  Tensor y, y_h, y_c;
};

// One step of one entry: the new hidden (and cell) state from input x and the previous state.
using StepFn = std::function<void(int64_t d, const double* x, std::vector<double>& hidden, std::vector<double>& cell)>;

StepFn MakeStep(const RecurrentCase& c, const RecurrentInputs& in) {
  const int64_t h = c.hidden, g = c.gates(), k = c.input;
  auto w = std::make_shared<std::vector<double>>(ToDoubles(in.w));
  auto r = std::make_shared<std::vector<double>>(ToDoubles(in.r));
  auto b = std::make_shared<std::vector<double>>(in.b.defined() ? ToDoubles(in.b)
                                                                : std::vector<double>(c.directions() * 2 * g * h));
  auto p = std::make_shared<std::vector<double>>(in.p.defined() ? ToDoubles(in.p)
                                                                : std::vector<double>(c.directions() * 3 * h));
  auto acts = std::make_shared<std::vector<NamedActivation>>(ResolveActivations(c));
  const size_t per_direction = static_cast<size_t>(c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3);
  return [=](int64_t d, const double* x, std::vector<double>& hid, std::vector<double>& cell) {
    // Input part (with Wb) and recurrent part (with Rb) of gate `gate`, unit j, for state `state`.
    auto wx = [&](int64_t gate, int64_t j) {
      double s = (*b)[d * 2 * g * h + gate * h + j];
      for (int64_t i = 0; i < k; ++i) s += (*w)[(d * g * h + gate * h + j) * k + i] * x[i];
      return s;
    };
    auto rh = [&](int64_t gate, int64_t j, const std::vector<double>& state) {
      double s = (*b)[d * 2 * g * h + g * h + gate * h + j];
      for (int64_t i = 0; i < h; ++i) s += (*r)[(d * g * h + gate * h + j) * h + i] * state[i];
      return s;
    };
    const NamedActivation* f = acts->data() + d * per_direction;
    std::vector<double> next(h);
    if (c.op == "RNN") {
      for (int64_t j = 0; j < h; ++j) next[j] = Activate(f[0], wx(0, j) + rh(0, j, hid), c.clip);
    } else if (c.op == "GRU") {
      std::vector<double> z(h), rr(h), reset_hidden(h);
      for (int64_t j = 0; j < h; ++j) {
        z[j] = Activate(f[0], wx(0, j) + rh(0, j, hid), c.clip);
        rr[j] = Activate(f[0], wx(1, j) + rh(1, j, hid), c.clip);
        reset_hidden[j] = rr[j] * hid[j];
      }
      for (int64_t j = 0; j < h; ++j) {
        const double pre = c.linear_before_reset ? wx(2, j) + rr[j] * rh(2, j, hid) : wx(2, j) + rh(2, j, reset_hidden);
        next[j] = (1 - z[j]) * Activate(f[1], pre, c.clip) + z[j] * hid[j];
      }
    } else {
      const double* pd = p->data() + d * 3 * h;
      for (int64_t j = 0; j < h; ++j) {
        const double i_gate = Activate(f[0], wx(0, j) + rh(0, j, hid) + pd[j] * cell[j], c.clip);
        const double f_gate =
            c.input_forget ? 1 - i_gate : Activate(f[0], wx(2, j) + rh(2, j, hid) + pd[2 * h + j] * cell[j], c.clip);
        const double c_gate = Activate(f[1], wx(3, j) + rh(3, j, hid), c.clip);
        const double new_cell = f_gate * cell[j] + i_gate * c_gate;
        const double o_gate = Activate(f[0], wx(1, j) + rh(1, j, hid) + pd[h + j] * new_cell, c.clip);
        next[j] = o_gate * Activate(f[2], new_cell, c.clip);
        cell[j] = new_cell;  // j's old cell value is not read again (peepholes are elementwise)
      }
    }
    hid = next;
  };
}

RecurrentOutputs Reference(const RecurrentCase& c, const RecurrentInputs& in) {
  const int64_t d_count = c.directions(), h = c.hidden, batch = c.batch;
  const std::vector<double> x = ToDoubles(in.x);
  const std::vector<double> h0 = in.h0.defined() ? ToDoubles(in.h0) : std::vector<double>(d_count * batch * h);
  const std::vector<double> c0 = in.c0.defined() ? ToDoubles(in.c0) : std::vector<double>(d_count * batch * h);
  std::vector<double> y(c.seq * d_count * batch * h), y_h(d_count * batch * h), y_c(d_count * batch * h);
  const StepFn step = MakeStep(c, in);
  for (int64_t d = 0; d < d_count; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = c.lengths.empty() ? c.seq : c.lengths[b];
      std::vector<double> hid(h0.begin() + (d * batch + b) * h, h0.begin() + (d * batch + b + 1) * h);
      std::vector<double> cell(c0.begin() + (d * batch + b) * h, c0.begin() + (d * batch + b + 1) * h);
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        step(d, x.data() + (t * batch + b) * c.input, hid, cell);
        std::copy(hid.begin(), hid.end(), y.begin() + ((t * d_count + d) * batch + b) * h);
      }
      if (len > 0) {
        std::copy(hid.begin(), hid.end(), y_h.begin() + (d * batch + b) * h);
        std::copy(cell.begin(), cell.end(), y_c.begin() + (d * batch + b) * h);
      }
    }
  }
  return {FromDoubles(c.type, {c.seq, d_count, batch, h}, y), FromDoubles(c.type, {d_count, batch, h}, y_h),
          FromDoubles(c.type, {d_count, batch, h}, y_c)};
}

void AddStringsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

void AddFloatsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values, bool list) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(list ? onnx::AttributeProto::FLOATS : onnx::AttributeProto::FLOAT);
  if (!list) a->set_f(values.front());
  for (float v : values)
    if (list) a->add_floats(v);
}

// The one-node model for `c` (OpTester has no string-list attributes) and its feeds, in the case's layout.
std::pair<GraphProtoBuilder, Session::NamedValues> BuildModel(const RecurrentCase& c, const RecurrentInputs& in) {
  const bool batch_major = c.layout == 1;
  auto state_layout = [&](const Tensor& t) { return batch_major && t.defined() ? Permute(t, {1, 0, 2}) : t; };
  const int elem = c.type == DataType::kFloat ? kOnnxFloat : kOnnxDouble;
  const std::vector<std::pair<std::string, Tensor>> inputs = {{"X", batch_major ? Permute(in.x, {1, 0, 2}) : in.x},
                                                              {"W", in.w},
                                                              {"R", in.r},
                                                              {"B", in.b},
                                                              {"sequence_lens", in.lengths},
                                                              {"initial_h", state_layout(in.h0)},
                                                              {"initial_c", state_layout(in.c0)},
                                                              {"P", in.p}};
  GraphProtoBuilder graph("rnn");
  Session::NamedValues feeds;
  std::vector<std::string> names;
  for (const auto& [name, value] : inputs) {
    names.push_back(value.defined() ? name : "");
    if (!value.defined()) continue;
    graph.Input(name, TensorType(name == "sequence_lens" ? kOnnxInt32 : elem));
    feeds.emplace_back(name, Value(value));
  }
  while (names.back().empty()) names.pop_back();
  std::vector<std::string> outputs = {"Y", "Y_h"};
  if (c.op == "LSTM") outputs.push_back("Y_c");
  for (const std::string& o : outputs) graph.Output(o, TensorType(elem));
  onnx::NodeProto& node = graph.Node(c.op, names, outputs);
  SetAttr(node, "hidden_size", c.hidden);
  if (c.direction != "forward") {
    auto* a = node.add_attribute();
    a->set_name("direction");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(c.direction);
  }
  if (c.layout != 0) SetAttr(node, "layout", c.layout);
  if (!c.activations.empty()) AddStringsAttr(node, "activations", c.activations);
  if (!c.alphas.empty()) AddFloatsAttr(node, "activation_alpha", c.alphas, true);
  if (!c.betas.empty()) AddFloatsAttr(node, "activation_beta", c.betas, true);
  if (c.clip > 0) AddFloatsAttr(node, "clip", {c.clip}, false);
  if (c.linear_before_reset) SetAttr(node, "linear_before_reset", int64_t{1});
  if (c.input_forget) SetAttr(node, "input_forget", int64_t{1});
  return {std::move(graph), std::move(feeds)};
}

// Runs `c` on the CPU EP and on the simulated device EP and checks every output against the reference.
void RunCase(const RecurrentCase& c) {
  const RecurrentInputs in = MakeInputs(c);
  const RecurrentOutputs ref = Reference(c, in);
  const bool batch_major = c.layout == 1;
  auto state_layout = [&](const Tensor& t) { return batch_major ? Permute(t, {1, 0, 2}) : t; };
  std::vector<Tensor> expected = {batch_major ? Permute(ref.y, {2, 0, 1, 3}) : ref.y, state_layout(ref.y_h)};
  if (c.op == "LSTM") expected.push_back(state_layout(ref.y_c));
  const auto [graph, feeds] = BuildModel(c, in);
  const double absolute = c.type == DataType::kFloat ? 2e-5 : 1e-12;
  const double relative = c.type == DataType::kFloat ? 2e-4 : 1e-10;
  for (const std::string ep : {"cpu", "testing"}) {
    const std::vector<Value> out = RunModel(graph.proto(), c.opset, feeds, ep);
    ASSERT_EQ(out.size(), expected.size()) << ep;
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(CompareTensors(expected[i], out[i].tensor(), absolute, relative), "") << ep << ", output " << i;
  }
}

std::string FailureOf(const RecurrentCase& c) {
  const RecurrentInputs in = MakeInputs(c);
  const auto [graph, feeds] = BuildModel(c, in);
  try {
    RunModel(graph.proto(), c.opset, feeds, "cpu");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RnnOpTest, ForwardWithoutBiasOpset7) { RunCase({.op = "RNN", .opset = 7, .bias = false}); }

TEST(RnnOpTest, BidirectionalWithStateAndShortSequences) {
  RunCase(
      {.op = "RNN", .seq = 5, .batch = 4, .direction = "bidirectional", .initial_h = true, .lengths = {5, 3, 0, 1}});
}

TEST(RnnOpTest, ReverseLeakyReluWithClipBatchMajor) {
  RunCase({.op = "RNN",
           .direction = "reverse",
           .initial_h = true,
           .lengths = {2, 4, 3},
           .layout = 1,
           .activations = {"LeakyRelu"},
           .alphas = {0.3f},
           .clip = 0.7f});
}

TEST(RnnOpTest, DoubleBidirectionalWithTwoActivations) {
  RunCase({.op = "RNN",
           .type = DataType::kDouble,
           .direction = "bidirectional",
           .initial_h = true,
           .activations = {"Softsign", "Relu"}});
}

TEST(GruOpTest, ForwardDefaultsOpset3) { RunCase({.op = "GRU", .opset = 3, .initial_h = true}); }

TEST(GruOpTest, BidirectionalLinearBeforeResetShortSequencesBatchMajor) {
  RunCase({.op = "GRU",
           .seq = 5,
           .batch = 4,
           .direction = "bidirectional",
           .initial_h = true,
           .lengths = {1, 5, 0, 3},
           .layout = 1,
           .linear_before_reset = true});
}

TEST(GruOpTest, ReverseCustomActivationsWithClip) {
  RunCase({.op = "GRU",
           .direction = "reverse",
           .initial_h = true,
           .lengths = {3, 4, 2},
           .activations = {"HardSigmoid", "Softsign"},
           .alphas = {0.3f},
           .betas = {0.4f},
           .clip = 0.9f});
}

TEST(GruOpTest, DoubleBidirectionalWithoutBias) {
  RunCase({.op = "GRU", .type = DataType::kDouble, .direction = "bidirectional", .bias = false});
}

TEST(GruOpTest, LargerHiddenLinearBeforeReset) {
  RunCase({.op = "GRU", .seq = 6, .batch = 5, .input = 33, .hidden = 40, .linear_before_reset = true, .seed = 7});
}

TEST(LstmOpTest, ForwardPeepholesWithInitialState) {
  RunCase({.op = "LSTM", .initial_h = true, .initial_c = true, .peepholes = true});
}

TEST(LstmOpTest, BidirectionalInputForgetClipShortSequencesBatchMajor) {
  RunCase({.op = "LSTM",
           .seq = 5,
           .batch = 4,
           .direction = "bidirectional",
           .initial_h = true,
           .initial_c = true,
           .peepholes = true,
           .lengths = {4, 0, 5, 2},
           .layout = 1,
           .clip = 0.8f,
           .input_forget = true});
}

TEST(LstmOpTest, ParameterizedActivationsPerDirection) {
  // alpha/beta are consumed in order by the functions that take them: Affine(a0, b0), ScaledTanh(a1, b1),
  // Elu(a2), HardSigmoid(a3, b2), ThresholdedRelu(default alpha).
  RunCase({.op = "LSTM",
           .direction = "bidirectional",
           .initial_c = true,
           .activations = {"Affine", "ScaledTanh", "Elu", "HardSigmoid", "Softplus", "ThresholdedRelu"},
           .alphas = {0.5f, 1.5f, 0.7f, 0.25f},
           .betas = {0.1f, 0.8f, 0.45f}});
}

TEST(LstmOpTest, ReverseOpset1Double) {
  RunCase({.op = "LSTM",
           .opset = 1,
           .type = DataType::kDouble,
           .direction = "reverse",
           .initial_h = true,
           .peepholes = true,
           .lengths = {1, 4, 3}});
}

TEST(LstmOpTest, LargerHiddenForward) {
  RunCase({.op = "LSTM", .seq = 7, .batch = 5, .input = 33, .hidden = 48, .initial_h = true, .seed = 11});
}

TEST(RecurrentOpTest, RejectsBadShapesAndAttributes) {
  EXPECT_NE(
      FailureOf({.op = "LSTM", .activations = {"Sigmoid", "Tanh", "Swish"}}).find("unsupported activation 'Swish'"),
      std::string::npos);
  EXPECT_NE(FailureOf({.op = "GRU", .activations = {"Sigmoid", "Tanh", "Tanh"}}).find("'activations' has 3 entries"),
            std::string::npos);
  EXPECT_NE(FailureOf({.op = "RNN", .lengths = {1, 9, 2}}).find("sequence_lens[1] = 9"), std::string::npos);
}

}  // namespace
}  // namespace tessera::test
