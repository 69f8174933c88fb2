// Einsum (opset 12): a general tensor contraction described by an equation such as "bij,bjk->bik".
//
// The equation is compiled once per input-shape set into a label table: every distinct label (letters,
// plus one label per broadcast ellipsis dimension) gets a size, and every input gets a stride per label
// (repeated labels in one term add their strides, which walks the diagonal; broadcast size-1 dims get
// stride 0). The output then is a loop over output labels with an inner sum over the remaining labels.
// Without "->" the output is the ellipsis dims followed by the letters used once, alphabetically.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

// One term of the equation: letters, with kEllipsis marking where "..." stands.
constexpr int kEllipsis = -1;
using Term = std::vector<int>;

Term ParseTerm(const Node& node, const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (text.compare(i, 3, "...") != 0 || std::count(term.begin(), term.end(), kEllipsis) != 0)
        Fail(ErrorCode::kInvalidModel, node.Describe(), ": malformed ellipsis in equation term '", text, "'");
      term.push_back(kEllipsis);
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      term.push_back(ch);
    } else {
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": invalid character '", ch, "' in equation");
    }
  }
  return term;
}

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Equation ParseEquation(const Node& node) {
  const std::string text = node.GetString("equation");
  Equation eq;
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    eq.inputs.push_back(ParseTerm(node, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    eq.explicit_output = true;
    eq.output = ParseTerm(node, text.substr(arrow + 2));
  }
  return eq;
}

// The contraction for concrete input shapes: label sizes, per-input strides, output labels first.
struct Contraction {
  std::vector<int64_t> sizes;                 // per label; output labels are [0, num_output)
  size_t num_output = 0;
  std::vector<std::vector<int64_t>> strides;  // [input][label]
  Shape output_shape;
};

Contraction Plan(const Node& node, const Equation& eq, const std::vector<const Tensor*>& inputs) {
  if (eq.inputs.size() != inputs.size())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": equation has ", eq.inputs.size(), " terms for ",
         inputs.size(), " inputs");
  // Labels are keys: letters as their char code, ellipsis dims as -1 - (position from the right).
  size_t ellipsis_rank = 0;
  std::vector<std::vector<int>> keys(inputs.size());
  for (size_t t = 0; t < inputs.size(); ++t) {
    const Term& term = eq.inputs[t];
    const size_t rank = inputs[t]->shape().rank();
    const bool has_ellipsis = std::count(term.begin(), term.end(), kEllipsis) != 0;
    const size_t letters = term.size() - (has_ellipsis ? 1 : 0);
    if (rank < letters || (!has_ellipsis && rank != letters))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", t, " of shape ", inputs[t]->shape().ToString(),
           " does not match its equation term");
    const size_t e = rank - letters;
    ellipsis_rank = std::max(ellipsis_rank, e);
    for (int label : term) {
      if (label != kEllipsis) keys[t].push_back(label);
      else
        for (size_t d = 0; d < e; ++d) keys[t].push_back(-1 - static_cast<int>(e - 1 - d));
    }
  }
  std::vector<int> output;
  if (eq.explicit_output) {
    for (int label : eq.output) {
      if (label != kEllipsis) output.push_back(label);
      else
        for (size_t d = 0; d < ellipsis_rank; ++d) output.push_back(-1 - static_cast<int>(ellipsis_rank - 1 - d));
    }
  } else {
    for (size_t d = 0; d < ellipsis_rank; ++d) output.push_back(-1 - static_cast<int>(ellipsis_rank - 1 - d));
    std::map<int, int> uses;
    for (const auto& k : keys)
      for (int label : k)
        if (label >= 0) ++uses[label];
    for (const auto& [label, count] : uses)
      if (count == 1) output.push_back(label);
  }
  // Label order: output labels, then summed labels in order of appearance.
  std::vector<int> order = output;
  for (const auto& k : keys)
    for (int label : k)
      if (std::find(order.begin(), order.end(), label) == order.end()) order.push_back(label);
  auto index_of = [&](int label) { return static_cast<size_t>(std::find(order.begin(), order.end(), label) - order.begin()); };

  Contraction c;
  c.num_output = output.size();
  c.sizes.assign(order.size(), 1);
  for (size_t t = 0; t < inputs.size(); ++t)
    for (size_t d = 0; d < keys[t].size(); ++d) {
      const int64_t dim = inputs[t]->shape()[d];
      int64_t& size = c.sizes[index_of(keys[t][d])];
      if (dim != 1 && size != 1 && dim != size)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": label size mismatch (", dim, " vs ", size, ")");
      if (dim != 1) size = dim;
    }
  c.strides.assign(inputs.size(), std::vector<int64_t>(order.size(), 0));
  for (size_t t = 0; t < inputs.size(); ++t) {
    const Shape& shape = inputs[t]->shape();
    for (size_t d = 0; d < keys[t].size(); ++d)
      if (shape[d] != 1) c.strides[t][index_of(keys[t][d])] += shape.SizeFrom(d + 1);
  }
  for (size_t i = 0; i < c.num_output; ++i) c.output_shape.dims().push_back(c.sizes[i]);
  return c;
}

class Einsum : public Kernel {
 public:
  explicit Einsum(const KernelInfo& info) : equation_(ParseEquation(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) inputs.push_back(&ctx.Input(i));
    if (inputs.empty()) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": needs at least one input");
    const Contraction c = Plan(ctx.node(), equation_, inputs);
    Tensor& y = ctx.Output(0, inputs[0]->type(), c.output_shape);
    VisitNumericType(ctx.node(), inputs[0]->type(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": bool inputs are not supported");
      } else {
        Contract<T>(ctx, c, inputs, static_cast<T*>(y.raw_data()));
      }
    });
  }

 private:
  template <typename T>
  static void Contract(KernelContext& ctx, const Contraction& c, const std::vector<const Tensor*>& inputs, T* y) {
    using Acc = decltype(Widen(T{}));
    const size_t n_in = inputs.size(), n_labels = c.sizes.size();
    int64_t out_count = 1, sum_count = 1;
    for (size_t l = 0; l < n_labels; ++l) (l < c.num_output ? out_count : sum_count) *= c.sizes[l];
    std::vector<const T*> data(n_in);
    for (size_t t = 0; t < n_in; ++t) data[t] = static_cast<const T*>(inputs[t]->raw_data());
    ctx.thread_pool().ParallelFor(out_count, std::max<int64_t>(1, 4096 / std::max<int64_t>(sum_count, 1)),
                                  [&](int64_t begin, int64_t end) {
      std::vector<int64_t> base(n_in), offset(n_in), counter(n_labels);
      for (int64_t o = begin; o < end; ++o) {
        std::fill(base.begin(), base.end(), 0);
        int64_t rem = o;
        for (size_t l = c.num_output; l-- > 0;) {
          const int64_t idx = rem % c.sizes[l];
          rem /= c.sizes[l];
          for (size_t t = 0; t < n_in; ++t) base[t] += idx * c.strides[t][l];
        }
        Acc sum{0};
        std::fill(counter.begin(), counter.end(), 0);
        offset = base;
        for (int64_t s = 0; s < sum_count; ++s) {
          Acc product{1};
          for (size_t t = 0; t < n_in; ++t) product *= Widen(data[t][offset[t]]);
          sum += product;
          // Odometer over the summed labels, last label fastest.
          for (size_t l = n_labels; l-- > c.num_output;) {
            for (size_t t = 0; t < n_in; ++t) offset[t] += c.strides[t][l];
            if (++counter[l] < c.sizes[l]) break;
            for (size_t t = 0; t < n_in; ++t) offset[t] -= c.sizes[l] * c.strides[t][l];
            counter[l] = 0;
          }
        }
        y[o] = Narrow<T>(sum);
      }
    });
  }

  Equation equation_;
};

}  // namespace

void RegisterEinsumKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Einsum";
  def.since_version = 12;
  registry.Register<Einsum>(std::move(def));
}

}  // namespace tessera::cpu
