// Sorting ops: TopK (all versions; k is an attribute before opset 10 and an input after, `largest` and
// `sorted` exist from opset 11) and Unique (opset 11, flattened or along an axis).
//
// Ties keep the lower index first, as the ONNX reference does, for both largest and smallest.
#include <algorithm>
#include <numeric>
#include <string>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

bool HasOutput(const KernelContext& ctx, size_t i) {
  const Node& node = ctx.node();
  return i < ctx.NumOutputs() && i < node.outputs.size() && !node.outputs[i].empty();
}

// Per-type comparison value: 16-bit floats widen to float so that ordering uses real numbers.
template <typename T>
auto Key(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string_view(v);
  } else {
    return Widen(v);
  }
}

// Calls fn.template operator()<T>() for every numeric type and for strings.
template <typename Fn>
void VisitSortableType(const Node& node, DataType type, Fn&& fn) {
  if (type == DataType::kString) {
    fn.template operator()<std::string>();
    return;
  }
  VisitNumericType(node, type, fn);
}

class TopK : public Kernel {
 public:
  explicit TopK(const KernelInfo& info)
      : k_attribute_(info.node().GetInt("k", -1)),
        axis_(info.node().GetInt("axis", -1)),
        largest_(info.node().GetInt("largest", 1) != 0),
        k_is_input_(info.node().opset >= 10) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const int64_t rank = static_cast<int64_t>(x.shape().rank());
    if (rank == 0) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input must have rank >= 1");
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, rank));
    const int64_t n = x.shape()[axis];
    const int64_t k = ReadK(ctx);
    if (k < 0 || k > n)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": k=", k, " is outside [0, ", n, "] for input ",
           x.shape().ToString());
    Shape out_shape = x.shape();
    out_shape[axis] = k;
    Tensor& values = ctx.Output(0, x.type(), out_shape);
    Tensor& indices = ctx.Output(1, DataType::kInt64, out_shape);
    if (values.NumElements() == 0) return;
    const int64_t outer = x.shape().SizeTo(axis), inner = x.shape().SizeFrom(axis + 1);
    VisitNumericType(ctx.node(), x.type(), [&]<typename T>() {
      Select<T>(ctx, static_cast<const T*>(x.raw_data()), static_cast<T*>(values.raw_data()),
                indices.Data<int64_t>(), outer, n, inner, k);
    });
  }

 private:
  int64_t ReadK(const KernelContext& ctx) const {
    if (!k_is_input_) return k_attribute_;
    const std::vector<int64_t> k = ReadIntParameter(ctx.node(), ctx.Input(1), "K");
    if (k.size() != 1) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": K must hold one value");
    return k[0];
  }

  template <typename T>
  void Select(KernelContext& ctx, const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
              int64_t k) const {
    const bool largest = largest_;
    ctx.thread_pool().ParallelFor(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)),
                                  [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t o = row / inner, j = row % inner;
        const T* base = x + o * n * inner + j;
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          const auto va = Key(base[a * inner]), vb = Key(base[b * inner]);
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t i = 0; i < k; ++i) {
          const int64_t dst = o * k * inner + i * inner + j;
          values[dst] = base[order[static_cast<size_t>(i)] * inner];
          indices[dst] = order[static_cast<size_t>(i)];
        }
      }
    });
  }

  int64_t k_attribute_;
  int64_t axis_;
  bool largest_;
  bool k_is_input_;
};

// Unique: the input is viewed as [outer, n, inner] with n the slices compared (n = all elements and
// outer = inner = 1 without an axis). Slices are ordered lexicographically when sorted, else by first
// occurrence.
class Unique : public Kernel {
 public:
  explicit Unique(const KernelInfo& info)
      : has_axis_(info.node().HasAttribute("axis")),
        axis_(info.node().GetInt("axis", 0)),
        sorted_(info.node().GetInt("sorted", 1) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    VisitSortableType(ctx.node(), x.type(), [&]<typename T>() { Run<T>(ctx, x); });
  }

 private:
  struct Layout {
    int64_t outer = 1, n = 1, inner = 1;
    size_t axis = 0;
  };

  Layout MakeLayout(const Tensor& x) const {
    Layout l;
    if (!has_axis_) {
      l.n = x.NumElements();
      return l;
    }
    l.axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(x.shape().rank())));
    l.outer = x.shape().SizeTo(l.axis);
    l.n = x.shape()[l.axis];
    l.inner = x.shape().SizeFrom(l.axis + 1);
    return l;
  }

  template <typename T>
  void Run(KernelContext& ctx, const Tensor& x) const {
    const Layout l = MakeLayout(x);
    const T* data = static_cast<const T*>(x.raw_data());
    // Compares slices a and b element by element: <0, 0, >0.
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t j = 0; j < l.inner; ++j) {
          const auto va = Key(data[(o * l.n + a) * l.inner + j]), vb = Key(data[(o * l.n + b) * l.inner + j]);
          if (va < vb) return -1;
          if (vb < va) return 1;
        }
      return 0;
    };
    std::vector<int64_t> order(static_cast<size_t>(l.n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });

    // Group equal slices: first occurrence (the smallest index, thanks to the stable sort) and count.
    std::vector<int64_t> first, counts, group_of(static_cast<size_t>(l.n));
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || compare(order[i - 1], order[i]) != 0) {
        first.push_back(order[i]);
        counts.push_back(0);
      }
      group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
    // Output position of each group: sorted order, or order of first occurrence.
    std::vector<int64_t> rank_of(first.size());
    std::iota(rank_of.begin(), rank_of.end(), 0);
    if (!sorted_) {
      std::vector<int64_t> by_first(first.size());
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (size_t r = 0; r < by_first.size(); ++r) rank_of[static_cast<size_t>(by_first[r])] = static_cast<int64_t>(r);
    }
    WriteOutputs<T>(ctx, x, l, data, first, counts, group_of, rank_of);
  }

  template <typename T>
  void WriteOutputs(KernelContext& ctx, const Tensor& x, const Layout& l, const T* data,
                    const std::vector<int64_t>& first, const std::vector<int64_t>& counts,
                    const std::vector<int64_t>& group_of, const std::vector<int64_t>& rank_of) const {
    const int64_t u = static_cast<int64_t>(first.size());
    Shape y_shape = has_axis_ ? x.shape() : Shape{u};
    if (has_axis_) y_shape[l.axis] = u;
    T* y = static_cast<T*>(ctx.Output(0, x.type(), y_shape).raw_data());
    for (int64_t g = 0; g < u; ++g) {
      const int64_t r = rank_of[static_cast<size_t>(g)], src = first[static_cast<size_t>(g)];
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t j = 0; j < l.inner; ++j) y[(o * u + r) * l.inner + j] = data[(o * l.n + src) * l.inner + j];
    }
    if (HasOutput(ctx, 1)) {
      int64_t* indices = ctx.Output(1, DataType::kInt64, Shape{u}).Data<int64_t>();
      for (int64_t g = 0; g < u; ++g) indices[rank_of[static_cast<size_t>(g)]] = first[static_cast<size_t>(g)];
    }
    if (HasOutput(ctx, 2)) {
      int64_t* inverse = ctx.Output(2, DataType::kInt64, Shape{l.n}).Data<int64_t>();
      for (int64_t i = 0; i < l.n; ++i) inverse[i] = rank_of[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
    }
    if (HasOutput(ctx, 3)) {
      int64_t* out_counts = ctx.Output(3, DataType::kInt64, Shape{u}).Data<int64_t>();
      for (int64_t g = 0; g < u; ++g) out_counts[rank_of[static_cast<size_t>(g)]] = counts[static_cast<size_t>(g)];
    }
  }

  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

}  // namespace

void RegisterSortKernels(KernelRegistry& registry) {
  KernelDef topk_v1;
  topk_v1.op_type = "TopK";
  topk_v1.until_version = 9;
  registry.Register<TopK>(std::move(topk_v1));
  KernelDef topk;
  topk.op_type = "TopK";
  topk.since_version = 10;
  topk.host_inputs = {1};
  registry.Register<TopK>(std::move(topk));

  KernelDef unique;
  unique.op_type = "Unique";
  unique.since_version = 11;
  registry.Register<Unique>(std::move(unique));
}

}  // namespace tessera::cpu
