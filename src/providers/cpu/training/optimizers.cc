// Optimizer steps of the ai.onnx.preview.training domain: Adagrad, Momentum and Adam (opset 1).
//
// Inputs are R (learning rate, scalar), T (update count, int64 scalar), then n tensors to optimize X,
// their gradients G and the optimizer's per-tensor state (Adagrad: H; Momentum: V; Adam: V then H), each
// group of n in order. Outputs are the n new X, then the new state tensors in the same order. Each state
// tensor must have its X's shape. Arithmetic is in double; results are stored in X's type.
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

inline constexpr char kTrainingDomain[] = "ai.onnx.preview.training";
using OptimizerTypes = TypeList<float, double>;

// The scalars of one step, shared by every tensor it updates.
struct Step {
  double rate = 0;
  int64_t count = 0;
};

// One element of each algorithm: x and its state in place, g the gradient.
struct AdagradUpdate {
  explicit AdagradUpdate(const Node& node, const Step& step)
      : rate(step.rate / (1 + static_cast<double>(step.count) * node.GetFloat("decay_factor", 0.0f))),
        norm(node.GetFloat("norm_coefficient", 0.0f)),
        epsilon(node.GetFloat("epsilon", 1e-6f)) {}
  void operator()(double& x, double g, double& h, double&) const {
    const double regularized = norm * x + g;
    h += regularized * regularized;
    x -= rate * regularized / (std::sqrt(h) + epsilon);
  }
  double rate, norm, epsilon;
};

struct MomentumUpdate {
  explicit MomentumUpdate(const Node& node, const Step& step)
      : rate(step.rate),
        alpha(node.GetFloat("alpha")),
        beta(step.count > 0 ? node.GetFloat("beta") : 1.0),
        norm(node.GetFloat("norm_coefficient")),
        nesterov(IsNesterov(node)) {}
  void operator()(double& x, double g, double& v, double&) const {
    const double regularized = norm * x + g;
    v = alpha * v + beta * regularized;
    x -= rate * (nesterov ? regularized + alpha * v : v);
  }
  static bool IsNesterov(const Node& node) {
    const std::string mode = node.GetString("mode");
    if (mode != "standard" && mode != "nesterov")
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": mode must be 'standard' or 'nesterov', not '", mode, "'");
    return mode == "nesterov";
  }
  double rate, alpha, beta, norm;
  bool nesterov;
};

struct AdamUpdate {
  explicit AdamUpdate(const Node& node, const Step& step)
      : alpha(node.GetFloat("alpha", 0.9f)),
        beta(node.GetFloat("beta", 0.999f)),
        norm(node.GetFloat("norm_coefficient", 0.0f)),
        norm_post(node.GetFloat("norm_coefficient_post", 0.0f)),
        epsilon(node.GetFloat("epsilon", 1e-6f)),
        rate(AdjustedRate(step, alpha, beta)) {}
  void operator()(double& x, double g, double& v, double& h) const {
    const double regularized = norm * x + g;
    v = alpha * v + (1 - alpha) * regularized;
    h = beta * h + (1 - beta) * regularized * regularized;
    x = (1 - norm_post) * (x - rate * v / (std::sqrt(h) + epsilon));
  }
  static double AdjustedRate(const Step& step, double alpha, double beta) {
    if (step.count <= 0) return step.rate;
    const auto t = static_cast<double>(step.count);
    return step.rate * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
  }
  double alpha, beta, norm, norm_post, epsilon, rate;
};

// Update: one of the structs above; kStates: state tensors per X (1 or 2).
template <typename Update, int kStates>
class OptimizerKernel : public Kernel {
 public:
  explicit OptimizerKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const size_t groups = 2 + kStates;
    if (ctx.NumInputs() < 2 + groups || (ctx.NumInputs() - 2) % groups != 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": expected 2 + ", groups, " * n inputs, got ",
           ctx.NumInputs());
    const size_t n = (ctx.NumInputs() - 2) / groups;
    const Step step{ReadScalarAsDouble(node, ctx.Input(0), "R"),
                    static_cast<int64_t>(ReadScalarAsDouble(node, ctx.Input(1), "T"))};
    const Update update(node, step);
    for (size_t k = 0; k < n; ++k) {
      const Tensor& x = ctx.Input(2 + k);
      DispatchType(x.type(), OptimizerTypes{}, node,
                   [&](auto tag) { UpdateTensor<typename decltype(tag)::type>(ctx, update, n, k); });
    }
  }

 private:
  template <typename T>
  static void UpdateTensor(KernelContext& ctx, const Update& update, size_t n, size_t k) {
    const Tensor& x = ctx.Input(2 + k);
    const Tensor& g = CheckedLike(ctx, x, 2 + n + k);
    const Tensor* state[2] = {&CheckedLike(ctx, x, 2 + 2 * n + k),
                              kStates > 1 ? &CheckedLike(ctx, x, 2 + 3 * n + k) : nullptr};
    T* x_new = ctx.Output(k, x.type(), x.shape()).template Data<T>();
    T* state_new[2] = {ctx.Output(n + k, x.type(), x.shape()).template Data<T>(),
                       kStates > 1 ? ctx.Output(2 * n + k, x.type(), x.shape()).template Data<T>() : nullptr};
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      double xv = x.Data<T>()[i];
      double s0 = state[0]->Data<T>()[i];
      double s1 = kStates > 1 ? state[1]->Data<T>()[i] : 0.0;
      update(xv, g.Data<T>()[i], s0, s1);
      x_new[i] = static_cast<T>(xv);
      state_new[0][i] = static_cast<T>(s0);
      if (kStates > 1) state_new[1][i] = static_cast<T>(s1);
    }
  }

  static const Tensor& CheckedLike(KernelContext& ctx, const Tensor& x, size_t index) {
    const Tensor& t = ctx.Input(index);
    if (t.type() != x.type() || t.shape() != x.shape()) {
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", index, " is ", t.Describe(),
           " but the tensor it belongs to is ", x.Describe());
    }
    return t;
  }
};

template <typename Update, int kStates>
void RegisterOptimizer(KernelRegistry& registry, const std::string& op_type) {
  KernelDef def;
  def.op_type = op_type;
  def.domain = kTrainingDomain;
  def.since_version = 1;
  def.until_version = 1;
  def.host_inputs = {0, 1};
  // The rate and the tensors; 16-bit floats run through the float-compute adapter.
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}, {2, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<OptimizerKernel<Update, kStates>>(std::move(def));
}

}  // namespace

void RegisterTrainingKernels(KernelRegistry& registry) {
  RegisterOptimizer<AdagradUpdate, 1>(registry, "Adagrad");
  RegisterOptimizer<MomentumUpdate, 1>(registry, "Momentum");
  RegisterOptimizer<AdamUpdate, 2>(registry, "Adam");
}

}  // namespace tessera::cpu
