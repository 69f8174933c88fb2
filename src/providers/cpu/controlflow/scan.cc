// Scan: runs its body once per element of one or more scan inputs, threading N state variables from
// iteration to iteration and stacking K per-iteration outputs.
//
//   opset 9+: inputs (state_1..N, scan_1..M); each scan input is sliced along scan_input_axes[j]
//             (default 0), read forward or in reverse (scan_input_directions); scan output k stacks the
//             body's values along scan_output_axes[k] (default 0), appended or prepended
//             (scan_output_directions).
//   opset 8:  inputs (sequence_lens?, state_1..N, scan_1..M) with a batch axis 0 on every input and
//             output and the sequence axis 1 on scan inputs and outputs; `directions` reverses scan
//             inputs; sequences shorter than the maximum (sequence_lens) leave zero padding in the
//             scan outputs.
//
// The body sees each slice as a fresh dense tensor (never a view of the input), so values it returns
// can outlive the input. Every iteration's scan outputs must agree in element type and shape.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

// A dense copy of `t` at `index` along `axis` (the axis removed).
Tensor SliceAt(const Tensor& t, size_t axis, int64_t index, KernelContext& ctx) {
  const std::vector<int64_t>& dims = t.shape().dims();
  const std::vector<int64_t> strides = DenseStrides(dims);
  StridedView view;
  view.offset = index * strides[axis];
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k == axis) continue;
    view.dims.push_back(dims[k]);
    view.strides.push_back(strides[k]);
  }
  Tensor slice = Tensor::Allocate(t.type(), Shape(view.dims), ctx.allocator());
  CopyStrided(t, view, slice, ctx.thread_pool());
  return slice;
}

// Copies `part`, viewed as [outer, inner], into `out` viewed as [outer, count, inner] at `position`.
void CopyIntoSlab(const Tensor& part, Tensor& out, int64_t outer, int64_t count, int64_t position) {
  const int64_t inner = outer == 0 ? 0 : part.NumElements() / outer;
  VisitStorageType(part.type(), [&]<typename S>() {
    const S* src = StorageData<S>(part);
    S* dst = StorageData<S>(out);
    for (int64_t o = 0; o < outer; ++o) std::copy_n(src + o * inner, inner, dst + (o * count + position) * inner);
  });
}

// Zeroes every element of a non-string tensor (string tensors are allocated empty already).
void ZeroFill(Tensor& t) {
  if (t.type() != DataType::kString && t.SizeInBytes() > 0) std::memset(t.raw_data(), 0, t.SizeInBytes());
}

std::vector<bool> ReadDirections(const Node& node, const char* attribute, size_t count) {
  const std::vector<int64_t> given = node.GetInts(attribute, std::vector<int64_t>(count, 0));
  if (given.size() != count)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": ", attribute, " has ", given.size(), " entries, expected ",
         count);
  std::vector<bool> reverse(count);
  for (size_t i = 0; i < count; ++i) {
    if (given[i] != 0 && given[i] != 1)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": ", attribute, "[", i, "] is ", given[i], "; must be 0 or 1");
    reverse[i] = given[i] == 1;
  }
  return reverse;
}

std::vector<int64_t> ReadAxes(const Node& node, const char* attribute, size_t count) {
  std::vector<int64_t> axes = node.GetInts(attribute, std::vector<int64_t>(count, 0));
  if (axes.size() != count)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": ", attribute, " has ", axes.size(), " entries, expected ",
         count);
  return axes;
}

// What one sequence of iterations produced.
struct ScanResult {
  std::vector<Value> states;                 // final state values
  std::vector<std::vector<Tensor>> outputs;  // [k][iteration], in iteration order
};

// Body sizes shared by both opset families.
struct ScanLayout {
  size_t num_states = 0;
  size_t num_inputs = 0;   // M
  size_t num_outputs = 0;  // K
};

ScanLayout CheckLayout(const Node& node, const Graph& body, size_t node_state_and_scan_inputs) {
  const int64_t m = node.GetInt("num_scan_inputs");
  if (m < 1 || static_cast<size_t>(m) > node_state_and_scan_inputs)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": num_scan_inputs is ", m, " but the node has ",
         node_state_and_scan_inputs, " state and scan inputs");
  ScanLayout layout;
  layout.num_inputs = static_cast<size_t>(m);
  layout.num_states = node_state_and_scan_inputs - layout.num_inputs;
  if (body.inputs.size() != layout.num_states + layout.num_inputs || body.outputs.size() < layout.num_states)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": with ", layout.num_states, " states and ", layout.num_inputs,
         " scan inputs the body must take ", layout.num_states + layout.num_inputs, " inputs and produce at least ",
         layout.num_states, " outputs; it has ", body.inputs.size(), " and ", body.outputs.size());
  layout.num_outputs = body.outputs.size() - layout.num_states;
  if (node.outputs.size() > layout.num_states + layout.num_outputs)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": has ", node.outputs.size(), " outputs but the body yields ",
         layout.num_states + layout.num_outputs);
  return layout;
}

// Runs `length` iterations. Scan input j is sliced along axes[j], from the back when reverse[j].
ScanResult RunIterations(KernelContext& ctx, const SubgraphRunner& body, const ScanLayout& layout,
                         std::vector<Value> states, const std::vector<const Tensor*>& inputs,
                         const std::vector<size_t>& axes, const std::vector<bool>& reverse, int64_t length) {
  ScanResult result;
  result.outputs.resize(layout.num_outputs);
  for (int64_t t = 0; t < length; ++t) {
    if (const std::string reason = ctx.StopReason(); !reason.empty())
      Fail(ErrorCode::kTerminated, ctx.node().Describe(), ": stopped by ", reason, " at iteration ", t);
    std::vector<Value> body_inputs = std::move(states);
    for (size_t j = 0; j < inputs.size(); ++j)
      body_inputs.emplace_back(SliceAt(*inputs[j], axes[j], reverse[j] ? length - 1 - t : t, ctx));
    std::vector<Value> outputs = body.Run(ctx, std::move(body_inputs));
    states.assign(std::make_move_iterator(outputs.begin()),
                  std::make_move_iterator(outputs.begin() + static_cast<std::ptrdiff_t>(layout.num_states)));
    for (size_t k = 0; k < layout.num_outputs; ++k) {
      const Value& v = outputs[layout.num_states + k];
      const std::vector<Tensor>& previous = result.outputs[k];
      if (!v.is_tensor() || (!previous.empty() && (v.tensor().type() != previous[0].type() ||
                                                   v.tensor().shape() != previous[0].shape())))
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": scan output '",
             body.graph().outputs[layout.num_states + k].name, "' must be a tensor of one type and shape in every ",
             "iteration; iteration ", t, " produced ", v.is_tensor() ? v.tensor().Describe() : "a non-tensor value");
      result.outputs[k].push_back(v.tensor());
    }
  }
  result.states = std::move(states);
  return result;
}

// The dims of a scan output's element when no iteration ran: the body's declared shape (unknown dims
// as 0), else a scalar.
std::vector<int64_t> DeclaredElementDims(const ValueInfo& declared) {
  std::vector<int64_t> dims;
  if (declared.shape)
    for (const Dim& d : *declared.shape) dims.push_back(d.is_concrete() ? d.value : 0);
  return dims;
}

DataType DeclaredType(const ValueInfo& declared) {
  return declared.type == DataType::kUndefined ? DataType::kFloat : declared.type;
}

const Tensor& ScanInputTensor(KernelContext& ctx, size_t input) {
  const Tensor& t = ctx.Input(input);
  if (t.shape().rank() == 0)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": scan input ", input,
         " is a scalar; it needs an axis to scan");
  return t;
}

class Scan9Kernel : public Kernel {
 public:
  explicit Scan9Kernel(const KernelInfo& info) : body_(info.Subgraph("body")) {
    const Node& node = info.node();
    layout_ = CheckLayout(node, body_.graph(), node.inputs.size());
    input_axes_ = ReadAxes(node, "scan_input_axes", layout_.num_inputs);
    output_axes_ = ReadAxes(node, "scan_output_axes", layout_.num_outputs);
    input_reverse_ = ReadDirections(node, "scan_input_directions", layout_.num_inputs);
    output_reverse_ = ReadDirections(node, "scan_output_directions", layout_.num_outputs);
  }

  void Compute(KernelContext& ctx) const override {
    std::vector<Value> states;
    for (size_t i = 0; i < layout_.num_states; ++i) states.push_back(ctx.InputValue(i) ? *ctx.InputValue(i) : Value());
    std::vector<const Tensor*> inputs;
    std::vector<size_t> axes;
    int64_t length = -1;
    for (size_t j = 0; j < layout_.num_inputs; ++j) {
      const Tensor& t = ScanInputTensor(ctx, layout_.num_states + j);
      const size_t axis = static_cast<size_t>(NormalizeAxis(input_axes_[j], static_cast<int64_t>(t.shape().rank()),
                                                            "scan_input_axes"));
      if (length >= 0 && t.shape()[axis] != length)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": scan inputs have different lengths (", length,
             " and ", t.shape()[axis], " for ", t.Describe(), " along axis ", axis, ")");
      length = t.shape()[axis];
      inputs.push_back(&t);
      axes.push_back(axis);
    }
    ScanResult result = RunIterations(ctx, body_, layout_, std::move(states), inputs, axes, input_reverse_, length);
    const size_t produced = std::min(ctx.NumOutputs(), layout_.num_states + layout_.num_outputs);
    for (size_t i = 0; i < produced; ++i) {
      if (i < layout_.num_states)
        ctx.SetOutput(i, std::move(result.states[i]));
      else
        WriteScanOutput(ctx, i, result.outputs[i - layout_.num_states], length);
    }
  }

 private:
  void WriteScanOutput(KernelContext& ctx, size_t index, const std::vector<Tensor>& parts, int64_t length) const {
    const size_t k = index - layout_.num_states;
    const ValueInfo& declared = body_.graph().outputs[index];
    const DataType type = parts.empty() ? DeclaredType(declared) : parts[0].type();
    std::vector<int64_t> dims = parts.empty() ? DeclaredElementDims(declared) : parts[0].shape().dims();
    const size_t axis = static_cast<size_t>(NormalizeAxis(output_axes_[k], static_cast<int64_t>(dims.size()) + 1,
                                                          "scan_output_axes"));
    const int64_t outer = Shape(dims).SizeTo(axis);
    dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), length);
    Tensor& out = ctx.Output(index, type, Shape(std::move(dims)));
    for (int64_t t = 0; t < length; ++t)
      CopyIntoSlab(parts[static_cast<size_t>(t)], out, outer, length, output_reverse_[k] ? length - 1 - t : t);
  }

  const SubgraphRunner& body_;
  ScanLayout layout_;
  std::vector<int64_t> input_axes_, output_axes_;
  std::vector<bool> input_reverse_, output_reverse_;
};

class Scan8Kernel : public Kernel {
 public:
  explicit Scan8Kernel(const KernelInfo& info) : body_(info.Subgraph("body")) {
    const Node& node = info.node();
    if (node.inputs.empty()) Fail(ErrorCode::kInvalidModel, node.Describe(), ": has no inputs");
    layout_ = CheckLayout(node, body_.graph(), node.inputs.size() - 1);
    reverse_ = ReadDirections(node, "directions", layout_.num_inputs);
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& first = ScanInputTensor(ctx, 1 + layout_.num_states);
    if (first.shape().rank() < 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": scan inputs need a batch and a sequence axis, got ",
           first.Describe());
    const int64_t batch = first.shape()[0], max_length = first.shape()[1];
    const std::vector<int64_t> lengths = SequenceLengths(ctx, batch, max_length);
    std::vector<ScanResult> results;
    for (int64_t b = 0; b < batch; ++b) results.push_back(RunBatchItem(ctx, b, lengths[b]));
    const size_t produced = std::min(ctx.NumOutputs(), layout_.num_states + layout_.num_outputs);
    for (size_t i = 0; i < produced; ++i) WriteBatchedOutput(ctx, i, results, lengths, max_length);
  }

 private:
  std::vector<int64_t> SequenceLengths(KernelContext& ctx, int64_t batch, int64_t max_length) const {
    const Node& node = ctx.node();
    const Tensor* given = ctx.OptionalInput(0);
    if (given == nullptr) return std::vector<int64_t>(static_cast<size_t>(batch), max_length);
    std::vector<int64_t> lengths = ReadIntParameter(node, *given, "sequence_lens");
    if (static_cast<int64_t>(lengths.size()) != batch)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": sequence_lens has ", lengths.size(),
           " entries for a batch of ", batch);
    for (int64_t len : lengths)
      if (len < 0 || len > max_length)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": sequence length ", len, " is outside [0, ", max_length,
             "]");
    return lengths;
  }

  ScanResult RunBatchItem(KernelContext& ctx, int64_t b, int64_t length) const {
    std::vector<Value> states;
    for (size_t i = 0; i < layout_.num_states; ++i) states.emplace_back(SliceAt(ctx.Input(1 + i), 0, b, ctx));
    std::vector<Tensor> sequences;  // this batch item's scan inputs, [sequence, ...], cut to `length`
    for (size_t j = 0; j < layout_.num_inputs; ++j) {
      const Tensor& t = ScanInputTensor(ctx, 1 + layout_.num_states + j);
      if (t.shape().rank() < 2 || t.shape()[0] != ctx.Input(1 + layout_.num_states).shape()[0])
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": scan input ", t.Describe(),
             " does not share the batch size of the first scan input");
      sequences.push_back(SliceAt(t, 0, b, ctx));
    }
    std::vector<const Tensor*> inputs;
    for (const Tensor& s : sequences) inputs.push_back(&s);
    const std::vector<size_t> axes(layout_.num_inputs, 0);
    return RunIterations(ctx, body_, layout_, std::move(states), inputs, axes, reverse_, length);
  }

  // Output `index` = every batch item's final state, or its scan outputs padded to max_length.
  void WriteBatchedOutput(KernelContext& ctx, size_t index, const std::vector<ScanResult>& results,
                          const std::vector<int64_t>& lengths, int64_t max_length) const {
    const bool is_state = index < layout_.num_states;
    const size_t k = index - (is_state ? 0 : layout_.num_states);
    const Tensor* sample = nullptr;
    for (const ScanResult& r : results) {
      if (is_state) sample = &r.states[k].tensor();
      else if (!r.outputs[k].empty()) sample = &r.outputs[k][0];
      if (sample != nullptr) break;
    }
    const ValueInfo& declared = body_.graph().outputs[index];
    std::vector<int64_t> dims = sample ? sample->shape().dims() : DeclaredElementDims(declared);
    if (!is_state) dims.insert(dims.begin(), max_length);
    dims.insert(dims.begin(), static_cast<int64_t>(results.size()));
    Tensor& out = ctx.Output(index, sample ? sample->type() : DeclaredType(declared), Shape(dims));
    ZeroFill(out);
    const int64_t slots = static_cast<int64_t>(results.size()) * (is_state ? 1 : max_length);
    for (size_t b = 0; b < results.size(); ++b) {
      if (is_state) {
        CheckSameAs(ctx, results[b].states[k].tensor(), *sample, index);
        CopyIntoSlab(results[b].states[k].tensor(), out, 1, slots, static_cast<int64_t>(b));
        continue;
      }
      for (int64_t t = 0; t < lengths[b]; ++t) {
        const Tensor& part = results[b].outputs[k][static_cast<size_t>(t)];
        CheckSameAs(ctx, part, *sample, index);
        CopyIntoSlab(part, out, 1, slots, static_cast<int64_t>(b) * max_length + t);
      }
    }
  }

  void CheckSameAs(KernelContext& ctx, const Tensor& t, const Tensor& sample, size_t index) const {
    if (t.type() != sample.type() || t.shape() != sample.shape())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": output '", body_.graph().outputs[index].name,
           "' differs between batch items (", sample.Describe(), " vs ", t.Describe(), ")");
  }

  const SubgraphRunner& body_;
  ScanLayout layout_;
  std::vector<bool> reverse_;
};

KernelDef ScanDef(int since, int until) {
  KernelDef def;
  def.op_type = "Scan";
  def.since_version = since;
  def.until_version = until;
  def.may_alias = true;
  return def;
}

}  // namespace

void RegisterScanKernels(KernelRegistry& registry) {
  KernelDef scan8 = ScanDef(8, 8);
  scan8.host_inputs = {0};
  registry.Register<Scan8Kernel>(std::move(scan8));
  registry.Register<Scan9Kernel>(ScanDef(9, kLastOpset));
}

}  // namespace tessera::cpu
