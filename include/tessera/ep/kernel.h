// Kernels: how an EP implements one ONNX operator.
//
// A KernelDef declares what a kernel accepts (op, domain, opset range, element types) and where its
// inputs and outputs must live: inputs listed in host_inputs are delivered in host memory even when the
// kernel's EP runs on a device (shape tensors, axes, ...), and the session inserts the copies. The
// scheduler never special-cases an op: placement is what the def says.
//
// Lifetime: a Kernel is created once per node at session creation from a KernelInfo (where weights
// can be pre-packed) and Compute is then called from any number of threads at once, so Compute must
// not mutate the kernel (cache with a mutex if it must).
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/ep/thread_pool.h"
#include "tessera/stream.h"
#include "tessera/value.h"

namespace tessera {

class ExecutionProvider;
class KernelContext;

// The newest default-domain (ai.onnx) opset the loader accepts. A kernel whose op has not changed meaning up to
// it registers with until_version = kLatestOnnxOpset. Opsets 22 to 25 only added element types to existing ops
// (bfloat16; float4e2m1; float8e8m0, bfloat16 TopK; int2 / uint2), apart from the ops they introduced (23: Attention,
// RMSNormalization, RotaryEmbedding; 24: Swish, TensorScatter) and Attention-24's nonpad_kv_seqlen input, which the
// Attention kernels refuse by name. Opsets 26-28 (ONNX 1.21-1.23; the schemas of onnx 1.23.1 compared version by
// version): 26 adds BitCast and CumProd; 27 adds CausalConvWithState and LinearAttention (no kernels yet: "no kernel"
// names them) and Range's float16 / bfloat16 with stash_type; 28 adds SwiGLU, SpaceToDepth's mode (CRD),
// BitShift on signed integers (arithmetic right shifts), floating-point Mod with fmod = 0 (floor), float6 types
// (which Tessera lacks: a tensor of them fails by name) and bfloat16 / float16 / double for a few ops, and drops the
// integer types of ReduceLogSum(Exp). Kernels of ops that changed meaning check the node's opset or attributes.
inline constexpr int kLatestOnnxOpset = 28;

// Attributes of Tessera's fused ops that only some EPs' kernels implement (KernelDef::extension_attributes):
// activation_clip (tessera/ep/fused_activation.h) on FusedConv, NchwcConv and FusedConvTranspose.
inline constexpr const char* kExtensionAttributes[] = {"activation_clip"};

struct KernelDef {
  std::string op_type;
  std::string domain;  // "" = default ONNX domain
  int since_version = 1;
  int until_version = INT_MAX;  // inclusive
  // input index -> accepted element types; an input not listed accepts any type.
  std::map<int, std::vector<DataType>> input_types;
  std::vector<int> host_inputs;   // inputs the kernel reads on the host
  std::vector<int> host_outputs;  // outputs the kernel writes in host memory
  // Inputs read wherever their producing node left them: a value a host node computed (e.g. shape
  // arithmetic on the CPU) stays in host memory and the kernel reads it on the host when it runs, anything
  // else comes in the EP's memory. The kernel looks at Tensor::memory_info() to tell which.
  std::vector<int> host_or_device_inputs;
  // Whether the kernel may have its outputs share memory with its inputs (Reshape, Identity, ...).
  bool may_alias = false;
  // Per output, the input whose buffer that output may be (-1 or absent: none): the kernel then updates that input
  // in place, writing only what changes (ScatterElements / ScatterND: output 0 over data; ai.tessera::Attention:
  // outputs 1 and 2, the updated key and value caches, over K and V). The executor hands the kernel such an output
  // only when an IoBinding binds the model output to the same tensor as the model input the node reads there, and no
  // other step reads that input; the kernel tells by comparing the two buffers.
  std::vector<int> in_place_inputs;
  // The most inputs the kernel takes: a node with an input given past them is not this kernel's (the optional
  // inputs of a longer form it does not implement, e.g. ai.tessera::Attention's cache updates).
  size_t max_inputs = SIZE_MAX;
  // Whether the kernel computes 16-bit float operands (float16, bfloat16) by widening them to float32 inside the
  // node and rounding its results back (the CPU EP's float-compute adapters). The session then runs connected
  // regions of such nodes in float32 end to end, converting only where values enter and leave the region
  // (docs/ARCHITECTURE.md, "Float16 and bfloat16 on the CPU").
  bool computes_in_float32 = false;
  // The extension attributes (kExtensionAttributes) the kernel implements: a node carrying any other one is not
  // this kernel's, so an EP whose kernel lacks an extension leaves such nodes to one that has it.
  std::vector<std::string> extension_attributes;
  int InPlaceInput(size_t output) const {
    return output < in_place_inputs.size() ? in_place_inputs[output] : -1;
  }

  bool IsHostInput(int i) const;
  bool IsHostOutput(int i) const;
  bool IsHostOrDeviceInput(int i) const;
};

// A subgraph compiled by the session (If/Loop/Scan bodies), callable from a kernel's Compute.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  virtual const Graph& graph() const = 0;
  // Runs the subgraph with `inputs` bound to its formal inputs in order. Outer-scope values are read
  // from `parent` (the calling kernel's context). Returns the subgraph's outputs in order, in the
  // calling kernel's memory space (copied there when the body ran elsewhere), complete on return.
  virtual std::vector<Value> Run(KernelContext& parent, std::vector<Value> inputs) const = 0;
};

// Session-wide settings a kernel may act on when it is created (from SessionOptions).
struct KernelSessionSettings {
  // SessionOptions::use_deterministic_compute: only algorithms whose results are the same bit for bit run after
  // run with the same inputs (a kernel leaves out the candidates its library marks nondeterministic, and takes no
  // order-dependent shortcut such as atomic accumulation).
  bool deterministic_compute = false;
};

// What a kernel sees when it is created.
class KernelInfo {
 public:
  virtual ~KernelInfo() = default;
  virtual const Node& node() const = 0;
  virtual ExecutionProvider& ep() const = 0;
  // The tensor when input i is a constant initializer (for pre-packing weights), else nullptr.
  virtual const Tensor* ConstantInput(size_t i) const = 0;
  // Element types known before running (kUndefined when unknown).
  virtual DataType InputType(size_t i) const = 0;
  virtual DataType OutputType(size_t i) const = 0;
  // Input i's shape as the session inferred it before running, when every dimension is known (constants: their
  // shape); nullopt otherwise. For work a kernel can start while the session is created (plans for the shapes a
  // model declares); the shapes a run brings still decide, so a kernel must not rely on this one.
  virtual std::optional<Shape> InputShape(size_t) const { return std::nullopt; }
  // The compiled subgraph held in graph attribute `attribute`; throws when there is none.
  virtual const SubgraphRunner& Subgraph(const std::string& attribute) const = 0;
  // The session's settings for kernels (defaults where the creator has none).
  virtual const KernelSessionSettings& session_settings() const {
    static const KernelSessionSettings defaults;
    return defaults;
  }
};

// What a kernel sees when it runs.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual const Node& node() const = 0;
  virtual size_t NumInputs() const = 0;
  // nullptr when input i is omitted, is an empty optional, or i >= NumInputs().
  virtual const Value* InputValue(size_t i) const = 0;
  virtual size_t NumOutputs() const = 0;
  // Allocates output i in the kernel's output memory (or returns the caller's preallocated tensor
  // bound to it when type and shape match; a mismatch throws kInvalidArgument naming the output).
  virtual Tensor& Output(size_t i, DataType type, const Shape& shape) = 0;
  // Sets output i to an existing value (an alias of an input, a sequence, ...).
  virtual void SetOutput(size_t i, Value value) = 0;
  // The stream this kernel's EP runs on for this run; nullptr for synchronous (CPU) EPs.
  virtual Stream* stream() const = 0;
  virtual const ThreadPool& thread_pool() const = 0;
  // Allocator for scratch memory in the kernel's memory space.
  virtual const AllocatorPtr& allocator() const = 0;
  // Reads a value defined outside the current graph (subgraphs); nullptr when unknown.
  virtual const Value* OuterScopeValue(const std::string& name) const = 0;
  // Whether the run should stop (RunOptions::terminate was set, or its RunOptions::timeout_ms has passed):
  // kernels that iterate (Loop, Scan) check it between iterations and fail with kTerminated.
  virtual bool terminate_requested() const = 0;
  // Why the run should stop ("RunOptions::terminate", "RunOptions::timeout_ms (50 ms)"), for the error message;
  // "" when it should not.
  virtual std::string StopReason() const { return terminate_requested() ? "RunOptions::terminate" : ""; }

  // True in a session's dry preparation run (docs/ARCHITECTURE.md, "Preparation at creation"): a run on zeros at
  // session creation whose results are discarded, made only so that kernels prepare for the model's static shapes.
  // The session starts one only when every output shape of the graph follows from input shapes, attributes and
  // constants. A kernel whose output shapes do not depend on its input values may then do its preparation (build
  // primitives, pack weights) and fill its outputs with zeros instead of computing them.
  virtual bool preparing_only() const { return false; }

  bool HasInput(size_t i) const { return InputValue(i) != nullptr; }
  // The tensor at input i; throws kInvalidArgument naming the node when missing or not a tensor.
  const Tensor& Input(size_t i) const;
  // The tensor at input i, or nullptr when the optional input is omitted.
  const Tensor* OptionalInput(size_t i) const;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Compute(KernelContext& ctx) const = 0;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelInfo&)>;

struct KernelRegistration {
  KernelDef def;
  KernelFactory create;
};

class KernelRegistry {
 public:
  void Register(KernelDef def, KernelFactory create);
  // Convenience for kernels constructed from the KernelInfo: Register<MyKernel>(def).
  template <typename K>
  void Register(KernelDef def) {
    Register(std::move(def), [](const KernelInfo& info) { return std::make_unique<K>(info); });
  }
  // The registration for `node` (op, domain, opset in range, known input types accepted), or nullptr.
  const KernelRegistration* Find(const Node& node, const Graph& graph) const;
  // Whether any kernel for op/domain exists (at any opset or type), for error messages.
  // Whether a kernel of op_type in domain is registered; with num_inputs > 0, one that takes that many inputs.
  bool HasOp(const std::string& op_type, const std::string& domain, size_t num_inputs = 0) const;
  const std::vector<KernelRegistration>& all() const { return kernels_; }

 private:
  std::vector<KernelRegistration> kernels_;
  std::multimap<std::pair<std::string, std::string>, size_t> by_op_;
};

}  // namespace tessera
