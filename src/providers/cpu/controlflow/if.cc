// If: runs then_branch or else_branch, chosen by a boolean condition, and forwards the branch's outputs.
//
// The branches take no inputs (they read outer-scope values through the session) and may produce
// outputs of different shapes, or of different kinds when the outputs are optionals (one branch may
// return an empty optional). Outputs are forwarded without copying: they share the branch's buffers.
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

// The value of a condition input: a bool tensor with exactly one element.
bool ReadCondition(const Node& node, const Tensor& cond) {
  if (cond.type() != DataType::kBool || cond.NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": the condition must be a bool tensor with one element, got ",
         cond.Describe());
  return cond.Data<bool>()[0];
}

class IfKernel : public Kernel {
 public:
  explicit IfKernel(const KernelInfo& info)
      : then_branch_(info.Subgraph("then_branch")), else_branch_(info.Subgraph("else_branch")) {
    const Node& node = info.node();
    for (const SubgraphRunner* branch : {&then_branch_, &else_branch_}) {
      if (!branch->graph().inputs.empty())
        Fail(ErrorCode::kInvalidModel, node.Describe(), ": branch '", branch->graph().name,
             "' must take no inputs, has ", branch->graph().inputs.size());
      if (branch->graph().outputs.size() != node.outputs.size())
        Fail(ErrorCode::kInvalidModel, node.Describe(), ": branch '", branch->graph().name, "' has ",
             branch->graph().outputs.size(), " outputs but the node has ", node.outputs.size());
    }
  }

  void Compute(KernelContext& ctx) const override {
    const SubgraphRunner& branch = ReadCondition(ctx.node(), ctx.Input(0)) ? then_branch_ : else_branch_;
    std::vector<Value> outputs = branch.Run(ctx, {});
    for (size_t i = 0; i < outputs.size(); ++i) ctx.SetOutput(i, std::move(outputs[i]));
  }

 private:
  const SubgraphRunner& then_branch_;
  const SubgraphRunner& else_branch_;
};

}  // namespace

void RegisterIfKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "If";
  def.since_version = 1;
  def.until_version = kLastOpset;
  def.host_inputs = {0};
  def.may_alias = true;
  registry.Register<IfKernel>(std::move(def));
}

}  // namespace tessera::cpu
