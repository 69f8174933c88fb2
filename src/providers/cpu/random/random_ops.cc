// Random generators: RandomUniform, RandomNormal, their *Like forms, Bernoulli and Multinomial.
//
// With a `seed` attribute an op returns the same tensor on every run (and for any thread count); without
// one each run draws new values. The streams are Tessera's own (common/counter_rng.h): seeded results do
// not reproduce other runtimes' numbers, only their distributions.
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/cpu/common/counter_rng.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

using RandomTypes = FloatTypes;
using BernoulliOutputTypes = TypeList<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                                      uint64_t, Float16, BFloat16, bool>;

// out[i] = draw(i) for i < n, in parallel for large n.
template <typename T, typename Draw>
void Fill(const ThreadPool& pool, T* out, int64_t n, Draw draw) {
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = Store<T>(static_cast<ComputeType<T>>(draw(static_cast<uint64_t>(i))));
  };
  if (n <= kElementwiseParallelThreshold) {
    run(0, n);
  } else {
    pool.ParallelFor(n, kElementwiseGrain, run);
  }
}

// The element type named by attribute `dtype`, or `fallback` when absent.
DataType DtypeAttribute(const Node& node, DataType fallback) {
  if (!node.HasAttribute("dtype")) return fallback;
  const int64_t dtype = node.GetInt("dtype");
  if (dtype < 0 || dtype > INT32_MAX || !IsKnownDataType(static_cast<int32_t>(dtype)))
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute dtype names unknown element type ", dtype);
  return static_cast<DataType>(dtype);
}

// RandomUniform(Like): uniform in [low, high). RandomNormal(Like): mean + scale * N(0, 1).
// The *Like forms take the output shape (and, without dtype, the type) from input 0.
class RandomKernel : public Kernel {
 public:
  RandomKernel(const KernelInfo& info, bool normal, bool like)
      : seeds_(info.node()),
        normal_(normal),
        like_(like),
        a_(normal ? info.node().GetFloat("mean", 0.0f) : info.node().GetFloat("low", 0.0f)),
        b_(normal ? info.node().GetFloat("scale", 1.0f) : info.node().GetFloat("high", 1.0f)),
        shape_(like ? std::vector<int64_t>{} : info.node().GetInts("shape")) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor* like = like_ ? &ctx.Input(0) : nullptr;
    const Shape shape = like != nullptr ? like->shape() : Shape(shape_);
    const DataType type = DtypeAttribute(ctx.node(), like != nullptr ? like->type() : DataType::kFloat);
    const CounterRng rng(seeds_.Next());
    const double a = a_, b = b_;
    DispatchType(type, RandomTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = ctx.Output(0, type, shape).template Data<T>();
      if (normal_) {
        Fill(ctx.thread_pool(), out, shape.NumElements(), [&](uint64_t i) { return a + b * rng.Normal(i); });
      } else {
        Fill(ctx.thread_pool(), out, shape.NumElements(), [&](uint64_t i) { return a + (b - a) * rng.Uniform(i); });
      }
    });
  }

 private:
  SeedSource seeds_;
  bool normal_, like_;
  double a_, b_;
  std::vector<int64_t> shape_;
};

// Bernoulli(p): 1 with probability p[i], else 0, in type dtype (default: p's type).
class BernoulliKernel : public Kernel {
 public:
  explicit BernoulliKernel(const KernelInfo& info) : seeds_(info.node()) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& p = ctx.Input(0);
    const DataType type = DtypeAttribute(ctx.node(), p.type());
    const CounterRng rng(seeds_.Next());
    DispatchType(p.type(), RandomTypes{}, ctx.node(), [&](auto p_tag) {
      using P = typename decltype(p_tag)::type;
      const P* probabilities = p.Data<P>();
      DispatchType(type, BernoulliOutputTypes{}, ctx.node(), [&](auto out_tag) {
        using T = typename decltype(out_tag)::type;
        T* out = ctx.Output(0, type, p.shape()).template Data<T>();
        Fill(ctx.thread_pool(), out, p.NumElements(),
             [&](uint64_t i) { return rng.Uniform(i) < static_cast<double>(Load(probabilities[i])) ? 1.0 : 0.0; });
      });
    });
  }

 private:
  SeedSource seeds_;
};

// Multinomial(input [batch, classes] of unnormalized log-probabilities) -> [batch, sample_size] class
// indices drawn from softmax(input[b]).
class MultinomialKernel : public Kernel {
 public:
  explicit MultinomialKernel(const KernelInfo& info)
      : seeds_(info.node()), samples_(info.node().GetInt("sample_size", 1)) {
    if (samples_ < 1) Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": sample_size must be positive");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    if (x.shape().rank() != 2 || x.shape()[1] < 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input must be [batch, classes], got ", x.Describe());
    const DataType type = DtypeAttribute(ctx.node(), DataType::kInt32);
    if (type != DataType::kInt32 && type != DataType::kInt64)
      Fail(ErrorCode::kInvalidModel, ctx.node().Describe(), ": dtype must be int32 or int64");
    const int64_t batch = x.shape()[0], classes = x.shape()[1];
    const CounterRng rng(seeds_.Next());
    std::vector<int64_t> drawn(static_cast<size_t>(batch * samples_));
    DispatchType(x.type(), RandomTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<double> cumulative(static_cast<size_t>(classes));
      for (int64_t b = 0; b < batch; ++b) {
        CumulativeWeights(x.Data<T>() + b * classes, cumulative);
        for (int64_t s = 0; s < samples_; ++s) {
          const int64_t i = b * samples_ + s;
          const double u = rng.Uniform(static_cast<uint64_t>(i)) * cumulative.back();
          const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
          drawn[static_cast<size_t>(i)] = std::min<int64_t>(it - cumulative.begin(), classes - 1);
        }
      }
    });
    Tensor& out = ctx.Output(0, type, Shape{batch, samples_});
    if (type == DataType::kInt64) {
      std::copy(drawn.begin(), drawn.end(), out.Data<int64_t>());
    } else {
      std::transform(drawn.begin(), drawn.end(), out.Data<int32_t>(),
                     [](int64_t v) { return static_cast<int32_t>(v); });
    }
  }

 private:
  // Running sums of exp(logit - max logit): unnormalized, the draw scales by the total.
  template <typename T>
  static void CumulativeWeights(const T* logits, std::vector<double>& cumulative) {
    double max = -INFINITY;
    for (size_t c = 0; c < cumulative.size(); ++c) max = std::max(max, static_cast<double>(Load(logits[c])));
    double total = 0;
    for (size_t c = 0; c < cumulative.size(); ++c) {
      total += std::exp(static_cast<double>(Load(logits[c])) - max);
      cumulative[c] = total;
    }
  }

  SeedSource seeds_;
  int64_t samples_;
};

void RegisterRandom(KernelRegistry& registry, const std::string& op_type, bool normal, bool like) {
  KernelDef def;
  def.op_type = op_type;
  def.since_version = 1;
  def.until_version = kLatestOpset;
  registry.Register(std::move(def), [normal, like](const KernelInfo& info) {
    return std::make_unique<RandomKernel>(info, normal, like);
  });
}

}  // namespace

void RegisterRandomKernels(KernelRegistry& registry) {
  RegisterRandom(registry, "RandomUniform", false, false);
  RegisterRandom(registry, "RandomNormal", true, false);
  RegisterRandom(registry, "RandomUniformLike", false, true);
  RegisterRandom(registry, "RandomNormalLike", true, true);

  const std::vector<DataType> float_types = DataTypesOf(RandomTypes{});
  KernelDef bernoulli;
  bernoulli.op_type = "Bernoulli";
  bernoulli.since_version = 15;
  bernoulli.until_version = kLatestOpset;
  bernoulli.input_types = {{0, float_types}};
  registry.Register<BernoulliKernel>(std::move(bernoulli));

  KernelDef multinomial;
  multinomial.op_type = "Multinomial";
  multinomial.since_version = 7;
  multinomial.until_version = kLatestOpset;
  multinomial.input_types = {{0, float_types}};
  registry.Register<MultinomialKernel>(std::move(multinomial));
}

}  // namespace tessera::cpu
