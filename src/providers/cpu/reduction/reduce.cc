// Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare) and ArgMax/ArgMin.
//
// Axes come from the `axes` attribute (older opsets) or the optional second input (ReduceSum 13+,
// the others 18+), read on the host. Adjacent dims that are all reduced or all kept are merged; when
// the reduced dims then form one block the input is an [outer, reduced, inner] problem, otherwise it is
// first transposed so the kept dims lead. Reducing over no axes (noop_with_empty_axes) reduces each
// element on its own, so SumSquare squares, L1 takes the absolute value, and so on.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <ReduceOp Op, typename A>
A Identity() {
  if constexpr (Op == ReduceOp::kMax || Op == ReduceOp::kLogSumExp) return std::numeric_limits<A>::lowest();
  else if constexpr (Op == ReduceOp::kMin) return std::numeric_limits<A>::max();
  else if constexpr (Op == ReduceOp::kProd) return A{1};
  else return A{0};
}

template <ReduceOp Op, typename A>
A Combine(A acc, A v) {
  if constexpr (Op == ReduceOp::kMax || Op == ReduceOp::kLogSumExp) return std::max(acc, v);
  else if constexpr (Op == ReduceOp::kMin) return std::min(acc, v);
  else if constexpr (Op == ReduceOp::kProd) return acc * v;
  else if constexpr (Op == ReduceOp::kL1) return acc + (v < 0 ? -v : v);
  else if constexpr (Op == ReduceOp::kL2 || Op == ReduceOp::kSumSquare) return acc + v * v;
  else return acc + v;
}

template <ReduceOp Op, typename A>
double Finish(A acc, int64_t count) {
  const double v = static_cast<double>(acc);
  if constexpr (Op == ReduceOp::kMean) return v / static_cast<double>(count);
  else if constexpr (Op == ReduceOp::kL2) return std::sqrt(v);
  else if constexpr (Op == ReduceOp::kLogSum) return std::log(v);
  else return v;
}

// y[o, i] = reduce over r of x[o, r, i]; LogSumExp takes a max pass first for stability.
template <ReduceOp Op, typename T>
void ReduceBlocks(const T* x, T* y, int64_t outer, int64_t reduced, int64_t inner, const ThreadPool& pool) {
  using A = Acc<T>;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, reduced * inner));
  pool.ParallelFor(outer, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(inner), sum_exp;
    for (int64_t o = begin; o < end; ++o) {
      const T* xo = x + o * reduced * inner;
      std::fill(acc.begin(), acc.end(), Identity<Op, A>());
      for (int64_t r = 0; r < reduced; ++r)
        for (int64_t i = 0; i < inner; ++i) acc[i] = Combine<Op, A>(acc[i], static_cast<A>(xo[r * inner + i]));
      if constexpr (Op == ReduceOp::kLogSumExp) {
        sum_exp.assign(inner, A{0});
        for (int64_t r = 0; r < reduced; ++r)
          for (int64_t i = 0; i < inner; ++i)
            sum_exp[i] += static_cast<A>(std::exp(static_cast<double>(xo[r * inner + i]) - static_cast<double>(acc[i])));
        for (int64_t i = 0; i < inner; ++i)
          y[o * inner + i] = static_cast<T>(static_cast<double>(acc[i]) + std::log(static_cast<double>(sum_exp[i])));
      } else {
        for (int64_t i = 0; i < inner; ++i) y[o * inner + i] = static_cast<T>(Finish<Op, A>(acc[i], reduced));
      }
    }
  });
}

// The reduction after merging dims: either one [outer, reduced, inner] block, or (several reduced
// groups) a transpose `perm` of `dims` that puts kept dims first, then [kept, reduced, 1].
struct ReducePlan {
  int64_t outer = 1, reduced = 1, inner = 1;
  std::vector<int64_t> dims, perm;  // perm empty when no transpose is needed
};

ReducePlan PlanReduction(const Shape& shape, const std::vector<bool>& is_reduced) {
  std::vector<int64_t> dims;
  std::vector<bool> kinds;
  for (size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i] == 1) continue;  // size-1 dims change nothing whichever kind they are
    if (!kinds.empty() && kinds.back() == is_reduced[i]) dims.back() *= shape[i];
    else dims.push_back(shape[i]), kinds.push_back(is_reduced[i]);
  }
  ReducePlan plan;
  const auto reduced_groups = std::count(kinds.begin(), kinds.end(), true);
  if (reduced_groups <= 1) {
    size_t i = 0;
    for (; i < dims.size() && !kinds[i]; ++i) plan.outer *= dims[i];
    for (; i < dims.size() && kinds[i]; ++i) plan.reduced *= dims[i];
    for (; i < dims.size(); ++i) plan.inner *= dims[i];
    return plan;
  }
  plan.dims = dims;
  for (size_t pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < dims.size(); ++i)
      if (kinds[i] == (pass == 1)) {
        plan.perm.push_back(static_cast<int64_t>(i));
        (pass == 0 ? plan.outer : plan.reduced) *= dims[i];
      }
  return plan;
}

// out = x transposed by perm (out dim k is x dim perm[k]).
template <typename T>
std::vector<T> Transpose(const T* x, const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const size_t rank = dims.size();
  std::vector<int64_t> in_strides(rank, 1), out_dims(rank), strides(rank);
  for (size_t i = rank - 1; i > 0; --i) in_strides[i - 1] = in_strides[i] * dims[i];
  int64_t total = 1;
  for (size_t k = 0; k < rank; ++k) out_dims[k] = dims[perm[k]], strides[k] = in_strides[perm[k]], total *= out_dims[k];
  std::vector<T> out(total);
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t o = 0; o < total; ++o) {
    out[o] = x[offset];
    for (int64_t k = static_cast<int64_t>(rank) - 1; k >= 0; --k) {
      offset += strides[k];
      if (++index[k] < out_dims[k]) break;
      offset -= strides[k] * out_dims[k];
      index[k] = 0;
    }
  }
  return out;
}

// Which axes of `rank` to reduce: from the axes input or attribute; empty means all axes unless
// noop_with_empty_axes, in which case none are.
std::vector<bool> ReducedAxes(KernelContext& ctx, const std::vector<int64_t>& attr_axes, bool noop_with_empty_axes,
                              size_t rank) {
  std::vector<int64_t> axes = attr_axes;
  if (const Tensor* t = ctx.OptionalInput(1)) {
    if (t->type() != DataType::kInt64 || t->shape().rank() > 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axes must be a 1-D int64 tensor, got ", t->Describe());
    axes = t->ToVector<int64_t>();
  }
  std::vector<bool> reduced(rank, axes.empty() && !noop_with_empty_axes);
  for (int64_t a : axes) {
    const size_t axis = static_cast<size_t>(NormalizeAxis(a, static_cast<int64_t>(rank), "axes"));
    if (reduced[axis])
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", a, " appears twice in axes");
    reduced[axis] = true;
  }
  return reduced;
}

Shape ReducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return Shape(std::move(out));
}

template <ReduceOp Op>
class Reduce : public Kernel {
 public:
  explicit Reduce(const KernelInfo& info)
      : axes_(info.node().GetInts("axes")),
        keepdims_(info.node().GetInt("keepdims", 1) != 0),
        noop_with_empty_axes_(info.node().GetInt("noop_with_empty_axes", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<bool> reduced = ReducedAxes(ctx, axes_, noop_with_empty_axes_, x.shape().rank());
    Tensor& y = ctx.Output(0, x.type(), ReducedShape(x.shape(), reduced, keepdims_));
    if (y.NumElements() == 0) return;
    switch (x.type()) {
      case DataType::kFloat: return Run<float>(ctx, x, reduced, y);
      case DataType::kDouble: return Run<double>(ctx, x, reduced, y);
      case DataType::kInt32: return Run<int32_t>(ctx, x, reduced, y);
      case DataType::kInt64: return Run<int64_t>(ctx, x, reduced, y);
      default: Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(x.type()));
    }
  }

 private:
  template <typename T>
  static void Run(KernelContext& ctx, const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
    const ReducePlan plan = PlanReduction(x.shape(), reduced);
    if (plan.perm.empty())
      return ReduceBlocks<Op>(x.Data<T>(), y.Data<T>(), plan.outer, plan.reduced, plan.inner, ctx.thread_pool());
    const std::vector<T> transposed = Transpose(x.Data<T>(), plan.dims, plan.perm);
    ReduceBlocks<Op>(transposed.data(), y.Data<T>(), plan.outer, plan.reduced, 1, ctx.thread_pool());
  }

  std::vector<int64_t> axes_;
  bool keepdims_, noop_with_empty_axes_;
};

template <bool IsMax>
class ArgReduce : public Kernel {
 public:
  explicit ArgReduce(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", 0)),
        keepdims_(info.node().GetInt("keepdims", 1) != 0),
        select_last_(info.node().GetInt("select_last_index", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(shape.rank())));
    std::vector<bool> reduced(shape.rank(), false);
    reduced[axis] = true;
    if (shape[axis] == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot take the index over empty axis ", axis_,
           " of ", shape.ToString());
    Tensor& y = ctx.Output(0, DataType::kInt64, ReducedShape(shape, reduced, keepdims_));
    const int64_t outer = shape.SizeTo(axis), n = shape[axis], inner = shape.SizeFrom(axis + 1);
    switch (x.type()) {
      case DataType::kFloat: return Run<float>(x.Data<float>(), y.Data<int64_t>(), outer, n, inner);
      case DataType::kDouble: return Run<double>(x.Data<double>(), y.Data<int64_t>(), outer, n, inner);
      case DataType::kInt32: return Run<int32_t>(x.Data<int32_t>(), y.Data<int64_t>(), outer, n, inner);
      case DataType::kInt64: return Run<int64_t>(x.Data<int64_t>(), y.Data<int64_t>(), outer, n, inner);
      case DataType::kFloat16: {  // float16 logits: compared as the floats they hold (exact)
        std::vector<float> values(static_cast<size_t>(x.NumElements()));
        const Float16* h = x.Data<Float16>();
        for (size_t i = 0; i < values.size(); ++i) values[i] = ToFloat(h[i]);
        return Run<float>(values.data(), y.Data<int64_t>(), outer, n, inner);
      }
      default: Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(x.type()));
    }
  }

 private:
  template <typename T>
  void Run(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* column = x + o * n * inner + i;
        int64_t best = 0;
        for (int64_t r = 1; r < n; ++r) {
          const T v = column[r * inner], b = column[best * inner];
          const bool better = IsMax ? (v > b || (select_last_ && v == b)) : (v < b || (select_last_ && v == b));
          if (better) best = r;
        }
        y[o * inner + i] = best;
      }
  }

  int64_t axis_;
  bool keepdims_, select_last_;
};

KernelDef Def(const char* op) {
  KernelDef def;
  def.op_type = op;
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64}}};
  def.host_inputs = {1};  // the axes input (opset 13+ ReduceSum, 18+ the others)
  return def;
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  registry.Register<Reduce<ReduceOp::kSum>>(Def("ReduceSum"));
  registry.Register<Reduce<ReduceOp::kMean>>(Def("ReduceMean"));
  registry.Register<Reduce<ReduceOp::kMax>>(Def("ReduceMax"));
  registry.Register<Reduce<ReduceOp::kMin>>(Def("ReduceMin"));
  registry.Register<Reduce<ReduceOp::kProd>>(Def("ReduceProd"));
  registry.Register<Reduce<ReduceOp::kL1>>(Def("ReduceL1"));
  registry.Register<Reduce<ReduceOp::kL2>>(Def("ReduceL2"));
  registry.Register<Reduce<ReduceOp::kLogSum>>(Def("ReduceLogSum"));
  registry.Register<Reduce<ReduceOp::kLogSumExp>>(Def("ReduceLogSumExp"));
  registry.Register<Reduce<ReduceOp::kSumSquare>>(Def("ReduceSumSquare"));
  KernelDef argmax = Def("ArgMax"), argmin = Def("ArgMin");
  for (KernelDef* def : {&argmax, &argmin}) def->input_types[0].push_back(DataType::kFloat16);
  argmax.host_inputs.clear();
  argmin.host_inputs.clear();
  registry.Register<ArgReduce<true>>(std::move(argmax));
  registry.Register<ArgReduce<false>>(std::move(argmin));
}

}  // namespace tessera::cpu
