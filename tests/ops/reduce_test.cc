// Reductions and ArgMax/ArgMin against a naive reference that groups elements by output position.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

using Finisher = std::function<double(const std::vector<double>&)>;

struct ReduceOp {
  const char* name;
  Finisher finish;
};

double Sum(const std::vector<double>& v, const std::function<double(double)>& f) {
  double s = 0;
  for (double x : v) s += f(x);
  return s;
}

std::vector<ReduceOp> AllOps() {
  auto id = [](double x) { return x; };
  return {
      {"ReduceSum", [=](const auto& v) { return Sum(v, id); }},
      {"ReduceMean", [=](const auto& v) { return Sum(v, id) / double(v.size()); }},
      {"ReduceMax", [](const auto& v) { return *std::max_element(v.begin(), v.end()); }},
      {"ReduceMin", [](const auto& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd", [](const auto& v) { double p = 1; for (double x : v) p *= x; return p; }},
      {"ReduceL1", [](const auto& v) { return Sum(v, [](double x) { return std::fabs(x); }); }},
      {"ReduceL2", [](const auto& v) { return std::sqrt(Sum(v, [](double x) { return x * x; })); }},
      {"ReduceLogSum", [=](const auto& v) { return std::log(Sum(v, id)); }},
      {"ReduceLogSumExp", [](const auto& v) { return std::log(Sum(v, [](double x) { return std::exp(x); })); }},
      {"ReduceSumSquare", [](const auto& v) { return Sum(v, [](double x) { return x * x; }); }},
  };
}

Tensor NaiveReduce(const Tensor& x, const std::vector<bool>& reduced, bool keepdims, const Finisher& finish) {
  const Shape& s = x.shape();
  std::vector<int64_t> out_dims, kept_dims;
  for (size_t i = 0; i < s.rank(); ++i) {
    if (!reduced[i]) out_dims.push_back(s[i]), kept_dims.push_back(s[i]);
    else if (keepdims) out_dims.push_back(1);
  }
  const int64_t outputs = Shape(kept_dims).NumElements();
  std::vector<std::vector<double>> groups(outputs);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t rest = i, out = 0, mult = 1;
    for (int64_t d = static_cast<int64_t>(s.rank()) - 1; d >= 0; --d) {
      const int64_t idx = rest % s[d];
      rest /= s[d];
      if (!reduced[d]) out += idx * mult, mult *= s[d];
    }
    groups[out].push_back(x.Data<float>()[i]);
  }
  Tensor y = Tensor::Allocate(DataType::kFloat, Shape(out_dims));
  for (int64_t o = 0; o < outputs; ++o) y.Data<float>()[o] = float(finish(groups[o]));
  return y;
}

// Runs every reduction op over `axes` of `shape` (axes as attribute before opset 18, else as input).
void CheckAll(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims, int opset) {
  std::vector<bool> reduced(shape.rank(), axes.empty());
  for (int64_t a : axes) reduced[a < 0 ? a + static_cast<int64_t>(shape.rank()) : a] = true;
  Tensor x = RandomTensor(DataType::kFloat, shape, 3, 0.5, 1.5);  // positive: LogSum stays defined
  for (const ReduceOp& op : AllOps()) {
    SCOPED_TRACE(op.name);
    OpTester t(op.name, opset);
    t.Attr("keepdims", int64_t{keepdims});
    t.Input("data", x);
    if (!axes.empty()) {
      if (opset >= 18) t.Input("axes", Tensor::FromVector<int64_t>(Shape{int64_t(axes.size())}, axes), true);
      else t.Attr("axes", axes);
    }
    t.Output("reduced", NaiveReduce(x, reduced, keepdims, op.finish)).Tolerance(1e-5, 1e-5);
    t.Run();
  }
}

TEST(ReduceOpTest, LastAxisKeepDims) { CheckAll({3, 4, 5}, {-1}, true, 13); }
TEST(ReduceOpTest, MiddleAxisDropDims) { CheckAll({3, 4, 5}, {1}, false, 13); }
TEST(ReduceOpTest, SeparatedAxesOpset18) { CheckAll({2, 3, 4, 5}, {0, 2}, true, 18); }
TEST(ReduceOpTest, AllAxesByDefault) { CheckAll({2, 3, 4}, {}, false, 13); }
TEST(ReduceOpTest, LeadingAxesOpset18) { CheckAll({4, 3, 2, 6}, {0, 1}, false, 18); }

TEST(ReduceOpTest, ReduceSum13AxesInput) {
  Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4}, 5);
  OpTester t("ReduceSum", 13);
  t.Attr("keepdims", int64_t{0});
  t.Input("data", x).Input("axes", Tensor::FromVector<int64_t>(Shape{2}, {2, 0}));
  t.Output("reduced", NaiveReduce(x, {true, false, true}, false, [](const auto& v) { return Sum(v, [](double d) { return d; }); }));
  t.Run();
}

TEST(ReduceOpTest, NoopWithEmptyAxes) {
  Tensor x = RandomTensor(DataType::kFloat, {2, 3}, 5);
  std::vector<float> squared;
  for (float v : x.ToVector<float>()) squared.push_back(v * v);
  OpTester t("ReduceSumSquare", 18);
  t.Attr("noop_with_empty_axes", int64_t{1});
  t.Input("data", x).Output("reduced", Tensor::FromVector<float>({2, 3}, squared));
  t.Run();
  OpTester sum("ReduceSum", 13);
  sum.Attr("noop_with_empty_axes", int64_t{1});
  sum.Input("data", x).Input("axes", Tensor::FromVector<int64_t>(Shape{0}, {})).Output("reduced", x);
  sum.Run();
}

TEST(ReduceOpTest, Int64Sum) {
  OpTester t("ReduceSum", 11);
  t.Attr("axes", std::vector<int64_t>{1}).Attr("keepdims", int64_t{0});
  t.Input("data", Tensor::FromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  t.Output("reduced", Tensor::FromVector<int64_t>({2}, {6, 15}));
  t.Run();
}

TEST(ReduceOpTest, BadAxisFails) {
  OpTester t("ReduceMean", 13);
  t.Attr("axes", std::vector<int64_t>{3});
  t.Input("data", RandomTensor(DataType::kFloat, {2, 3}, 1)).OutputName("reduced").ExpectFailure("axes");
  t.Run({"cpu"});
}

void CheckArg(bool max, int64_t axis, bool keepdims, bool last) {
  // Few distinct values so ties exist and select_last_index matters.
  Tensor x = RandomTensor(DataType::kInt64, {3, 4, 5}, 9, 0, 3);
  const int64_t dims[3] = {3, 4, 5};
  const int64_t a = axis < 0 ? axis + 3 : axis;
  std::vector<int64_t> out_dims, expected;
  for (int64_t d = 0; d < 3; ++d) {
    if (d != a) out_dims.push_back(dims[d]);
    else if (keepdims) out_dims.push_back(1);
  }
  const int64_t strides[3] = {20, 5, 1};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k) {
        const int64_t idx[3] = {i, j, k};
        if (idx[a] != 0) continue;
        const int64_t base = i * 20 + j * 5 + k;
        int64_t best = 0;
        for (int64_t r = 1; r < dims[a]; ++r) {
          const int64_t v = x.Data<int64_t>()[base + r * strides[a]], b = x.Data<int64_t>()[base + best * strides[a]];
          if ((max ? v > b : v < b) || (last && v == b)) best = r;
        }
        expected.push_back(best);
      }
  OpTester t(max ? "ArgMax" : "ArgMin", 13);
  t.Attr("axis", axis).Attr("keepdims", int64_t{keepdims}).Attr("select_last_index", int64_t{last});
  t.Input("data", x).Output("reduced", Tensor::FromVector<int64_t>(Shape(out_dims), expected));
  t.Run();
}

TEST(ReduceOpTest, ArgMaxArgMin) {
  CheckArg(true, 1, true, false);
  CheckArg(true, -1, false, true);
  CheckArg(false, 0, false, false);
  CheckArg(false, 2, true, true);
}

// float16 logits, as a float16 language model's head gives them (ties: first index, or last with select_last_index).
TEST(ReduceOpTest, ArgMaxArgMinOfFloat16) {
  const std::vector<float> values{0.5f, -2.0f, 3.25f, 3.25f, 1.0f, -7.5f, 4.0f, 0.0f};
  Tensor x = Tensor::Allocate(DataType::kFloat16, Shape{2, 4});
  for (size_t i = 0; i < values.size(); ++i) x.Data<Float16>()[i] = ToFloat16(values[i]);
  for (const bool last : {false, true}) {
    OpTester max("ArgMax", 13);
    max.Attr("axis", int64_t{1}).Attr("keepdims", int64_t{0}).Attr("select_last_index", int64_t{last});
    max.Input("data", x).Output("reduced", Tensor::FromVector<int64_t>({2}, {last ? 3 : 2, 2}));
    max.Run({"cpu"});
    OpTester min("ArgMin", 13);
    min.Attr("axis", int64_t{0}).Attr("select_last_index", int64_t{last});
    min.Input("data", x).Output("reduced", Tensor::FromVector<int64_t>({1, 4}, {0, 1, 0, 1}));
    min.Run({"cpu"});
  }
}

}  // namespace
}  // namespace tessera::test
