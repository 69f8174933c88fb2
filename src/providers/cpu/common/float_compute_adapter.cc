#include "providers/cpu/common/float_compute_adapter.h"

#include <algorithm>
#include <optional>

#include "providers/cpu/common/half_conversion.h"
#include "tessera/status.h"

namespace tessera::cpu {

namespace {

bool Contains(const std::vector<DataType>& types, DataType t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

// The 16-bit operands of one node, seen as float32 by the wrapped kernel when it is created.
class WidenedInfo : public KernelInfo {
 public:
  WidenedInfo(const KernelInfo& outer, DataType half) : outer_(outer), half_(half) {
    const size_t inputs = outer.node().inputs.size();
    constants_.resize(inputs);
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor* c = outer.ConstantInput(i);
      if (c == nullptr || c->type() != half_) continue;
      Tensor widened = Tensor::Allocate(DataType::kFloat, c->shape());
      ConvertHalfTensor(*c, widened, nullptr);
      constants_[i] = std::move(widened);
    }
  }
  const Node& node() const override { return outer_.node(); }
  ExecutionProvider& ep() const override { return outer_.ep(); }
  const Tensor* ConstantInput(size_t i) const override {
    if (i < constants_.size() && constants_[i]) return &*constants_[i];
    return outer_.ConstantInput(i);
  }
  DataType InputType(size_t i) const override { return Widen(outer_.InputType(i)); }
  DataType OutputType(size_t i) const override { return Widen(outer_.OutputType(i)); }
  std::optional<Shape> InputShape(size_t i) const override { return outer_.InputShape(i); }
  const SubgraphRunner& Subgraph(const std::string& attribute) const override { return outer_.Subgraph(attribute); }
  const KernelSessionSettings& session_settings() const override { return outer_.session_settings(); }

  // The widened constants; they must outlive the wrapped kernel (which may keep pointers into them).
  std::vector<std::optional<Tensor>> TakeConstants() { return std::move(constants_); }

 private:
  DataType Widen(DataType t) const { return t == half_ ? DataType::kFloat : t; }
  const KernelInfo& outer_;
  DataType half_;
  std::vector<std::optional<Tensor>> constants_;
};

// What the wrapped kernel sees when it runs: 16-bit inputs widened, float32 outputs collected for rounding.
class WidenedContext : public KernelContext {
 public:
  WidenedContext(KernelContext& outer, DataType half, const std::vector<DataType>& output_types)
      : outer_(outer), half_(half), output_types_(output_types) {
    inputs_.resize(outer.NumInputs());
    widened_.resize(outer.NumInputs());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Value* v = outer.InputValue(i);
      if (v == nullptr || !v->is_tensor() || v->tensor().type() != half_) {
        inputs_[i] = v;
        continue;
      }
      Tensor widened = Tensor::Allocate(DataType::kFloat, v->tensor().shape(), outer.allocator());
      ConvertHalfTensor(v->tensor(), widened, &outer.thread_pool());
      widened_[i] = Value(std::move(widened));
      inputs_[i] = &widened_[i];
    }
    results_.resize(outer.NumOutputs());
  }

  const Node& node() const override { return outer_.node(); }
  size_t NumInputs() const override { return inputs_.size(); }
  const Value* InputValue(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t NumOutputs() const override { return outer_.NumOutputs(); }
  Tensor& Output(size_t i, DataType type, const Shape& shape) override {
    if (type != DataType::kFloat || !Narrows(i)) return outer_.Output(i, type, shape);
    results_.at(i) = Value(Tensor::Allocate(DataType::kFloat, shape, outer_.allocator()));
    return results_[i].tensor();
  }
  void SetOutput(size_t i, Value value) override {
    if (value.is_tensor() && value.tensor().type() == DataType::kFloat && Narrows(i)) {
      results_.at(i) = std::move(value);
      return;
    }
    outer_.SetOutput(i, std::move(value));
  }
  Stream* stream() const override { return outer_.stream(); }
  const ThreadPool& thread_pool() const override { return outer_.thread_pool(); }
  const AllocatorPtr& allocator() const override { return outer_.allocator(); }
  const Value* OuterScopeValue(const std::string& name) const override { return outer_.OuterScopeValue(name); }
  bool terminate_requested() const override { return outer_.terminate_requested(); }
  bool preparing_only() const override { return outer_.preparing_only(); }

  // Rounds the float32 results into the node's 16-bit outputs.
  void Finish() {
    for (size_t i = 0; i < results_.size(); ++i) {
      if (!results_[i].is_tensor()) continue;
      const Tensor& result = results_[i].tensor();
      Tensor& out = outer_.Output(i, half_, result.shape());
      ConvertHalfTensor(result, out, &outer_.thread_pool());
    }
  }

 private:
  // Whether output i is a 16-bit value in the graph (a float32 result is rounded to it). Outputs of unknown
  // type follow the node's 16-bit inputs.
  bool Narrows(size_t i) const {
    const DataType declared = i < output_types_.size() ? output_types_[i] : DataType::kUndefined;
    return declared == half_ || declared == DataType::kUndefined;
  }

  KernelContext& outer_;
  DataType half_;
  const std::vector<DataType>& output_types_;
  std::vector<const Value*> inputs_;
  std::vector<Value> widened_;
  std::vector<Value> results_;
};

class FloatComputeKernel : public Kernel {
 public:
  FloatComputeKernel(const KernelInfo& info, DataType half, const KernelFactory& create) : half_(half) {
    for (size_t i = 0; i < info.node().outputs.size(); ++i) output_types_.push_back(info.OutputType(i));
    WidenedInfo widened(info, half);
    inner_ = create(widened);
    constants_ = widened.TakeConstants();
  }
  void Compute(KernelContext& ctx) const override {
    WidenedContext widened(ctx, half_, output_types_);
    inner_->Compute(widened);
    widened.Finish();
  }

 private:
  DataType half_;
  std::vector<DataType> output_types_;
  std::vector<std::optional<Tensor>> constants_;  // before inner_: destroyed after it
  std::unique_ptr<Kernel> inner_;
};

}  // namespace

void AddFloatComputeAdapters(KernelRegistry& registry) {
  const std::vector<KernelRegistration> natives = registry.all();  // a copy: registering grows the list
  for (const KernelRegistration& native : natives) {
    for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
      KernelDef def = native.def;
      bool adapts = false;
      for (auto& [index, types] : def.input_types) {
        if (!Contains(types, DataType::kFloat) || Contains(types, half)) continue;
        types = {half};
        adapts = true;
      }
      if (!adapts) continue;
      // Inputs that accept float32 and already accept this type natively: the wrapped kernel sees float32.
      for (auto& [index, types] : def.input_types)
        if (Contains(types, DataType::kFloat) && Contains(types, half)) types = {half};
      def.computes_in_float32 = true;
      KernelFactory create = native.create;
      registry.Register(std::move(def), [half, create](const KernelInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<FloatComputeKernel>(info, half, create);
      });
    }
  }
}

}  // namespace tessera::cpu
