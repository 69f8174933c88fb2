// SkipLayerNormalization (ai.tessera and com.microsoft) on the CPU EP and the simulated device EP (which runs
// it on the CPU) against a naive reference of the unfused Add(s) + LayerNormalization.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/skip_layer_norm_model.h"
#include "test_env.h"

namespace tessera::test {
namespace {

std::vector<float> AsFloats(const Tensor& t) {
  std::vector<float> values(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = t.type() == DataType::kFloat16 ? ToFloat(t.Data<Float16>()[i]) : t.Data<float>()[i];
  return values;
}

Tensor FromFloats(DataType type, const Shape& shape, const std::vector<float>& values) {
  if (type == DataType::kFloat) return Tensor::FromVector<float>(shape, values);
  std::vector<Float16> halves;
  for (float v : values) halves.push_back(ToFloat16(v));
  return Tensor::FromVector<Float16>(shape, halves);
}

// `v` stored as `type`, as the unfused Add stores its result.
float Stored(DataType type, float v) { return type == DataType::kFloat16 ? ToFloat(ToFloat16(v)) : v; }

// Offset of output element `i` in an operand broadcast (numpy) to `out`.
int64_t BroadcastOffset(const Shape& operand, const Shape& out, int64_t i) {
  int64_t offset = 0, stride = 1;
  for (size_t d = out.rank(); d-- > 0;) {
    const int64_t index = i % out[d];
    i /= out[d];
    const size_t lead = out.rank() - operand.rank();
    if (d < lead) continue;
    const int64_t size = operand[d - lead];
    if (size != 1) offset += index * stride;
    stride *= size;
  }
  return offset;
}

Shape BroadcastShape(const Shape& a, const Shape& b) {
  std::vector<int64_t> dims(std::max(a.rank(), b.rank()), 1);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t da = k < a.rank() ? a[a.rank() - 1 - k] : 1, db = k < b.rank() ? b[b.rank() - 1 - k] : 1;
    dims[dims.size() - 1 - k] = std::max(da, db);
  }
  return Shape(dims);
}

// {output, sum}: sum = (input + bias) + skip rounded per addition, statistics in double.
std::vector<Tensor> Reference(const SkipLayerNormCase& c, const Session::NamedValues& feeds) {
  std::map<std::string, std::vector<float>> in;
  for (const auto& [name, value] : feeds) in[name] = AsFloats(value.tensor());
  const Shape out = BroadcastShape(c.input, c.skip);
  const int64_t hidden = c.Hidden(), rows = out.NumElements() / hidden;
  std::vector<float> sum(static_cast<size_t>(out.NumElements())), y(sum.size());
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    float x = in["input"][BroadcastOffset(c.input, out, i)];
    if (c.bias) x = Stored(c.type, x + in["bias"][i % hidden]);
    sum[i] = Stored(c.type, x + in["skip"][BroadcastOffset(c.skip, out, i)]);
  }
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < hidden; ++j) mean += sum[r * hidden + j];
    mean /= static_cast<double>(hidden);
    for (int64_t j = 0; j < hidden; ++j) var += (sum[r * hidden + j] - mean) * (sum[r * hidden + j] - mean);
    const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(hidden) + c.epsilon);
    for (int64_t j = 0; j < hidden; ++j)
      y[r * hidden + j] = static_cast<float>((sum[r * hidden + j] - mean) * inv_std * in["gamma"][j] +
                                             (c.beta ? in["beta"][j] : 0.0f));
  }
  return {FromFloats(c.type, out, y), FromFloats(c.type, out, sum)};
}

void ExpectMatchesReference(const SkipLayerNormCase& c, const std::string& ep) {
  const std::string model = SkipLayerNormModel(c);
  const Session::NamedValues feeds = RandomFeeds(c, 7);
  Session session(TestEnv(), model.data(), model.size(), OptionsFor(ep));
  const std::vector<Value> got = session.Run(feeds);
  const std::vector<Tensor> want = Reference(c, feeds);
  ASSERT_EQ(got.size(), c.sum ? 2u : 1u);
  const bool half = c.type == DataType::kFloat16;
  const double absolute = half ? 4e-3 : 1e-5, relative = half ? 2e-3 : 1e-5;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(CompareTensors(want[i], got[i].tensor(), absolute, relative), "")
        << ep << " " << c.domain << " " << c.input.ToString() << " + " << c.skip.ToString() << ", output " << i;
}

void ExpectMatchesReference(const SkipLayerNormCase& c) {
  for (const char* ep : {"cpu", "testing"}) ExpectMatchesReference(c, ep);
}

TEST(SkipLayerNormOpTest, SameShapesWithBeta) {
  SkipLayerNormCase c;
  c.input = c.skip = Shape{2, 3, 16};
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, BiasAndSumOutputInBothDomains) {
  for (const char* domain : {"ai.tessera", "com.microsoft"}) {
    SkipLayerNormCase c;
    c.domain = domain;
    c.input = c.skip = Shape{2, 5, 24};
    c.bias = c.sum = true;
    c.epsilon = 1e-12f;
    ExpectMatchesReference(c);
  }
}

TEST(SkipLayerNormOpTest, WithoutBeta) {
  SkipLayerNormCase c;
  c.input = c.skip = Shape{4, 10};
  c.beta = false;
  c.sum = true;
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, SkipBroadcastsOverLeadingDims) {
  SkipLayerNormCase c;
  c.input = Shape{3, 4, 8};
  c.skip = Shape{4, 8};  // e.g. position embeddings
  c.sum = true;
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, InputBroadcastsAlongTheHiddenAxis) {
  SkipLayerNormCase c;
  c.input = Shape{2, 3, 1};
  c.skip = Shape{2, 1, 12};
  c.bias = c.sum = true;
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, ManyRowsSplitAcrossThreads) {
  SkipLayerNormCase c;
  c.input = c.skip = Shape{96, 256};
  c.bias = true;
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, Float16) {
  SkipLayerNormCase c;
  c.type = DataType::kFloat16;
  c.input = c.skip = Shape{3, 40};
  c.bias = c.sum = true;
  ExpectMatchesReference(c);
}

TEST(SkipLayerNormOpTest, RejectsGammaOfTheWrongLength) {
  SkipLayerNormCase c;
  c.input = c.skip = Shape{2, 8};
  const std::string model = SkipLayerNormModel(c);
  Session::NamedValues feeds = RandomFeeds(c, 3);
  feeds[2].second = Value(RandomTensor(DataType::kFloat, {4}, 5));
  Session session(TestEnv(), model.data(), model.size(), OptionsFor("cpu"));
  try {
    session.Run(feeds);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gamma"), std::string::npos) << e.what();
  }
}

// ai.tessera::MatMulSkipLayerNormalization's operand checks (tessera/ep/matmul_skip_layer_norm_geometry.h): each bad
// operand is named.
TEST(SkipLayerNormOpTest, FusedProductRejectsOperandsNamingThem) {
  struct Case {
    Shape a, b, skip;
    int64_t gamma;
    const char* message;
  } cases[] = {
      {{2, 3, 8}, {6, 4}, {2, 3, 4}, 4, "do not multiply"},  // K 8 against 6
      {{2, 3, 8}, {8, 4}, {2, 3, 4}, 5, "gamma"},            // 5 values for 4 features
      {{3, 8}, {8, 4}, {2, 3, 4}, 4, "widens"},              // a skip of higher rank than the product
  };
  for (const Case& c : cases) {
    OpTester t("MatMulSkipLayerNormalization", 1, "ai.tessera");
    t.Input("A", RandomTensor(DataType::kFloat, c.a, 1)).Input("B", RandomTensor(DataType::kFloat, c.b, 2), true);
    t.Input("skip", RandomTensor(DataType::kFloat, c.skip, 3));
    t.Input("gamma", RandomTensor(DataType::kFloat, {c.gamma}, 4));
    t.OutputName("Y").ExpectFailure(c.message);
    t.Run({"cpu"});
  }
}

}  // namespace
}  // namespace tessera::test
