// Loop: runs its body while an optional trip count M is not reached and an optional condition holds.
//
//   inputs:  M (int64 scalar, optional), cond (bool scalar, optional), v_initial... (N loop-carried)
//   body:    (iteration_num, cond_in, v_in...) -> (cond_out, v_out..., scan_out... (K))
//   outputs: v_final... (N), scan_outputs... (K), each scan output the per-iteration values stacked
//            along a new leading axis.
//
// Loop-carried values may be tensors, sequences or optionals (an empty optional travels as a none
// Value). When cond is omitted the body's cond_out is ignored (a for loop); with neither M nor cond the
// loop runs until RunOptions::terminate or RunOptions::timeout_ms stops it. Every iteration's scan outputs must have one element
// type and shape; the spec has no way to stack ragged values, so a mismatch is an error.
#include <optional>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/strided_copy.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

bool ReadCondition(const Node& node, const Value& cond, const char* what) {
  if (!cond.is_tensor() || cond.tensor().type() != DataType::kBool || cond.tensor().NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " must be a bool tensor with one element, got ",
         cond.is_tensor() ? cond.tensor().Describe() : std::string("a non-tensor value"));
  return cond.tensor().Data<bool>()[0];
}

std::optional<int64_t> ReadTripCount(const Node& node, const Tensor* trip_count) {
  if (trip_count == nullptr) return std::nullopt;
  if (trip_count->type() != DataType::kInt64 || trip_count->NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, node.Describe(),
         ": the trip count M must be an int64 tensor with one element, got ", trip_count->Describe());
  const int64_t count = trip_count->Data<int64_t>()[0];
  if (count < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": the trip count M is negative (", count, ")");
  return count;
}

// Copies `src` (dense, host) into `dst` starting at element `offset`.
void CopyElementsAt(const Tensor& src, Tensor& dst, int64_t offset) {
  VisitStorageType(src.type(), [&]<typename S>() {
    std::copy_n(StorageData<S>(src), src.NumElements(), StorageData<S>(dst) + offset);
  });
}

class LoopKernel : public Kernel {
 public:
  explicit LoopKernel(const KernelInfo& info) : body_(info.Subgraph("body")) {
    const Node& node = info.node();
    const Graph& body = body_.graph();
    if (node.inputs.size() < 2)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": needs inputs M and cond (either may be empty), has ",
           node.inputs.size());
    num_carried_ = node.inputs.size() - 2;
    if (body.inputs.size() != num_carried_ + 2 || body.outputs.size() < num_carried_ + 1)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": with ", num_carried_,
           " loop-carried values the body must take ", num_carried_ + 2, " inputs and produce at least ",
           num_carried_ + 1, " outputs; it has ", body.inputs.size(), " and ", body.outputs.size());
    num_scan_ = body.outputs.size() - 1 - num_carried_;
    if (node.outputs.size() > num_carried_ + num_scan_)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": has ", node.outputs.size(), " outputs but the body yields ",
           num_carried_, " loop-carried values and ", num_scan_, " scan outputs");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::optional<int64_t> trip_count = ReadTripCount(node, ctx.OptionalInput(0));
    const bool has_cond = ctx.HasInput(1);
    bool cond = has_cond ? ReadCondition(node, *ctx.InputValue(1), "the condition input") : true;
    std::vector<Value> carried(num_carried_);
    for (size_t i = 0; i < num_carried_; ++i)
      if (const Value* v = ctx.InputValue(2 + i)) carried[i] = *v;
    std::vector<std::vector<Tensor>> scans(num_scan_);
    for (int64_t iteration = 0; (!trip_count || iteration < *trip_count) && cond; ++iteration) {
      if (const std::string reason = ctx.StopReason(); !reason.empty())
        Fail(ErrorCode::kTerminated, node.Describe(), ": stopped by ", reason, " at iteration ", iteration);
      std::vector<Value> inputs;
      inputs.reserve(num_carried_ + 2);
      inputs.emplace_back(Tensor::FromVector<int64_t>(Shape{}, {iteration}));
      inputs.emplace_back(Tensor::FromVector<bool>(Shape{}, {cond}));
      for (Value& v : carried) inputs.push_back(std::move(v));
      std::vector<Value> outputs = body_.Run(ctx, std::move(inputs));
      if (has_cond) cond = ReadCondition(node, outputs[0], "the body's condition output");
      for (size_t i = 0; i < num_carried_; ++i) carried[i] = std::move(outputs[1 + i]);
      for (size_t k = 0; k < num_scan_; ++k) scans[k].push_back(ScanElement(node, outputs[1 + num_carried_ + k], k));
    }
    const size_t produced = std::min(ctx.NumOutputs(), num_carried_ + num_scan_);
    for (size_t i = 0; i < produced; ++i) {
      if (i < num_carried_)
        ctx.SetOutput(i, std::move(carried[i]));
      else
        StackScanOutput(ctx, i, scans[i - num_carried_]);
    }
  }

 private:
  const Tensor& ScanElement(const Node& node, const Value& value, size_t k) const {
    if (!value.is_tensor())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": scan output '",
           body_.graph().outputs[1 + num_carried_ + k].name, "' must be a tensor in every iteration");
    return value.tensor();
  }

  // Writes output `index` = the iterations' values stacked along a new axis 0.
  void StackScanOutput(KernelContext& ctx, size_t index, const std::vector<Tensor>& parts) const {
    const Node& node = ctx.node();
    const ValueInfo& declared = body_.graph().outputs[1 + index];
    if (parts.empty()) {
      ctx.Output(index, EmptyScanType(declared), EmptyScanShape(declared));
      return;
    }
    const Tensor& first = parts.front();
    for (size_t t = 1; t < parts.size(); ++t)
      if (parts[t].type() != first.type() || parts[t].shape() != first.shape())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": scan output '", declared.name, "' is ", first.Describe(),
             " in iteration 0 but ", parts[t].Describe(), " in iteration ", t, "; scan outputs cannot be ragged");
    std::vector<int64_t> dims = {static_cast<int64_t>(parts.size())};
    dims.insert(dims.end(), first.shape().dims().begin(), first.shape().dims().end());
    Tensor& out = ctx.Output(index, first.type(), Shape(std::move(dims)));
    const int64_t stride = first.NumElements();
    for (size_t t = 0; t < parts.size(); ++t) CopyElementsAt(parts[t], out, static_cast<int64_t>(t) * stride);
  }

  // With zero iterations the element type and trailing dims come from the body's declared output.
  static DataType EmptyScanType(const ValueInfo& declared) {
    return declared.type == DataType::kUndefined ? DataType::kFloat : declared.type;
  }
  static Shape EmptyScanShape(const ValueInfo& declared) {
    std::vector<int64_t> dims = {0};
    if (declared.shape)
      for (const Dim& d : *declared.shape) dims.push_back(d.is_concrete() ? d.value : 0);
    return Shape(std::move(dims));
  }

  const SubgraphRunner& body_;
  size_t num_carried_ = 0;
  size_t num_scan_ = 0;
};

}  // namespace

void RegisterLoopKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Loop";
  def.since_version = 1;
  def.until_version = kLastOpset;
  def.host_inputs = {0, 1};
  def.may_alias = true;
  registry.Register<LoopKernel>(std::move(def));
}

}  // namespace tessera::cpu
