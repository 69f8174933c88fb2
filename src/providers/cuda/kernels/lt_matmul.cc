#include "providers/cuda/kernels/lt_matmul.h"

#include <cublasLt.h>

#include <cstdio>
#include <limits>
#include <mutex>
#include <string>

#include "tessera/ep/logging.h"
#include "providers/cuda/cuda_handles.h"
#include "providers/cuda/kernels/graph_timing.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"

namespace tessera::cuda {

namespace {

// The largest power of two (at most 256) dividing an address: the alignment cuBLASLt may assume for it.
uint32_t AlignmentOf(const void* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

cublasLtEpilogue_t ToCublas(LtEpilogue epilogue) {
  switch (epilogue) {
    case LtEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::kReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::kNone: break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <typename Value>
void SetDesc(const KernelContext& ctx, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
             const Value& value) {
  CheckCublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)), ctx.node(),
              ": cublasLtMatmulDescSetAttribute");
}

template <typename Value>
void SetLayout(const KernelContext& ctx, cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
               const Value& value) {
  CheckCublas(cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof(value)), ctx.node(),
              ": cublasLtMatrixLayoutSetAttribute");
}

struct DescDeleter {
  void operator()(cublasLtMatmulDesc_t desc) const { cublasLtMatmulDescDestroy(desc); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayout_t layout) const { cublasLtMatrixLayoutDestroy(layout); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t preference) const { cublasLtMatmulPreferenceDestroy(preference); }
};
using DescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using PreferencePtr = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// An algorithm as the tuning cache stores it: its opaque words in hex.
std::string AlgoText(const cublasLtMatmulAlgo_t& algo) {
  std::string text;
  char word[17];
  for (uint64_t v : algo.data) {
    std::snprintf(word, sizeof(word), "%016llx", static_cast<unsigned long long>(v));
    text += word;
  }
  return text;
}

// The heuristic's first proposals that cuBLASLt can run, best first.
constexpr int kCandidates = 8;

}  // namespace

struct LtMatmulPlans::Key {
  DataType type;
  bool float_out, tf32, trans_a, trans_b, with_c;
  int64_t m, n, k, lda, batch, stride_a, stride_b, stride_out;
  LtEpilogue epilogue;
  const void* bias;
  uint32_t align_a, align_b, align_c, align_out;

  bool operator==(const Key&) const = default;
};

struct LtMatmulPlans::Plan {
  Key key;
  bool supported = false;  // false: cuBLASLt found no algorithm
  DescPtr desc;
  LayoutPtr a_layout, b_layout, out_layout;  // cuBLASLt's A (our b), B (our a), C and D
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  StepGraphs steps;  // the call captured per set of buffers and stream (eager sessions)
};

LtMatmulPlans::LtMatmulPlans() = default;
LtMatmulPlans::~LtMatmulPlans() = default;

bool LtMatmulPlans::Supports(const RowMajorProduct& product) {
  const bool with_bias = product.epilogue == LtEpilogue::kBias || product.epilogue == LtEpilogue::kReluBias;
  if (with_bias && (product.bias == nullptr || AlignmentOf(product.bias) < 16)) return false;
  if (product.m == 0 || product.n == 0 || product.k == 0) return false;
  if (product.lda != 0 && (product.trans_a || product.lda < product.k)) return false;
  return product.batch == 1 || (product.stride_a != 0 && product.stride_b != 0 && product.stride_out != 0);
}

std::shared_ptr<const LtMatmulPlans::Plan> LtMatmulPlans::Find(const Key& key) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (const auto& plan : plans_)
    if (plan->key == key) return plan;
  return nullptr;
}

// The tuning cache's key: everything the timing depended on.
std::string LtMatmulPlans::TuningKey(const Key& key) {
  std::string text = "lt;" + std::string(DataTypeName(key.type)) + (key.float_out ? ";float_out" : "") +
                     (key.tf32 ? ";tf32" : "") + ";" + (key.trans_a ? "T" : "N") + (key.trans_b ? "T" : "N") +
                     (key.with_c ? ";c" : "") + ";m" + std::to_string(key.m) + ";n" + std::to_string(key.n) + ";k" +
                     std::to_string(key.k);
  if (key.lda != key.k) text += ";lda" + std::to_string(key.lda);
  if (key.batch > 1)
    text += ";batch" + std::to_string(key.batch) + ";strides" + std::to_string(key.stride_a) + "," +
            std::to_string(key.stride_b) + "," + std::to_string(key.stride_out);
  text += ";epilogue" + std::to_string(static_cast<int>(key.epilogue)) + ";align" + std::to_string(key.align_a) + "," +
          std::to_string(key.align_b) + "," + std::to_string(key.align_c) + "," + std::to_string(key.align_out);
  return text;
}

// Which candidate a new plan takes: the one the tuning results hold for its key when the heuristic still proposes
// it; else, with matmul_algo_search EXHAUSTIVE and a stream that can be timed on, the fastest when each runs the
// product 8 times in a captured graph (on the product's own operands; into a scratch output when the product
// accumulates into its output); else the heuristic's first.
size_t LtMatmulPlans::Choose(const KernelContext& ctx, const CudaExecutionProvider& ep, const RowMajorProduct& product,
                             const Plan& plan, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                             const LibraryHandles::Lease& lease, cudaStream_t stream) const {
  if (candidates.size() < 2) return 0;
  const std::string tuning_key = TuningKey(plan.key);
  const std::optional<std::string> tuned = ep.tuning().Find(tuning_key);
  if (tuned)
    for (size_t i = 0; i < candidates.size(); ++i)
      if (AlgoText(candidates[i].algo) == *tuned) return i;
  if (ep.options().matmul_algo_search != MatmulAlgoSearch::kExhaustive || stream == nullptr) return 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusActive;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) cudaGetLastError();
  if (capture != cudaStreamCaptureStatusNone) return 0;  // a run being captured cannot time anything

  Tensor scratch;
  void* out = product.out;
  const void* c = product.c != nullptr ? product.c : product.out;
  if (c == product.out && product.beta != 0.0f) {  // timing runs would accumulate into the real output
    const int64_t elements = (product.batch - 1) * product.stride_out + product.m * product.n;
    scratch = Tensor::Allocate(product.float_out ? DataType::kFloat : product.type, Shape{elements}, ctx.allocator());
    out = scratch.raw_data();
    c = out;
  }
  void* workspace = lease.cublas_workspace();
  size_t best = 0;
  float best_ms = std::numeric_limits<float>::infinity();
  std::string times;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const float ms = TimeCapturedCalls(stream, 8, [&](cudaStream_t on) {
      if (cublasLtMatmul(lease.cublas_lt(), plan.desc.get(), &product.alpha, product.b, plan.a_layout.get(), product.a,
                         plan.b_layout.get(), &product.beta, c, plan.out_layout.get(), out, plan.out_layout.get(),
                         &candidates[i].algo, candidates[i].workspaceSize > 0 ? workspace : nullptr,
                         candidates[i].workspaceSize, on) != CUBLAS_STATUS_SUCCESS)
        Fail(ErrorCode::kRuntime, "cublasLtMatmul refused a candidate");
    });
    char text[32];
    std::snprintf(text, sizeof(text), times.empty() ? "%.2f" : " %.2f", static_cast<double>(ms) * 1000.0);
    times += text;
    if (ms < best_ms) {
      best_ms = ms;
      best = i;
    }
  }
  Log(LogLevel::kVerbose, ctx.node().Describe(), ": cuBLASLt m ", product.m, " n ", product.n, " k ", product.k,
      " batch ", product.batch, ": candidate ", best, " of ", candidates.size(), " (us: ", times, ")");
  if (best_ms < std::numeric_limits<float>::infinity())
    ep.tuning().Store(tuning_key, AlgoText(candidates[best].algo), /*replace=*/tuned.has_value());
  return best;
}

bool LtMatmulPlans::Run(const KernelContext& ctx, const CudaExecutionProvider& ep,
                        const RowMajorProduct& product) const {
  if (!Supports(product)) return false;
  const bool half = product.type == DataType::kFloat16;
  const Key key{product.type,
                product.float_out && half,
                !half && ep.options().use_tf32,
                product.trans_a,
                product.trans_b,
                product.c != nullptr,
                product.m,
                product.n,
                product.k,
                product.lda != 0 ? product.lda : product.k,
                product.batch,
                product.stride_a,
                product.stride_b,
                product.stride_out,
                product.epilogue,
                product.bias,
                AlignmentOf(product.a),
                AlignmentOf(product.b),
                AlignmentOf(product.c != nullptr ? product.c : product.out),
                AlignmentOf(product.out)};
  const cudaStream_t stream = StreamOf(ctx);
  LibraryHandles::Lease lease = ep.handles().Acquire(stream);
  std::shared_ptr<const Plan> plan = Find(key);
  if (plan == nullptr) {
    auto made = std::make_shared<Plan>();
    made->key = key;
    const std::string node = ctx.node().Describe();
    const cudaDataType_t data = half ? CUDA_R_16F : CUDA_R_32F;
    const cublasComputeType_t compute = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t desc = nullptr;
    CheckCublas(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), node, ": cublasLtMatmulDescCreate");
    made->desc.reset(desc);
    // Column-major: out^T [n, m] = op(b)^T [n, k] x op(a)^T [k, m].
    const cublasOperation_t op_b = product.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = product.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    SetDesc(ctx, desc, CUBLASLT_MATMUL_DESC_TRANSA, op_b);
    SetDesc(ctx, desc, CUBLASLT_MATMUL_DESC_TRANSB, op_a);
    SetDesc(ctx, desc, CUBLASLT_MATMUL_DESC_EPILOGUE, ToCublas(product.epilogue));
    if (product.epilogue == LtEpilogue::kBias || product.epilogue == LtEpilogue::kReluBias)
      SetDesc(ctx, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, product.bias);
    // rows x cols column-major of `type`, columns `leading` elements apart (0: rows).
    auto layout = [&](uint64_t rows, uint64_t cols, int64_t stride, cudaDataType_t type, int64_t leading) {
      cublasLtMatrixLayout_t made_layout = nullptr;
      CheckCublas(cublasLtMatrixLayoutCreate(&made_layout, type, rows, cols,
                                             leading != 0 ? leading : static_cast<int64_t>(rows)),
                  node, ": cublasLtMatrixLayoutCreate");
      LayoutPtr owned(made_layout);
      if (product.batch > 1) {
        SetLayout(ctx, made_layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(product.batch));
        SetLayout(ctx, made_layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
      }
      return owned;
    };
    const uint64_t m = static_cast<uint64_t>(product.m), n = static_cast<uint64_t>(product.n),
                   k = static_cast<uint64_t>(product.k);
    made->a_layout =
        product.trans_b ? layout(k, n, product.stride_b, data, 0) : layout(n, k, product.stride_b, data, 0);
    made->b_layout = product.trans_a ? layout(m, k, product.stride_a, data, 0)
                                     : layout(k, m, product.stride_a, data, key.lda);
    // float32 sums of float16 operands: C and D float32 (the compute type is float32 already).
    made->out_layout = layout(n, m, product.stride_out, key.float_out ? CUDA_R_32F : data, 0);

    cublasLtMatmulPreference_t preference = nullptr;
    CheckCublas(cublasLtMatmulPreferenceCreate(&preference), node, ": cublasLtMatmulPreferenceCreate");
    PreferencePtr owned_preference(preference);
    const uint64_t workspace_cap = LibraryHandles::Lease::kCublasWorkspaceBytes;
    CheckCublas(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspace_cap, sizeof(workspace_cap)),
                node, ": cublasLtMatmulPreferenceSetAttribute");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out}};
    for (const auto& [attribute, bytes] : alignments)
      CheckCublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof(bytes)), node,
                  ": cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lease.cublas_lt(), desc, made->a_layout.get(), made->b_layout.get(),
                                       made->out_layout.get(), made->out_layout.get(), preference, kCandidates,
                                       results, &found);
    if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
      CheckCublas(status, node, ": cublasLtMatmulAlgoGetHeuristic");
    std::vector<cublasLtMatmulHeuristicResult_t> candidates;
    for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_cap)
        candidates.push_back(results[i]);
    if (!candidates.empty()) {
      const size_t chosen = Choose(ctx, ep, product, *made, candidates, lease, stream);
      made->supported = true;
      made->algo = candidates[chosen].algo;
      made->workspace_bytes = candidates[chosen].workspaceSize;
    }
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (plans_.size() >= kMaxPlans) plans_.erase(plans_.begin());
    plans_.push_back(made);
    plan = std::move(made);
  }
  if (!plan->supported) return false;
  void* workspace = plan->workspace_bytes > 0 ? lease.cublas_workspace() : nullptr;
  const void* c = product.c != nullptr ? product.c : product.out;
  StepKey step(stream);
  step.Add(product.a).Add(product.b).Add(c).Add(product.out).Add(workspace);
  step.AddFloat(product.alpha).AddFloat(product.beta);
  const auto work = [&](cudaStream_t on, const LibraryHandles::Lease* handles) {
    CheckCublas(cublasLtMatmul(handles->cublas_lt(), plan->desc.get(), &product.alpha, product.b, plan->a_layout.get(),
                               product.a, plan->b_layout.get(), &product.beta, c, plan->out_layout.get(),
                               product.out, plan->out_layout.get(), &plan->algo, workspace, plan->workspace_bytes, on),
                ctx.node(), ": cublasLtMatmul");
  };
  plan->steps.Run(ctx, ep, &lease, step, StepLibrary::kCublasLt, work);
  return true;
}

}  // namespace tessera::cuda
