// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12+).
//
// Both read an input of shape [N, C, d1, ..., dk] (scores or log-probabilities over C classes) and a
// target of shape [N, d1, ..., dk] holding class indices. Internally the input is viewed as [N, C, D]
// with D = d1 * ... * dk, so that class c of sample (n, d) sits at (n * C + c) * D + d. Sums accumulate
// in double; results are stored in the input's type.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

using LossTypes = TypeList<float, double, Float16, BFloat16>;

enum class Reduction { kNone, kSum, kMean };

Reduction ParseReduction(const Node& node) {
  const std::string reduction = node.GetString("reduction", "mean");
  if (reduction == "none") return Reduction::kNone;
  if (reduction == "sum") return Reduction::kSum;
  if (reduction == "mean") return Reduction::kMean;
  Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute reduction must be 'none', 'sum' or 'mean', not '",
       reduction, "'");
}

// The attributes both losses share.
struct LossAttributes {
  explicit LossAttributes(const Node& node)
      : reduction(ParseReduction(node)),
        has_ignore_index(node.HasAttribute("ignore_index")),
        ignore_index(node.GetInt("ignore_index", 0)) {}

  Reduction reduction;
  bool has_ignore_index;
  int64_t ignore_index;
};

// The [N, C, D] view of the input, checked against the target's and the weight's shapes.
struct LossGeometry {
  int64_t n = 0, classes = 0, inner = 0;
};

LossGeometry CheckShapes(const Node& node, const Tensor& input, const Tensor& target, const Tensor* weight) {
  const Shape& x = input.shape();
  const Shape& t = target.shape();
  bool ok = x.rank() >= 2 && t.rank() == x.rank() - 1 && t[0] == x[0];
  for (size_t d = 2; ok && d < x.rank(); ++d) ok = t[d - 1] == x[d];
  if (!ok) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": target of shape ", t.ToString(),
         " does not match input of shape ", x.ToString(), " (expected [N, C, d1..dk] and [N, d1..dk])");
  }
  if (weight != nullptr &&
      (weight->shape().rank() != 1 || weight->shape()[0] != x[1] || weight->type() != input.type())) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": weight ", weight->Describe(), " must be a vector of ", x[1],
         " values of the input's type");
  }
  if (target.type() != DataType::kInt32 && target.type() != DataType::kInt64) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": target must be int32 or int64, got ",
         DataTypeName(target.type()));
  }
  return {x[0], x[1], x.SizeFrom(2)};
}

std::vector<int64_t> ReadLabels(const Tensor& target) {
  std::vector<int64_t> labels(static_cast<size_t>(target.NumElements()));
  if (target.type() == DataType::kInt32) {
    std::copy(target.Data<int32_t>(), target.Data<int32_t>() + labels.size(), labels.begin());
  } else {
    std::copy(target.Data<int64_t>(), target.Data<int64_t>() + labels.size(), labels.begin());
  }
  return labels;
}

// Computes the loss from log-probabilities `log_prob` ([N, C, D], element type V) and writes output 0.
// Ignored targets contribute neither loss nor weight; "mean" divides by the summed weights of the rest.
template <typename T, typename V>
void WriteNegativeLogLikelihood(KernelContext& ctx, const LossAttributes& attributes, const LossGeometry& g,
                                const V* log_prob, const Tensor& target, const Tensor* weight) {
  const std::vector<int64_t> labels = ReadLabels(target);
  const T* weights = weight != nullptr ? weight->Data<T>() : nullptr;
  std::vector<double> losses(labels.size());
  double weight_sum = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.inner; ++d) {
      const size_t i = static_cast<size_t>(n * g.inner + d);
      const int64_t label = labels[i];
      if (attributes.has_ignore_index && label == attributes.ignore_index) continue;
      if (label < 0 || label >= g.classes) {
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": target value ", label, " at index ", i,
             " is outside [0, ", g.classes, ")");
      }
      const double w = weights != nullptr ? static_cast<double>(Load(weights[label])) : 1.0;
      losses[i] = -w * static_cast<double>(Load(log_prob[(n * g.classes + label) * g.inner + d]));
      weight_sum += w;
    }
  }
  if (attributes.reduction == Reduction::kNone) {
    Tensor& out = ctx.Output(0, DataTypeOf<T>(), target.shape());
    T* y = out.Data<T>();
    for (size_t i = 0; i < losses.size(); ++i) y[i] = Store<T>(losses[i]);
    return;
  }
  double total = 0;
  for (double l : losses) total += l;
  if (attributes.reduction == Reduction::kMean) total /= weight_sum;
  ctx.Output(0, DataTypeOf<T>(), Shape{}).template Data<T>()[0] = Store<T>(total);
}

// NegativeLogLikelihoodLoss(input = log-probabilities, target, weight?).
class NegativeLogLikelihoodLossKernel : public Kernel {
 public:
  explicit NegativeLogLikelihoodLossKernel(const KernelInfo& info) : attributes_(info.node()) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const Tensor& target = ctx.Input(1);
    const Tensor* weight = ctx.OptionalInput(2);
    const LossGeometry g = CheckShapes(ctx.node(), input, target, weight);
    DispatchType(input.type(), LossTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      WriteNegativeLogLikelihood<T>(ctx, attributes_, g, input.Data<T>(), target, weight);
    });
  }

 private:
  LossAttributes attributes_;
};

// log_softmax over the class axis of one sample: in [C, D] -> out [C, D], as double. The class loop is
// outermost so that the inner loops run over contiguous d.
template <typename T>
void LogSoftmaxSample(const T* in, double* out, int64_t classes, int64_t inner, std::vector<double>& scratch) {
  scratch.assign(static_cast<size_t>(inner), -std::numeric_limits<double>::infinity());
  double* max = scratch.data();
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t d = 0; d < inner; ++d) max[d] = std::max(max[d], static_cast<double>(Load(in[c * inner + d])));
  }
  std::vector<double> sum(static_cast<size_t>(inner), 0.0);
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t d = 0; d < inner; ++d) {
      out[c * inner + d] = static_cast<double>(Load(in[c * inner + d])) - max[d];
      sum[d] += std::exp(out[c * inner + d]);
    }
  }
  for (int64_t d = 0; d < inner; ++d) sum[d] = std::log(sum[d]);
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t d = 0; d < inner; ++d) out[c * inner + d] -= sum[d];
  }
}

// SoftmaxCrossEntropyLoss(scores, labels, weights?) -> (loss, log_prob?).
class SoftmaxCrossEntropyLossKernel : public Kernel {
 public:
  explicit SoftmaxCrossEntropyLossKernel(const KernelInfo& info)
      : attributes_(info.node()), wants_log_prob_(info.node().outputs.size() > 1 && !info.node().outputs[1].empty()) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& scores = ctx.Input(0);
    const Tensor& labels = ctx.Input(1);
    const Tensor* weights = ctx.OptionalInput(2);
    const LossGeometry g = CheckShapes(ctx.node(), scores, labels, weights);
    DispatchType(scores.type(), LossTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<double> log_prob(static_cast<size_t>(scores.NumElements()));
      const int64_t sample = g.classes * g.inner;
      const T* x = scores.Data<T>();
      ctx.thread_pool().ParallelFor(
          g.n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(sample, 1)), [&](int64_t begin, int64_t end) {
            std::vector<double> scratch;
            for (int64_t n = begin; n < end; ++n) {
              LogSoftmaxSample(x + n * sample, log_prob.data() + n * sample, g.classes, g.inner, scratch);
            }
          });
      WriteNegativeLogLikelihood<T>(ctx, attributes_, g, log_prob.data(), labels, weights);
      if (wants_log_prob_) {
        T* out = ctx.Output(1, scores.type(), scores.shape()).template Data<T>();
        for (size_t i = 0; i < log_prob.size(); ++i) out[i] = Store<T>(log_prob[i]);
      }
    });
  }

 private:
  LossAttributes attributes_;
  bool wants_log_prob_;
};

KernelDef LossDef(const std::string& op_type) {
  const std::vector<DataType> types = DataTypesOf(LossTypes{});
  KernelDef def;
  def.op_type = op_type;
  def.since_version = 12;
  def.until_version = kLatestOpset;
  def.input_types = {{0, types}, {1, {DataType::kInt32, DataType::kInt64}}, {2, types}};
  return def;
}

}  // namespace

void RegisterLossKernels(KernelRegistry& registry) {
  registry.Register<NegativeLogLikelihoodLossKernel>(LossDef("NegativeLogLikelihoodLoss"));
  registry.Register<SoftmaxCrossEntropyLossKernel>(LossDef("SoftmaxCrossEntropyLoss"));
}

}  // namespace tessera::cpu
