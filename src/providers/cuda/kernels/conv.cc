// Conv through cuDNN (1-D, 2-D, 3-D; groups; bias; symmetric padding), and
// ai.tessera::FusedConv(X, W, B?, Z?): Conv, then `Y += Z` (the residual), then `activation` (see
// graph/fused_activation.h), written by the conv_activation_fusion pass; and ai.tessera::NchwcConv, the same in
// NHWC (channel_block 0, the only block the CUDA EP asks the nchwc_layout pass for): Y and Z are [N, 1, H, W, C],
// X is that too or plain NCHW (the first conv of a chain; copied to NHWC first). cuDNN gets NHWC layouts and
// a KRSC copy of W, made once per weight tensor. NHWC spares cuDNN's tensor-core kernels the NCHW <-> NHWC
// transposes they otherwise run around every float16 convolution.
//
// Per input shape (and pointer alignment) the kernel builds a plan once, behind a mutex, and reuses it for every
// later run with that shape. Graph-API plans come from the EP's cache (cudnn_plan_cache.h), shared by the nodes
// with the same convolution; for the shapes the session inferred, the kernel asks for them when it is created,
// and worker threads build them while the session is being created. Two APIs can run the convolution:
// - cuDNN's graph API (cudnn_graph.h): an execution plan for the convolution alone, finalized once; a step costs
//   one cudnnBackendExecute (7-24 us of host time on the H100 host) plus one epilogue kernel when the node has a
//   bias, residual or activation;
// - the legacy API: cudnnConvolutionForward, or cudnnConvolutionBiasActivationForward (y = act(conv + z + bias)
//   in one call) when the activation is Relu, or none with the implicit-precomp-GEMM algorithm. Each call costs
//   45-255 us of host time in cuDNN 9.19 (bench/cuda/call_overhead.cu), but the fused call saves the epilogue's
//   pass over Y on the device.
// - Tessera's depthwise kernel (depthwise_conv.cu), for NHWC convolutions with one filter per channel: one launch
//   with bias, residual and activation fused.
// Sessions whose runs execute the kernels (eager: automatic graphs off or not possible for the model, see
// ExecutionProvider::SetRunsReplayed) are bound by the host, so they use the depthwise kernel where it applies (no
// cuDNN plan is built for such shapes), else graph-API plans (the legacy API only where the graph API has no engine).
// Sessions that replay their runs as CUDA graphs (enable_cuda_graph, or automatic graphs: the CUDA EP's default for
// capturable models) pay no host cost per step, so their candidates are the legacy algorithms (fused where cuDNN
// accepts it), the graph-API plans and the depthwise kernel, and the fastest on the device wins.
//
// In eager sessions the cuDNN call and its epilogue kernel, or the depthwise kernel, are queued through the plan's
// step graphs (step_graphs.h): from the third run with the same buffers on, a step is one cudaGraphLaunch (1-3 us
// of host time) instead of cuDNN's 7-24 us plus a 4 us launch, or a 4 us launch.
//
// cudnn_conv_algo_search: HEURISTIC and DEFAULT take the first candidate (eager: cuDNN's first graph-API
// proposal; graph sessions: the legacy heuristic's first algorithm, or implicit-precomp GEMM for DEFAULT).
// EXHAUSTIVE times every candidate on the run's real buffers the first time a shape is seen, blocking that run
// only, running what the node really runs (the fused call, or convolution + epilogue) captured in a CUDA graph.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>

#include "tessera/ep/logging.h"
#include "graph/fused_activation.h"
#include "providers/cpu/common/window_geometry.h"
#include "providers/cuda/cudnn_graph.h"
#include "providers/cuda/cudnn_plan_cache.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/cudnn_descriptors.h"
#include "providers/cuda/kernels/graph_timing.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"

namespace tessera::cuda {

namespace {

// Workspace ceilings for the algorithm search; use_max_workspace lets cuDNN use far more scratch
// memory for faster algorithms.
constexpr size_t kSmallWorkspaceBytes = size_t{32} << 20;
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

// One way to run the convolution: a graph-API plan, or cuDNN's legacy algorithm and math type; its scratch
// size; and whether bias, residual and activation go into the same (legacy) cuDNN call.
struct ConvChoice {
  const cudnn_graph::Plan* graph = nullptr;  // not null: this graph-API plan (the other fields but the size unused)
  cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;
  bool fused = false;      // cudnnConvolutionBiasActivationForward
  bool depthwise = false;  // Tessera's depthwise kernel (launch::DepthwiseConvChannelsLast) with the epilogue fused
};

struct ConvPlan {
  // Set when Tessera's depthwise kernel can run the node (channels last, one filter per channel).
  bool depthwise_ok = false;
  launch::DepthwiseGeometry depthwise;
  // Graph API (tensors X = 1, W = 2, Y = 3): its candidate plans, shared with the EP's other nodes of the same
  // convolution (cudnn_plan_cache.h); null when the choice is not a graph-API plan.
  std::shared_ptr<const CudnnPlanSet> graph_set;
  const std::vector<cudnn_graph::Plan>& graph_plans() const {
    static const std::vector<cudnn_graph::Plan> none;
    return graph_set != nullptr ? graph_set->plans : none;
  }
  // Legacy API.
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvDescriptor conv;
  ConvChoice choice;
  // For the single-call path: set up when the node's epilogue could go into cuDNN's call at all.
  bool fusable = false;
  TensorDescriptor bias;             // [1, C, 1, ...]
  ActivationDescriptor activation;   // Relu or identity
  Tensor zero_bias;                  // C zeros when the node has no bias

  // Variant packs of the chosen graph-API plan by the buffers they bind (X, W, Y, workspace). Building a pack
  // costs several us of host time per step; in steady state a step sees the same few buffer sets run after run
  // (the arena hands out the same blocks; one set per stream set), so the most recent ones are kept.
  struct Pack {
    std::array<void*, 4> buffers;
    std::shared_ptr<const cudnn_graph::Descriptor> pack;  // held by an execution while another thread evicts it
  };
  static constexpr size_t kMaxPacks = 16;
  mutable std::mutex packs_mutex;
  mutable std::vector<Pack> packs;  // most recently used last
  // The chosen cuDNN call (and its epilogue) captured per set of buffers and stream (eager sessions).
  StepGraphs steps;
  // The variant pack for `buffers`, made and cached on a miss; nullptr (with *status) when cuDNN refuses it.
  std::shared_ptr<const cudnn_graph::Descriptor> PackFor(const std::array<void*, 4>& buffers,
                                                         cudnnStatus_t* status) const {
    static constexpr int64_t kUids[3] = {1, 2, 3};
    *status = CUDNN_STATUS_SUCCESS;
    {
      std::lock_guard<std::mutex> lock(packs_mutex);
      for (size_t i = packs.size(); i-- > 0;)
        if (packs[i].buffers == buffers) {
          std::shared_ptr<const cudnn_graph::Descriptor> found = packs[i].pack;
          if (i + 1 != packs.size()) std::rotate(packs.begin() + i, packs.begin() + i + 1, packs.end());
          return found;
        }
    }
    auto made = std::make_shared<const cudnn_graph::Descriptor>(
        cudnn_graph::MakeVariantPack(kUids, buffers.data(), 3, buffers[3], status));
    if (*status != CUDNN_STATUS_SUCCESS) return nullptr;
    std::lock_guard<std::mutex> lock(packs_mutex);
    if (packs.size() == kMaxPacks) packs.erase(packs.begin());
    packs.push_back({buffers, made});
    return made;
  }
};

// The operands after the convolution: bias [C], residual Z and the activation.
struct ConvExtras {
  const Tensor* bias = nullptr;
  const Tensor* residual = nullptr;
  launch::EpilogueActivation activation;
  // ActivatedNchwcConv: applied to X by the depthwise kernel (any other convolution gets an activated copy of X).
  launch::EpilogueActivation input_activation;
  bool any() const {
    return bias != nullptr || residual != nullptr || activation.kind != launch::EpilogueActivation::Kind::kNone;
  }
};

// The node's geometry resolved for one input shape, in cuDNN's terms (1-D padded to 2-D).
struct ConvGeometry {
  std::vector<int> x_dims, w_dims, y_dims, pads, strides, dilations;
  Shape y_shape;
  int64_t group = 1;
};

std::vector<int> ToInts(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

std::vector<int64_t> ToInt64s(const std::vector<int>& values) { return {values.begin(), values.end()}; }

// The largest power of two up to 16 that divides the address: the alignment cuDNN may assume for a pointer.
int64_t AlignmentOf(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t alignment = 16;
  while (alignment > 1 && address % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        attributes_(cpu::ReadWindowAttributes(info.node())),
        group_(info.node().GetInt("group", 1)),
        fused_node_(info.node().op_type != "Conv"),
        channels_last_(info.node().op_type == "NchwcConv" || info.node().op_type == "ActivatedNchwcConv"),
        deterministic_(info.session_settings().deterministic_compute),
        activation_(fused_node_ ? ToLaunchActivation(ReadFusedActivation(info.node()))
                                : launch::EpilogueActivation{}),
        input_activation_(info.node().op_type == "ActivatedNchwcConv"
                              ? ToLaunchActivation(ReadFusedActivation(info.node(), "input_activation"))
                              : launch::EpilogueActivation{}) {
    if (channels_last_ && info.node().GetInt("channel_block", 0) != 0)
      Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": the CUDA EP runs NchwcConv in NHWC (channel_block 0) ",
           "only, not channel_block ", info.node().GetInt("channel_block", 0));
    PrefetchPlans(info);
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x_in = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    ConvExtras extras{ctx.OptionalInput(2), fused_node_ ? ctx.OptionalInput(3) : nullptr, activation_,
                      input_activation_};
    if (w.type() != x_in.type() || (extras.bias != nullptr && extras.bias->type() != x_in.type()) ||
        (extras.residual != nullptr && extras.residual->type() != x_in.type()))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X, W, B and Z must have one element type");
    FloatElementType(ctx, x_in.type());
    const bool x_nhwc = channels_last_ && x_in.shape().rank() == 5;
    // Steady state: the shapes and W of the step before, so their geometry, filter and plan are known.
    const std::shared_ptr<const StepMemo> memo = memo_.load(std::memory_order_acquire);
    const bool seen = memo != nullptr && memo->w_data == w.raw_data() && memo->x_shape == x_in.shape() &&
                      memo->w_shape == w.shape();
    std::optional<ConvGeometry> resolved;
    if (!seen)
      resolved = Resolve(ctx.node(), x_nhwc ? NchwOfNhwc(ctx, x_in.shape()) : x_in.shape(), w.shape());
    const ConvGeometry& geometry = seen ? memo->geometry : *resolved;
    if (channels_last_ && (geometry.y_shape.rank() != 4 || w.shape().rank() != 4))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": NchwcConv takes 2-D convolutions, not X ",
           x_in.shape().ToString());
    if (extras.bias != nullptr && extras.bias->NumElements() != geometry.y_shape[1])
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": B has ", extras.bias->NumElements(),
           " values for ", geometry.y_shape[1], " output channels");
    const Shape& ys = geometry.y_shape;
    Tensor& y = ctx.Output(0, x_in.type(), channels_last_ ? Shape{ys[0], 1, ys[2], ys[3], ys[1]} : ys);
    if (y.NumElements() == 0) return;
    const cudaStream_t stream = StreamOf(ctx);
    Tensor x_staged;  // an NCHW X in NHWC
    if (channels_last_ && !x_nhwc) {
      const Shape& s = x_in.shape();
      x_staged = Tensor::Allocate(x_in.type(), Shape{s[0], s[2], s[3], s[1]}, ctx.allocator());
      LaunchToChannelsLast(ctx, x_in, x_staged.raw_data(), stream);
    }
    const Tensor& x_plain = x_staged.defined() ? x_staged : x_in;
    Tensor x_activated;  // ActivatedNchwcConv that Tessera's depthwise kernel cannot run: activation(X) first
    if (extras.input_activation.kind != launch::EpilogueActivation::Kind::kNone && !DepthwiseApplies(geometry)) {
      x_activated = Tensor::Allocate(x_plain.type(), x_plain.shape(), ctx.allocator());
      CheckLaunch(ctx,
                  launch::Activation(FloatElementType(ctx, x_plain.type()), x_plain.raw_data(), x_activated.raw_data(),
                                     x_plain.NumElements(), extras.input_activation, stream),
                  "input activation launch");
      extras.input_activation = {};
    }
    const Tensor& x = x_activated.defined() ? x_activated : x_plain;
    const Tensor& filter = !channels_last_ ? w : seen ? *memo->krsc : FilterInKrsc(ctx, w, stream);
    const int64_t alignment =
        std::min({AlignmentOf(x.raw_data()), AlignmentOf(filter.raw_data()), AlignmentOf(y.raw_data())});
    const ConvPlan* found = seen && memo->alignment == alignment ? memo->plan : nullptr;
    if (found == nullptr) {
      found = &PlanFor(ctx, geometry, x, filter, y, extras, stream);
      auto next = std::make_shared<StepMemo>(
          StepMemo{x_in.shape(), w.shape(), w.raw_data(), geometry, channels_last_ ? &filter : nullptr, alignment, found});
      memo_.store(std::move(next), std::memory_order_release);
    }
    const ConvPlan& plan = *found;
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    void* workspace = lease.workspace(plan.choice.workspace_bytes);
    // cuDNN's calls cost 7-250 us of host time and a kernel launch ~4 us; the step's work replays from a step
    // graph for one launch of 1-3 us.
    StepKey key(stream);
    key.Add(x.raw_data()).Add(filter.raw_data()).Add(y.raw_data()).Add(workspace);
    key.Add(extras.bias != nullptr ? extras.bias->raw_data() : nullptr);
    key.Add(extras.residual != nullptr ? extras.residual->raw_data() : nullptr);
    key.AddShape(extras.residual != nullptr ? extras.residual->shape() : Shape{});  // a broadcasting Z's own pass
    const StepLibrary library = plan.choice.depthwise ? StepLibrary::kNone : StepLibrary::kCudnn;
    plan.steps.Run(ctx, ep_, &lease, key, library, [&](cudaStream_t on, const LibraryHandles::Lease* handles) {
      Enqueue(ctx, plan.choice.depthwise ? nullptr : handles->cudnn(), plan, plan.choice, x, filter, y, extras,
              workspace, on);
    });
  }

 private:
  // The NCHW shape [N, C, H, W] of an NHWC tensor [N, 1, H, W, C].
  static Shape NchwOfNhwc(const KernelContext& ctx, const Shape& s) {
    if (s[1] != 1)
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel takes NHWC tensors [N, 1, H, W, C], ",
           "not ", s.ToString());
    return Shape{s[0], s[4], s[2], s[3]};
  }

  // W [K, C, R, S] copied once to KRSC, cuDNN's NHWC filter layout (W is a constant: the nchwc_layout pass
  // requires it), cached by its address.
  const Tensor& FilterInKrsc(const KernelContext& ctx, const Tensor& w, cudaStream_t stream) const {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);  // every step: concurrent runs read together
      auto it = krsc_filters_.find(w.raw_data());
      if (it != krsc_filters_.end()) return it->second;
    }
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = krsc_filters_.find(w.raw_data());
    if (it != krsc_filters_.end()) return it->second;
    const Shape& s = w.shape();
    Tensor krsc = Tensor::Allocate(w.type(), Shape{s[0], s[2], s[3], s[1]}, ctx.allocator());
    LaunchToChannelsLast(ctx, w, krsc.raw_data(), stream);
    CompleteBeforeSharing(ctx, stream);
    return krsc_filters_.emplace(w.raw_data(), std::move(krsc)).first->second;
  }

  ConvGeometry Resolve(const Node& node, const Shape& x, const Shape& w) const {
    if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
           " must both have rank 3, 4 or 5");
    if (x[1] != w[1] * group_)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X has ", x[1], " channels but W ", w.ToString(),
           " with group ", group_, " expects ", w[1] * group_);
    const std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end());
    const std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
    const cpu::WindowGeometry window = cpu::ResolveWindow(attributes_, spatial, kernel, node);
    if (window.pad_begin != window.pad_end)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": asymmetric padding is not supported by the CUDA Conv");
    ConvGeometry g;
    g.group = group_;
    std::vector<int64_t> y_dims = {x[0], w[0]};
    y_dims.insert(y_dims.end(), window.output.begin(), window.output.end());
    g.y_shape = Shape(y_dims);
    g.x_dims = ToInts(x.dims());
    g.w_dims = ToInts(w.dims());
    g.y_dims = ToInts(y_dims);
    g.pads = ToInts(window.pad_begin);
    g.strides = ToInts(window.strides);
    g.dilations = ToInts(window.dilations);
    if (spatial.size() == 1) PadTo2d(g);
    return g;
  }

  // cuDNN convolves 4-D and 5-D tensors: a 1-D convolution gets a unit axis, placed last ([N,C,D,1])
  // or, with cudnn_conv1d_pad_to_nc1d, before the data axis ([N,C,1,D]).
  void PadTo2d(ConvGeometry& g) const {
    const bool unit_first = ep_.options().cudnn_conv1d_pad_to_nc1d;
    for (std::vector<int>* dims : {&g.x_dims, &g.w_dims, &g.y_dims})
      dims->insert(dims->begin() + (unit_first ? 2 : 3), 1);
    g.pads.insert(g.pads.begin() + (unit_first ? 0 : 1), 0);
    g.strides.insert(g.strides.begin() + (unit_first ? 0 : 1), 1);
    g.dilations.insert(g.dilations.begin() + (unit_first ? 0 : 1), 1);
  }

  // The plan for geometry `g` and the operands' alignment, made once (under the kernel's lock) and kept.
  const ConvPlan& PlanFor(const KernelContext& ctx, const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y,
                          const ConvExtras& extras, cudaStream_t stream) const {
    // Graph-API plans assume the pointers' alignment (their tensors declare it), so it is part of the key.
    const int64_t alignment =
        std::min({AlignmentOf(x.raw_data()), AlignmentOf(w.raw_data()), AlignmentOf(y.raw_data())});
    std::vector<int> key = g.x_dims;
    key.insert(key.end(), g.w_dims.begin(), g.w_dims.end());
    key.push_back(static_cast<int>(alignment));
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);  // every step: concurrent runs read together
      auto it = plans_.find(key);
      if (it != plans_.end()) return *it->second;
    }
    std::unique_lock<std::shared_mutex> lock(mutex_);  // a new shape: planned once, other runs wait for it
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    auto plan = std::make_unique<ConvPlan>();
    plan->depthwise_ok = DepthwiseApplies(g);
    if (plan->depthwise_ok) plan->depthwise = DepthwiseGeometryOf(g);
    if (plan->depthwise_ok && DepthwiseKernelOnly()) {
      plan->choice.depthwise = true;
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": X ", x.shape().ToString(), " Tessera's depthwise kernel");
      return *plans_.emplace(std::move(key), std::move(plan)).first->second;
    }
    Describe(g, x.type(), *plan);
    PrepareFusion(ctx, g, x, y.shape(), extras, stream, *plan);
    // Another node of the EP with the same geometry may have searched already (ResNet's blocks repeat theirs).
    const std::string tuning_key =
        TuningKey(g, x.type(), alignment, extras.bias != nullptr,
                  extras.residual != nullptr ? std::optional<Shape>(extras.residual->shape()) : std::nullopt,
                  plan->depthwise_ok);
    const std::optional<std::string> tuned = ep_.tuning().Find(tuning_key);
    if (tuned && ApplyTuned(ctx, *tuned, g, x, w, y, extras, alignment, *plan)) {
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": X ", x.shape().ToString(), " takes the stored choice for ",
          "its geometry (searched for another node, or read from the tuning cache): ", *tuned);
    } else {
      {
        LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
        BuildGraphPlans(ctx, lease.cudnn(), g, x.type(), alignment, *plan);
      }
      if (plan->graph_plans().empty() && !GraphSession())
        Log(LogLevel::kInfo, ctx.node().Describe(), ": cuDNN's graph API has no engine for X ", x.shape().ToString(),
            " (", DataTypeName(x.type()), ", alignment ", alignment, "); the legacy convolution API runs it");
      Choose(ctx, x, w, y, extras, stream, *plan);
      ep_.tuning().Store(tuning_key, TunedValue(plan->choice), /*replace=*/tuned.has_value());  // a stale one
    }
    if (plan->choice.depthwise)
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": X ", x.shape().ToString(),
          " Tessera's depthwise kernel (timed against cuDNN's)");
    else if (plan->choice.graph != nullptr)
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": X ", x.shape().ToString(), " graph-API plan ",
          plan->choice.graph->Describe());
    else
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": X ", x.shape().ToString(), " legacy algorithm ",
          static_cast<int>(plan->choice.algorithm), " math type ", static_cast<int>(plan->choice.math),
          " workspace ", plan->choice.workspace_bytes,
          plan->choice.fused ? ", bias/residual/activation in cuDNN's call" : "");
    CompleteBeforeSharing(ctx, stream);  // plan.zero_bias
    return *plans_.emplace(std::move(key), std::move(plan)).first->second;
  }

  // Queues the node's whole computation with `choice` (a legacy choice's math type must be set on plan.conv).
  void Enqueue(const KernelContext& ctx, cudnnHandle_t cudnn, const ConvPlan& plan, const ConvChoice& choice,
               const Tensor& x, const Tensor& w, Tensor& y, ConvExtras extras, void* workspace,
               cudaStream_t stream) const {
    const Shape& y_shape = y.shape();
    const bool same_shape_residual = extras.residual != nullptr && extras.residual->shape() == y_shape;
    if (choice.depthwise) {
      // A residual that broadcasts is added by the passes below, and the activation must follow it.
      const bool whole = extras.residual == nullptr || same_shape_residual;
      const launch::EpilogueActivation none;
      CheckLaunch(ctx,
                  launch::DepthwiseConvChannelsLast(
                      FloatElementType(ctx, x.type()), x.raw_data(), w.raw_data(),
                      extras.bias != nullptr ? extras.bias->raw_data() : nullptr,
                      whole && extras.residual != nullptr ? extras.residual->raw_data() : nullptr, y.raw_data(),
                      plan.depthwise, whole ? extras.activation : none, extras.input_activation, stream),
                  "depthwise convolution launch");
      if (whole) return;
      extras.bias = nullptr;
    } else if (choice.graph != nullptr) {
      const std::array<void*, 4> buffers = {const_cast<void*>(x.raw_data()), const_cast<void*>(w.raw_data()),
                                            y.raw_data(), workspace};
      cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
      const std::shared_ptr<const cudnn_graph::Descriptor> pack = plan.PackFor(buffers, &status);
      if (pack != nullptr) status = cudnn_graph::Execute(cudnn, *choice.graph, *pack);
      // The message is built only on failure: this runs once per step.
      if (status != CUDNN_STATUS_SUCCESS)
        CheckCudnn(status, ctx.node(), ": cudnnBackendExecute (", *choice.graph, ")");
    } else if (choice.fused && (extras.residual == nullptr || same_shape_residual)) {
      CheckCudnn(RunFused(cudnn, plan, choice, x, w, y, extras, workspace), ctx.node(),
                 ": cudnnConvolutionBiasActivationForward");
      return;
    } else {
      const float one = 1.0f, zero = 0.0f;
      CheckCudnn(cudnnConvolutionForward(cudnn, &one, plan.x.handle, x.raw_data(), plan.w.handle, w.raw_data(),
                                         plan.conv.handle, choice.algorithm, workspace, choice.workspace_bytes,
                                         &zero, plan.y.handle, y.raw_data()),
                 ctx.node(), ": cudnnConvolutionForward");
    }
    const launch::ElementType type = FloatElementType(ctx, x.type());
    if (extras.residual != nullptr && !same_shape_residual) {  // broadcasting residual: its own pass first
      const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, y_shape, y_shape, extras.residual->shape());
      CheckLaunch(ctx,
                  launch::Binary(launch::BinaryOp::kAdd, type, y.raw_data(), extras.residual->raw_data(),
                                 y.raw_data(), y.NumElements(), &index, stream),
                  "residual launch");
      extras.residual = nullptr;
    }
    if (!extras.any()) return;
    const void* bias = extras.bias != nullptr ? extras.bias->raw_data() : nullptr;
    const void* residual = extras.residual != nullptr ? extras.residual->raw_data() : nullptr;
    if (channels_last_) {
      CheckLaunch(ctx,
                  launch::ConvEpilogueChannelsLast(type, y.raw_data(), bias, residual, y.NumElements(), y_shape[4],
                                                   extras.activation, stream),
                  "epilogue launch");
      return;
    }
    CheckLaunch(ctx,
                launch::ConvEpilogue(type, y.raw_data(), bias, residual, y_shape[0], y_shape[1], y_shape.SizeFrom(2),
                                     extras.activation, stream),
                "epilogue launch");
  }

  // cudnnConvolutionBiasActivationForward computes act(conv + z + bias) with act Relu or identity (the
  // latter only with the implicit-precomp-GEMM algorithm); it needs a bias, so a node without one gets zeros.
  void PrepareFusion(const KernelContext& ctx, const ConvGeometry& g, const Tensor& x, const Shape& y_shape,
                     const ConvExtras& extras, cudaStream_t stream, ConvPlan& plan) const {
    using Kind = launch::EpilogueActivation::Kind;
    if (!extras.any() || !(extras.activation.kind == Kind::kRelu || extras.activation.kind == Kind::kNone)) return;
    if (extras.residual != nullptr && extras.residual->shape() != y_shape) return;
    const cudnnDataType_t data = x.type() == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    std::vector<int> bias_dims(g.y_dims.size(), 1);
    bias_dims[1] = g.y_dims[1];
    SetTensor(plan.bias, data, bias_dims);
    CheckCudnn(cudnnCreateActivationDescriptor(&plan.activation.handle), "cudnnCreateActivationDescriptor");
    CheckCudnn(cudnnSetActivationDescriptor(
                   plan.activation.handle,
                   extras.activation.kind == Kind::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                   CUDNN_NOT_PROPAGATE_NAN, 0.0),
               "cudnnSetActivationDescriptor");
    if (extras.bias == nullptr) {
      plan.zero_bias = Tensor::Allocate(x.type(), Shape{g.y_shape[1]}, ctx.allocator());
      CheckCuda(cudaMemsetAsync(plan.zero_bias.raw_data(), 0, plan.zero_bias.SizeInBytes(), stream),
                "cudaMemsetAsync (zero bias)");
    }
    plan.fusable = true;
  }

  bool FusionAllowed(const ConvPlan& plan, const ConvExtras& extras, cudnnConvolutionFwdAlgo_t algorithm) const {
    return plan.fusable && (extras.activation.kind == launch::EpilogueActivation::Kind::kRelu ||
                            algorithm == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  }

  static cudnnStatus_t RunFused(cudnnHandle_t cudnn, const ConvPlan& plan, const ConvChoice& choice, const Tensor& x,
                                const Tensor& w, Tensor& y, const ConvExtras& extras, void* workspace) {
    const float one = 1.0f, zero = 0.0f;
    const void* bias = extras.bias != nullptr ? extras.bias->raw_data() : plan.zero_bias.raw_data();
    const void* z = extras.residual != nullptr ? extras.residual->raw_data() : y.raw_data();
    return cudnnConvolutionBiasActivationForward(
        cudnn, &one, plan.x.handle, x.raw_data(), plan.w.handle, w.raw_data(), plan.conv.handle, choice.algorithm,
        workspace, choice.workspace_bytes, extras.residual != nullptr ? &one : &zero, plan.y.handle, z,
        plan.bias.handle, bias, plan.activation.handle, plan.y.handle, y.raw_data());
  }

  void Describe(const ConvGeometry& g, DataType type, ConvPlan& plan) const {
    const cudnnDataType_t data = type == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    SetTensor(plan.x, data, g.x_dims, channels_last_);
    SetTensor(plan.y, data, g.y_dims, channels_last_);
    CheckCudnn(cudnnCreateFilterDescriptor(&plan.w.handle), "cudnnCreateFilterDescriptor");
    CheckCudnn(cudnnSetFilterNdDescriptor(plan.w.handle, data, channels_last_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                          static_cast<int>(g.w_dims.size()), g.w_dims.data()),
               "cudnnSetFilterNdDescriptor");
    CheckCudnn(cudnnCreateConvolutionDescriptor(&plan.conv.handle), "cudnnCreateConvolutionDescriptor");
    CheckCudnn(cudnnSetConvolutionNdDescriptor(plan.conv.handle, static_cast<int>(g.pads.size()), g.pads.data(),
                                               g.strides.data(), g.dilations.data(), CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               "cudnnSetConvolutionNdDescriptor");
    CheckCudnn(cudnnSetConvolutionGroupCount(plan.conv.handle, static_cast<int>(g.group)),
               "cudnnSetConvolutionGroupCount");
    // float32: tensor cores (TF32) only when use_tf32 allows; float16: tensor cores always.
    const cudnnMathType_t math = type == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                                 : ep_.options().use_tf32  ? CUDNN_DEFAULT_MATH
                                                           : CUDNN_FMA_MATH;
    CheckCudnn(cudnnSetConvolutionMathType(plan.conv.handle, math), "cudnnSetConvolutionMathType");
  }

  // Whether Tessera's depthwise kernel computes this convolution: channels last, 2-D, one filter per channel.
  bool DepthwiseApplies(const ConvGeometry& g) const {
    return channels_last_ && g.x_dims.size() == 4 && g.group > 1 && g.group == g.x_dims[1] &&
           g.w_dims[0] == g.x_dims[1] && g.w_dims[1] == 1;
  }

  static launch::DepthwiseGeometry DepthwiseGeometryOf(const ConvGeometry& g) {
    launch::DepthwiseGeometry d;
    d.batch = g.x_dims[0];
    d.channels = g.x_dims[1];
    d.in_h = g.x_dims[2];
    d.in_w = g.x_dims[3];
    d.out_h = g.y_dims[2];
    d.out_w = g.y_dims[3];
    d.kernel_h = g.w_dims[2];
    d.kernel_w = g.w_dims[3];
    d.stride_h = g.strides[0];
    d.stride_w = g.strides[1];
    d.pad_h = g.pads[0];
    d.pad_w = g.pads[1];
    d.dilation_h = g.dilations[0];
    d.dilation_w = g.dilations[1];
    return d;
  }

  // "conv;<type>;<layout>;x ...;w ...;[y ...;]pads ...;strides ...;dilations ...;": the start of the tuning key (kept
  // in tuning cache files: its form must not change) and of the plan cache's key.
  void WriteGeometry(std::ostream& key, const ConvGeometry& g, DataType type, bool with_output) const {
    const auto list = [&](const char* name, const std::vector<int>& values) {
      key << name;
      for (int v : values) key << ' ' << v;
      key << ';';
    };
    key << "conv;" << DataTypeName(type) << (channels_last_ ? ";nhwc;" : ";nchw;");
    list("x", g.x_dims);
    list("w", g.w_dims);
    if (with_output) list("y", g.y_dims);
    list("pads", g.pads);
    list("strides", g.strides);
    list("dilations", g.dilations);
  }

  // Everything the search for plan.choice depended on beyond the node itself: geometry, element type, layout,
  // alignment, the epilogue it was timed with, and the options that shaped the candidates (TuningResults' key).
  std::string TuningKey(const ConvGeometry& g, DataType type, int64_t alignment, bool bias,
                        const std::optional<Shape>& residual, bool depthwise_ok) const {
    std::ostringstream key;
    WriteGeometry(key, g, type, /*with_output=*/false);
    key << "group " << g.group << ";align " << alignment << ";depthwise " << depthwise_ok;
    key << ";bias " << bias << ";residual " << (residual ? residual->ToString() : "none");
    key << ";activation " << static_cast<int>(activation_.kind) << ' ' << activation_.alpha << ' ' << activation_.beta;
    const CudaProviderOptions& o = ep_.options();
    key << ";graphs " << GraphSession() << ";search " << static_cast<int>(o.cudnn_conv_algo_search) << ";tf32 "
        << o.use_tf32 << ";workspace " << WorkspaceLimit() << (deterministic_ ? ";deterministic" : "");
    return key.str();
  }

  // plan.choice as TuningResults stores it.
  static std::string TunedValue(const ConvChoice& choice) {
    std::ostringstream value;
    if (choice.depthwise)
      value << "depthwise";
    else if (choice.graph != nullptr)
      value << "graph " << choice.graph->heuristics_list << ' ' << choice.graph->position;
    else
      value << "legacy " << static_cast<int>(choice.algorithm) << ' ' << static_cast<int>(choice.math);
    return value.str();
  }

  // Sets plan.choice from a stored TunedValue without a search; false (plan unchanged but for graph plans cleared)
  // when it does not apply here, e.g. cuDNN no longer offers that configuration.
  bool ApplyTuned(const KernelContext& ctx, const std::string& tuned, const ConvGeometry& g, const Tensor& x,
                  const Tensor& w, Tensor& y, const ConvExtras& extras, int64_t alignment, ConvPlan& plan) const {
    std::istringstream in(tuned);
    std::string kind;
    in >> kind;
    if (kind == "depthwise") {
      if (!plan.depthwise_ok) return false;
      plan.choice = ConvChoice{};
      plan.choice.depthwise = true;
      return true;
    }
    const cudaStream_t stream = StreamOf(ctx);
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    if (kind == "graph") {
      int list = -1;
      int64_t position = -1;
      if (!(in >> list >> position)) return false;
      // A node of the same convolution searched this session: its candidates include the stored configuration.
      const PlanRequest searched = GraphPlanRequest(ctx.node(), g, x.type(), alignment, -1, -1);
      if (std::shared_ptr<const CudnnPlanSet> set = ep_.cudnn_plans().Find(searched.key); set != nullptr)
        for (const cudnn_graph::Plan& candidate : set->plans)
          if (candidate.heuristics_list == list && candidate.position == position) {
            plan.graph_set = std::move(set);
            plan.choice = ConvChoice{};
            plan.choice.graph = &candidate;
            plan.choice.workspace_bytes = static_cast<size_t>(candidate.workspace_bytes);
            return true;
          }
      BuildGraphPlans(ctx, lease.cudnn(), g, x.type(), alignment, plan, list, position);
      if (plan.graph_plans().size() != 1) {
        plan.graph_set = nullptr;
        return false;
      }
      plan.choice = ConvChoice{};
      plan.choice.graph = &plan.graph_plans()[0];
      plan.choice.workspace_bytes = static_cast<size_t>(plan.graph_plans()[0].workspace_bytes);
      return true;
    }
    int algorithm = 0, math = 0;
    if (kind != "legacy" || !(in >> algorithm >> math)) return false;
    ConvChoice choice;
    choice.algorithm = static_cast<cudnnConvolutionFwdAlgo_t>(algorithm);
    choice.math = static_cast<cudnnMathType_t>(math);
    Apply(ctx, plan, choice);
    if (cudnnGetConvolutionForwardWorkspaceSize(lease.cudnn(), plan.x.handle, plan.w.handle, plan.conv.handle,
                                                plan.y.handle, choice.algorithm,
                                                &choice.workspace_bytes) != CUDNN_STATUS_SUCCESS ||
        choice.workspace_bytes > WorkspaceLimit())
      return false;
    choice.fused = FusionAllowed(plan, extras, choice.algorithm) &&
                   RunFused(lease.cudnn(), plan, choice, x, w, y, extras, lease.workspace(choice.workspace_bytes)) ==
                       CUDNN_STATUS_SUCCESS;
    plan.choice = choice;
    return true;
  }

  // A session that replays its runs as CUDA graphs (enable_cuda_graph, or automatic graphs on a plan that allows
  // them): no host cost per step, so the device time alone decides.
  bool GraphSession() const { return ep_.runs_replayed(); }
  // Whether a depthwise convolution runs Tessera's kernel without timing cuDNN's: in eager sessions, which are bound by
  // the host (one launch with the epilogue beats cuDNN's call plus an epilogue), and for ActivatedNchwcConv, whose
  // input activation only that kernel applies.
  bool DepthwiseKernelOnly() const {
    return !GraphSession() || input_activation_.kind != launch::EpilogueActivation::Kind::kNone;
  }

  // The graph API's candidate plans for the convolution alone, best first (none when it has no engine): from the
  // EP's cache, built ahead (PrefetchPlans) or now on `cudnn`. only_list/only_position: one stored configuration.
  void BuildGraphPlans(const KernelContext& ctx, cudnnHandle_t cudnn, const ConvGeometry& g, DataType type,
                       int64_t alignment, ConvPlan& plan, int only_list = -1, int64_t only_position = -1) const {
    const PlanRequest request = GraphPlanRequest(ctx.node(), g, type, alignment, only_list, only_position);
    plan.graph_set = ep_.cudnn_plans().Get(request.key, cudnn, request.build);
  }

  struct PlanRequest {
    std::string key;
    CudnnPlanCache::Build build;
  };

  // What BuildGraphPlans asks the EP's cache for: the key names everything the plans depend on (the operation graph
  // and the filter); the build runs on whichever thread and handle the cache gives it, so it copies what it needs.
  PlanRequest GraphPlanRequest(const Node& node, const ConvGeometry& g, DataType type, int64_t alignment,
                               int only_list, int64_t only_position) const {
    cudnn_graph::PlanFilter filter;
    filter.max_workspace_bytes = static_cast<int64_t>(WorkspaceLimit());
    // float32 with use_tf32 = 0 must stay on FMA arithmetic; float16 always runs on tensor cores.
    filter.allow_tensor_cores = type == DataType::kFloat16 || ep_.options().use_tf32;
    // Engines that compile kernels when their plan is finalized took 0.2-1.4 s per shape on the H100 host.
    filter.allow_runtime_compiled = false;
    filter.allow_nondeterministic = !deterministic_;
    filter.max_plans = ep_.options().cudnn_conv_algo_search == ConvAlgoSearch::kExhaustive ? 8 : 1;
    filter.only_list = only_list;
    filter.only_position = only_position;
    std::ostringstream key;
    WriteGeometry(key, g, type, /*with_output=*/true);
    key << "group " << g.group << ";align " << alignment << ";workspace " << filter.max_workspace_bytes << ";tc " << filter.allow_tensor_cores
        << ";nondeterministic " << filter.allow_nondeterministic << ";plans " << filter.max_plans << ";only "
        << only_list << ' ' << only_position;
    PlanRequest request;
    request.key = key.str();
    request.build = [g, type, alignment, filter, channels_last = channels_last_,
                     where = node.Describe()](cudnnHandle_t cudnn) {
      namespace cg = cudnn_graph;
      const cudnnDataType_t data = type == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
      auto tensor = [&](int64_t uid, const std::vector<int>& dims) {
        return cg::MakeTensor({uid, data, ToInt64s(dims), LayoutStrides(dims, channels_last), alignment, false});
      };
      CudnnPlanSet set;
      try {
        cg::Descriptor tx = tensor(1, g.x_dims), tw = tensor(2, g.w_dims), ty = tensor(3, g.y_dims);
        cg::Descriptor conv =
            cg::MakeConvolution({ToInt64s(g.pads), ToInt64s(g.strides), ToInt64s(g.dilations), CUDNN_DATA_FLOAT});
        cg::Descriptor op = cg::TryMakeConvolutionForward(tx, tw, ty, conv);
        if (!op.defined()) return set;
        cg::Descriptor graph = cg::TryMakeOperationGraph(cudnn, {&op});
        if (!graph.defined()) return set;
        set.plans = cg::MakePlans(cudnn, graph, filter);
        for (cg::Descriptor* part : {&tx, &tw, &ty, &conv, &op, &graph}) set.parts.push_back(std::move(*part));
      } catch (const Error& e) {  // a descriptor cuDNN refuses: the legacy API runs the convolution
        Log(LogLevel::kVerbose, where, ": cuDNN graph API: ", e.what());
        set.plans.clear();
      }
      return set;
    };
    return request;
  }

  // At creation, for a node whose shapes the session inferred: asks the EP's cache to build the graph-API plans
  // PlanFor will want for them on its worker threads: the configuration the tuning cache stores, else (HEURISTIC,
  // DEFAULT, in sessions whose runs execute the kernels) cuDNN's first proposal. An EXHAUSTIVE search without a
  // stored result builds its candidates itself. Kernels are created before the session says whether its runs are
  // replayed (SetRunsReplayed): the EP's assumption from its options decides here.
  // Assumes 16-byte aligned buffers (the arena's); a run that brings other shapes or alignments plans for them.
  void PrefetchPlans(const KernelInfo& info) const {
    if (!ep_.cudnn_plans().builds_ahead()) return;
    if (ep_.options().cudnn_conv_algo_search == ConvAlgoSearch::kDefault && GraphSession()) return;
    const DataType type = info.InputType(0);
    if (type != DataType::kFloat && type != DataType::kFloat16) return;
    const std::optional<Shape> x_in = info.InputShape(0), w = info.InputShape(1);
    if (!x_in || !w || info.ConstantInput(1) == nullptr) return;
    const bool has_bias = info.node().HasInput(2);
    std::optional<Shape> residual;
    if (fused_node_ && info.node().HasInput(3)) {
      residual = info.InputShape(3);
      if (!residual) return;
    }
    try {
      Shape x = *x_in;
      if (channels_last_ && x.rank() == 5) {
        if (x[1] != 1) return;
        x = Shape{x[0], x[4], x[2], x[3]};
      }
      ConvGeometry g = Resolve(info.node(), x, *w);
      if (channels_last_ && (g.y_shape.rank() != 4 || w->rank() != 4)) return;
      if (g.y_shape.NumElements() == 0) return;
      const bool depthwise_ok = DepthwiseApplies(g);
      if (depthwise_ok && DepthwiseKernelOnly()) return;  // no cuDNN plan
      constexpr int64_t kArenaAlignment = 16;
      int only_list = -1;
      int64_t only_position = -1;
      if (const std::optional<std::string> tuned =
              ep_.tuning().Find(TuningKey(g, type, kArenaAlignment, has_bias, residual, depthwise_ok))) {
        std::istringstream in(*tuned);
        std::string kind;
        if (!(in >> kind) || kind != "graph" || !(in >> only_list >> only_position)) return;  // no graph-API plan
      } else if (ep_.options().cudnn_conv_algo_search == ConvAlgoSearch::kExhaustive) {
        // The search builds its candidates itself. Timing candidates that worker threads had built picked slower
        // configurations for some of ResNet-50's 1x1 convolutions, run after run (0.626-0.656 ms against
        // 0.590-0.592 with plan_build_threads = 0, H200, host tensors; the same candidates by engine, other split
        // knobs), for reasons not yet known; the stored result of that search is then built ahead by later sessions.
        return;
      } else if (GraphSession()) {
        return;  // HEURISTIC and DEFAULT take a legacy algorithm first when runs are replayed (Candidates)
      }
      PlanRequest request = GraphPlanRequest(info.node(), g, type, kArenaAlignment, only_list, only_position);
      Log(LogLevel::kVerbose, info.node().Describe(), ": X ", x_in->ToString(), " asks for its cuDNN plans ahead",
          only_list >= 0 ? " (the tuning cache's configuration)" : "");
      ep_.cudnn_plans().Prefetch(request.key, std::move(request.build));
    } catch (const Error&) {  // shapes the node refuses: its first run reports them
    }
  }

  size_t WorkspaceLimit() const {
    size_t limit = ep_.options().cudnn_conv_use_max_workspace ? kMaxWorkspaceBytes : kSmallWorkspaceBytes;
    if (ep_.options().gpu_mem_limit != 0) limit = std::min(limit, ep_.options().gpu_mem_limit / 4);
    return limit;
  }

  // Candidates, best first. Eager sessions: the graph API's plans (cuDNN's heuristic order), or where it has none
  // the legacy candidates. Graph sessions: the legacy candidates, then the graph API's plans. Legacy candidates:
  // DEFAULT: implicit-precomp GEMM; HEURISTIC and replayed sessions' EXHAUSTIVE: cuDNN's ranking; eager
  // EXHAUSTIVE: cuDNN's ranking plus its measured list (cudnnFindConvolutionForwardAlgorithmEx). Grouped
  // convolutions (depthwise) leave out the FFT algorithms and cuDNN's measured list: timing MobileNetV2's float32
  // NCHW depthwise convolutions with FFT captured in a graph stalled the host for minutes on the H100 (cuDNN 9.19),
  // and FFT never wins on small per-group filters.
  std::vector<ConvChoice> Candidates(const KernelContext& ctx, const Tensor& x, const Tensor& w, Tensor& y,
                                     cudnnHandle_t cudnn, const ConvPlan& plan, Tensor& search_workspace) const {
    std::vector<ConvChoice> graph_choices;
    for (const cudnn_graph::Plan& p : plan.graph_plans())
      graph_choices.push_back({&p, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_DEFAULT_MATH,
                               static_cast<size_t>(p.workspace_bytes), false});
    if (!GraphSession() && !graph_choices.empty()) return graph_choices;  // eager: host cost first
    // Depthwise (NHWC, one filter per channel) in a replayed session: the graph API's plans and Tessera's kernel;
    // cuDNN's legacy grouped algorithms never won there on MobileNetV2 (H100, float16: the graph API's engine 57 on
    // the 112x112 and 56x56 maps, Tessera's kernel on the others).
    const bool without_legacy = plan.depthwise_ok && !graph_choices.empty();
    std::vector<ConvChoice> legacy =
        without_legacy ? std::vector<ConvChoice>{} : LegacyCandidates(ctx, x, w, y, cudnn, plan, search_workspace);
    if (legacy.empty() && GraphSession() && !without_legacy) legacy.push_back(DefaultChoice(ctx, cudnn, plan, x.type()));
    legacy.insert(legacy.end(), graph_choices.begin(), graph_choices.end());
    if (plan.depthwise_ok) {  // timed against cuDNN's (EXHAUSTIVE); the others take cuDNN's first
      ConvChoice depthwise;
      depthwise.depthwise = true;
      legacy.push_back(depthwise);
    }
    return legacy;
  }

  // The legacy API's candidates, best first (see Candidates).
  std::vector<ConvChoice> LegacyCandidates(const KernelContext& ctx, const Tensor& x, const Tensor& w, Tensor& y,
                                           cudnnHandle_t cudnn, const ConvPlan& plan, Tensor& search_workspace) const {
    const std::string where = ctx.node().Describe();
    const ConvAlgoSearch search = ep_.options().cudnn_conv_algo_search;
    if (search == ConvAlgoSearch::kDefault) return {};
    const size_t limit = WorkspaceLimit();
    // float32 with use_tf32 = 0 must stay on FMA kernels; cuDNN also lists tensor-core variants.
    const bool fma_only = x.type() == DataType::kFloat && !ep_.options().use_tf32;
    std::vector<ConvChoice> candidates;
    const auto add = [&](const cudnnConvolutionFwdAlgoPerf_t* results, int count) {
      for (int i = 0; i < count; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
        if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit) continue;
        if (deterministic_ && r.determinism == CUDNN_NON_DETERMINISTIC) continue;
        if (fma_only && r.mathType != CUDNN_FMA_MATH) continue;
        const bool fft = r.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || r.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
        if (fft && group_ > 1) continue;
        const bool seen = std::any_of(candidates.begin(), candidates.end(), [&](const ConvChoice& c) {
          return c.algorithm == r.algo && c.math == r.mathType;
        });
        if (!seen) candidates.push_back({nullptr, r.algo, r.mathType, r.memory, false});
      }
    };
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    CheckCudnn(cudnnGetConvolutionForwardAlgorithm_v7(cudnn, plan.x.handle, plan.w.handle, plan.conv.handle,
                                                      plan.y.handle, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results),
               where, ": cudnnGetConvolutionForwardAlgorithm_v7");
    add(results, count);
    // EXHAUSTIVE (with a stream to time on) in a session whose runs execute the kernels: cuDNN's measured list too.
    // Replayed sessions time every candidate themselves (Choose), and cudnnGetConvolutionForwardAlgorithm_v7 lists
    // every algorithm the descriptors allow, so the measured list would only repeat that work at creation.
    if (search_workspace.defined() && group_ == 1 && !GraphSession()) {
      CheckCudnn(cudnnFindConvolutionForwardAlgorithmEx(
                     cudnn, plan.x.handle, x.raw_data(), plan.w.handle, w.raw_data(), plan.conv.handle, plan.y.handle,
                     y.raw_data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results, search_workspace.raw_data(),
                     search_workspace.SizeInBytes()),
                 where, ": cudnnFindConvolutionForwardAlgorithmEx");
      add(results, count);
    }
    return candidates;
  }

  // Picks plan.choice. HEURISTIC takes cuDNN's first suitable candidate. EXHAUSTIVE times every candidate
  // running what the node really runs (the fused call where cuDNN accepts it, else convolution + epilogue
  // kernel), because cuDNN's own search times the bare convolution only: the fastest bare convolution can
  // be the slowest once the epilogue is added. This blocks the first run of each input shape.
  void Choose(const KernelContext& ctx, const Tensor& x, const Tensor& w, Tensor& y, const ConvExtras& extras,
              cudaStream_t stream, ConvPlan& plan) const {
    // Timing captures the stream in a graph, which CUDA's legacy default stream (no stream) cannot be.
    const bool exhaustive = ep_.options().cudnn_conv_algo_search == ConvAlgoSearch::kExhaustive && stream != nullptr;
    Tensor search_workspace = exhaustive ? SearchWorkspace(ctx, WorkspaceLimit()) : Tensor();
    // The workers' host work and cuDNN's kernel loading for them would disturb the timing; they finish first anyway.
    if (exhaustive) ep_.cudnn_plans().WaitIdle();
    LibraryHandles::Lease lease = ep_.handles().Acquire(stream);
    cudnnHandle_t cudnn = lease.cudnn();
    std::vector<ConvChoice> candidates = Candidates(ctx, x, w, y, cudnn, plan, search_workspace);
    if (candidates.empty()) candidates.push_back(DefaultChoice(ctx, cudnn, plan, x.type()));
    if (!exhaustive) {
      candidates.resize(1);
    } else {  // the search's scratch may have been cut short by a lack of memory
      const size_t available = search_workspace.SizeInBytes();
      std::erase_if(candidates, [&](const ConvChoice& c) { return c.workspace_bytes > available; });
      if (candidates.empty()) candidates.push_back(DefaultChoice(ctx, cudnn, plan, x.type()));
    }
    float best_ms = std::numeric_limits<float>::infinity();
    for (ConvChoice& candidate : candidates) {
      if (candidate.graph == nullptr && !candidate.depthwise) {
        Apply(ctx, plan, candidate);
        void* trial_workspace =
            exhaustive ? search_workspace.raw_data() : lease.workspace(candidate.workspace_bytes);
        candidate.fused = FusionAllowed(plan, extras, candidate.algorithm) &&
                          RunFused(cudnn, plan, candidate, x, w, y, extras, trial_workspace) == CUDNN_STATUS_SUCCESS;
      }
      if (!exhaustive) {
        plan.choice = candidate;
        return;
      }
      const float ms = TimeCandidate(ctx, cudnn, plan, candidate, x, w, y, extras, search_workspace, stream);
      if (ms < best_ms || &candidate == &candidates.front()) {  // the first one stands if none can be timed
        best_ms = ms;
        plan.choice = candidate;
      }
    }
    if (plan.choice.graph == nullptr && !plan.choice.depthwise) Apply(ctx, plan, plan.choice);
    // The candidate set stays with the EP's cache (choice.graph points into it) while a graph-API plan is chosen.
    if (plan.choice.graph == nullptr) {
      plan.graph_set = nullptr;
    }
  }

  // GPU milliseconds per run of the node's computation with `candidate`, measured on a CUDA graph of a few runs
  // (graph_timing.h). Infinity when the candidate cannot be captured.
  float TimeCandidate(const KernelContext& ctx, cudnnHandle_t cudnn, const ConvPlan& plan, const ConvChoice& candidate,
                      const Tensor& x, const Tensor& w, Tensor& y, const ConvExtras& extras, Tensor& workspace,
                      cudaStream_t stream) const {
    return TimeCapturedCalls(stream, 8, [&](cudaStream_t on) {
      Enqueue(ctx, cudnn, plan, candidate, x, w, y, extras, workspace.raw_data(), on);
    });
  }

  void Apply(const KernelContext& ctx, const ConvPlan& plan, const ConvChoice& choice) const {
    CheckCudnn(cudnnSetConvolutionMathType(plan.conv.handle, choice.math), ctx.node(),
               ": cudnnSetConvolutionMathType");
  }

  ConvChoice DefaultChoice(const KernelContext& ctx, cudnnHandle_t cudnn, const ConvPlan& plan, DataType type) const {
    ConvChoice choice;
    choice.math = type == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                  : ep_.options().use_tf32   ? CUDNN_DEFAULT_MATH
                                             : CUDNN_FMA_MATH;
    CheckCudnn(cudnnGetConvolutionForwardWorkspaceSize(cudnn, plan.x.handle, plan.w.handle, plan.conv.handle,
                                                       plan.y.handle, choice.algorithm, &choice.workspace_bytes),
               ctx.node(), ": cudnnGetConvolutionForwardWorkspaceSize");
    return choice;
  }

  // Scratch memory for the exhaustive search: as much as allowed, less when the device is short.
  static Tensor SearchWorkspace(const KernelContext& ctx, size_t limit) {
    for (size_t bytes = limit;; bytes /= 4) {
      try {
        return Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(bytes)}, ctx.allocator());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kOutOfMemory || bytes == 0) throw;
      }
    }
  }

  const CudaExecutionProvider& ep_;
  cpu::WindowAttributes attributes_;
  int64_t group_;
  bool fused_node_;                        // ai.tessera::FusedConv or NchwcConv: Z and activation
  bool channels_last_;                     // ai.tessera::NchwcConv: NHWC
  bool deterministic_;                     // SessionOptions::use_deterministic_compute
  launch::EpilogueActivation activation_;  // the fused activation (none for Conv)
  launch::EpilogueActivation input_activation_;  // ActivatedNchwcConv: applied to X (none otherwise)
  mutable std::shared_mutex mutex_;  // plans_ and krsc_filters_
  mutable std::map<std::vector<int>, std::unique_ptr<ConvPlan>> plans_;
  mutable std::map<const void*, Tensor> krsc_filters_;  // NchwcConv: W in KRSC, by W's address
  // What the latest step with a new shape, W or alignment resolved: a step with the same X and W shapes, W and
  // operand alignment reuses it instead of resolving the window, looking up the KRSC filter and the plan under the
  // lock (about a microsecond of host time per step, at ~5 us per eager step). Plans and filters are never erased,
  // so the pointers stay valid; concurrent runs swap the whole record atomically.
  struct StepMemo {
    Shape x_shape, w_shape;
    const void* w_data = nullptr;
    ConvGeometry geometry;
    const Tensor* krsc = nullptr;  // NchwcConv: krsc_filters_'s copy of W
    int64_t alignment = 0;
    const ConvPlan* plan = nullptr;
  };
  mutable std::atomic<std::shared_ptr<const StepMemo>> memo_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register<ConvKernel>(MakeDef("Conv", 1, INT_MAX, FloatTypes()));
  KernelDef fused = MakeDef("FusedConv", 1, INT_MAX, FloatTypes());
  fused.domain = "ai.tessera";
  registry.Register<ConvKernel>(std::move(fused));
  KernelDef nhwc = MakeDef("NchwcConv", 1, INT_MAX, FloatTypes());
  nhwc.domain = "ai.tessera";
  registry.Register<ConvKernel>(nhwc);
  nhwc.op_type = "ActivatedNchwcConv";  // NchwcConv of input_activation(X) (the depthwise_input_activation pass)
  registry.Register<ConvKernel>(std::move(nhwc));
}

}  // namespace tessera::cuda
