// Optional operators of the CPU EP: Optional, OptionalHasElement, OptionalGetElement.
//
// An optional travels as the Value it holds (a tensor or a sequence), and an empty optional as a none
// Value, so wrapping and unwrapping never copy. KernelContext::InputValue reports an empty optional
// and an omitted input alike (nullptr); for these ops both mean "no element" (OptionalHasElement-18
// defines an omitted input as empty).
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

class OptionalKernel : public Kernel {
 public:
  explicit OptionalKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    ctx.SetOutput(0, input != nullptr ? *input : Value());
  }
};

class OptionalHasElementKernel : public Kernel {
 public:
  explicit OptionalHasElementKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    ctx.Output(0, DataType::kBool, Shape{}).Data<bool>()[0] = ctx.InputValue(0) != nullptr;
  }
};

class OptionalGetElementKernel : public Kernel {
 public:
  explicit OptionalGetElementKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    if (input == nullptr)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(),
           ": the optional input is empty; it has no element to get");
    ctx.SetOutput(0, *input);
  }
};

KernelDef Def(const char* op) {
  KernelDef def;
  def.op_type = op;
  def.since_version = 15;
  def.until_version = kLastOpset;
  def.may_alias = true;
  return def;
}

}  // namespace

void RegisterOptionalKernels(KernelRegistry& registry) {
  registry.Register<OptionalKernel>(Def("Optional"));
  registry.Register<OptionalHasElementKernel>(Def("OptionalHasElement"));
  registry.Register<OptionalGetElementKernel>(Def("OptionalGetElement"));
}

}  // namespace tessera::cpu
