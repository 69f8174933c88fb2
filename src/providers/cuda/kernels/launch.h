// Launchers of the CUDA EP's own device kernels (compiled by nvcc in *.cu files). Plain types only,
// so that the kernel classes (host C++20) and the device code share nothing but this header.
//
// Every launcher queues work on `stream` and returns without waiting; the return value is the launch
// status (cudaGetLastError after the launch), which the caller turns into an Error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tessera::cuda::launch {

enum class ElementType { kFloat, kHalf };
// Element types of the kernels that are not float-only (Cast, comparisons).
enum class ScalarType { kFloat, kHalf, kDouble, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool };

inline constexpr int kMaxRank = 8;

// Maps a linear index of a row-major output of `rank` dims to offsets in up to two operands whose
// strides are 0 along broadcast dimensions.
struct BroadcastIndex {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// ---- elementwise (elementwise.cu) ---------------------------------------------------------------
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kPow };
// out[i] = a[i] op b[i] over `n` elements. `index` is null when a, b and out have the same shape;
// otherwise it maps out positions to a and b offsets.
cudaError_t Binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t n,
                   const BroadcastIndex* index, cudaStream_t stream);

// out[i] = a[i] op row[i % row_length] (or row[i % row_length] op a[i] when `row_first`): the common
// broadcast of a bias or scale vector over the last dimensions, without per-element index arithmetic.
cudaError_t BinaryRow(BinaryOp op, ElementType type, const void* a, const void* row, void* out, int64_t n,
                      int64_t row_length, bool row_first, cudaStream_t stream);

enum class UnaryOp {
  kRelu, kSigmoid, kTanh, kErf, kSqrt, kNeg, kExp, kLog, kAbs, kReciprocal, kGelu, kGeluTanh, kFloor, kCeil
};
cudaError_t Unary(UnaryOp op, ElementType type, const void* x, void* y, int64_t n, cudaStream_t stream);
// y = x ^ exponent (x * x for 2, sqrt for 0.5).
cudaError_t PowScalar(ElementType type, const void* x, void* y, int64_t n, float exponent, cudaStream_t stream);
// y = min(max(x, lo), hi).
cudaError_t Clip(ElementType type, const void* x, void* y, int64_t n, float lo, float hi, cudaStream_t stream);
struct EpilogueActivation;
// y = activation(x) for the parameterized activations (HardSigmoid, HardSwish, LeakyRelu).
cudaError_t Activation(ElementType type, const void* x, void* y, int64_t n, const EpilogueActivation& activation,
                       cudaStream_t stream);
// out[i] = a[offset of i] (a_strides of `index`): materializes a broadcast.
cudaError_t BroadcastTo(ElementType type, const void* a, void* out, int64_t n, const BroadcastIndex& index,
                        cudaStream_t stream);

// The same three over any arithmetic element type: float, float16, int32, int64. Integer arithmetic wraps
// (two's complement, like the CPU EP); integer Div truncates toward zero, wraps INT_MIN / -1 to INT_MIN and,
// for a zero divisor, gives 0 (the device cannot report it without a host synchronization; the CPU EP
// rejects it). kPow and every unary op other than kNeg and kAbs take float and float16 only; any other
// combination returns cudaErrorInvalidValue without launching.
cudaError_t Binary(BinaryOp op, ScalarType type, const void* a, const void* b, void* out, int64_t n,
                   const BroadcastIndex* index, cudaStream_t stream);
cudaError_t BinaryRow(BinaryOp op, ScalarType type, const void* a, const void* row, void* out, int64_t n,
                      int64_t row_length, bool row_first, cudaStream_t stream);
cudaError_t Unary(UnaryOp op, ScalarType type, const void* x, void* y, int64_t n, cudaStream_t stream);

// ---- Split (axis_parts.cu) ---------------------------------------------------------------------------
// Up to kMaxSplitOutputs parts of one Split in one launch: output j takes the axis positions
// [begin[j], begin[j + 1]) and may be null when that range is empty.
inline constexpr int kMaxSplitOutputs = 32;
struct SplitParts {
  int count = 0;
  void* data[kMaxSplitOutputs] = {};
  int64_t begin[kMaxSplitOutputs + 1] = {};
};
// `in` viewed as [outer, axis_dim, inner] elements of `element_size` bytes: out_j[o, a - begin[j], i] =
// in[o, a, i] for every a in [begin[0], begin[count]). Copies in the widest word (up to 16 bytes) that the
// row length and every pointer's alignment allow.
cudaError_t Split(int element_size, const void* in, int64_t outer, int64_t axis_dim, int64_t inner,
                  const SplitParts& parts, cudaStream_t stream);

// ---- Concat (axis_parts.cu) -------------------------------------------------------------------------
// Up to kMaxConcatInputs inputs of one Concat in one launch: input j fills the axis positions
// [begin[j], begin[j + 1]) and may be null when that range is empty.
inline constexpr int kMaxConcatInputs = 32;
struct ConcatParts {
  int count = 0;
  const void* data[kMaxConcatInputs] = {};
  int64_t begin[kMaxConcatInputs + 1] = {};
};
// `out` viewed as [outer, axis_dim, inner] elements of `element_size` bytes: out[o, a, i] =
// in_j[o, a - begin[j], i] for every a in [begin[0], begin[count]). Copies in the widest word (up to 16
// bytes) that the row length and every pointer's alignment allow.
cudaError_t Concat(int element_size, void* out, int64_t outer, int64_t axis_dim, int64_t inner,
                   const ConcatParts& parts, cudaStream_t stream);

// ---- comparisons, logic, selection (logic.cu) -----------------------------------------------------
enum class CompareOp { kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual };
// out[i] = a[i] op b[i] as bool; `index` as for Binary.
cudaError_t Compare(CompareOp op, ScalarType type, const void* a, const void* b, bool* out, int64_t n,
                    const BroadcastIndex* index, cudaStream_t stream);
enum class LogicalOp { kAnd, kOr, kXor };
cudaError_t Logical(LogicalOp op, const bool* a, const bool* b, bool* out, int64_t n, const BroadcastIndex* index,
                    cudaStream_t stream);
cudaError_t Not(const bool* x, bool* y, int64_t n, cudaStream_t stream);
// y[i] = isnan(x[i]) when `nan`, else whether x[i] is +inf (when `positive`) or -inf (when `negative`).
cudaError_t ClassifyFloats(ElementType type, const void* x, bool* y, int64_t n, bool nan, bool positive, bool negative,
                           cudaStream_t stream);
// out[i] = condition[c] ? x[a] : y[b] with the offsets of `index` (a: x, b: y) and `condition_strides`.
struct WhereIndex {
  BroadcastIndex values;
  int64_t condition_strides[kMaxRank] = {};
};
cudaError_t Where(int element_size, const bool* condition, const void* x, const void* y, void* out, int64_t n,
                  const WhereIndex& index, cudaStream_t stream);

// ---- Cast (cast.cu) -----------------------------------------------------------------------------
// y[i] = x[i] converted: floats to integers truncate, anything to bool is x != 0.
cudaError_t Cast(ScalarType from, ScalarType to, const void* x, void* y, int64_t n, cudaStream_t stream);

// ---- indexing (indexing.cu) ---------------------------------------------------------------------
// data viewed as [outer, axis_dim, inner]: out[o, j, i] = data[o, indices[j], i] for j < index_count.
// Negative indices count from the back; indices out of [-axis_dim, axis_dim) are clamped (the device
// cannot report them without a host synchronization).
cudaError_t Gather(int element_size, const void* data, const void* indices, bool indices_are_int64, void* out,
                   int64_t outer, int64_t axis_dim, int64_t inner, int64_t index_count, cudaStream_t stream);
// The same with the indices carried in the launch itself (read on the host from a host node's result, so
// nothing is copied and a CUDA graph keeps the values): at most kInlineIndices of them.
inline constexpr int kInlineIndices = 32;
struct InlineIndices {
  int64_t values[kInlineIndices] = {};
};
cudaError_t GatherInline(int element_size, const void* data, const InlineIndices& indices, void* out, int64_t outer,
                         int64_t axis_dim, int64_t inner, int64_t index_count, cudaStream_t stream);
// out[0..n) = the `element_size`-byte value at `value` (host memory, copied into the launch).
cudaError_t Fill(int element_size, void* out, int64_t n, const void* value, cudaStream_t stream);
// out[i] = start + i * delta for i in [0, n), of `type` (float, double, int16, int32 or int64); `start` and `delta`
// point to one host value of that type each (copied into the launch).
cudaError_t Range(ScalarType type, void* out, int64_t n, const void* start, const void* delta, cudaStream_t stream);

// ---- reductions (reduction.cu) ------------------------------------------------------------------
enum class ReduceOp { kSum, kMean, kMax, kMin };
// x viewed as [outer, length, inner]: y[o, i] = reduce over l of x[o, l, i] (inner = 1: rows).
cudaError_t ReduceMiddle(ReduceOp op, ElementType type, const void* x, void* y, int64_t outer, int64_t length,
                         int64_t inner, cudaStream_t stream);
// Any set of axes: one output per combination of kept coordinates (row-major over kept_dims), reducing
// over every combination of reduced coordinates; strides are the input's element strides.
struct ReduceGeometry {
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t reduced_dims[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  int64_t outputs = 0, reduced = 0;
};
cudaError_t ReduceGeneral(ReduceOp op, ElementType type, const void* x, void* y, const ReduceGeometry& geometry,
                          cudaStream_t stream);

// x viewed as [outer, length, inner]: y[o, i] = the index l of the largest (`is_max`) or smallest x[o, l, i]; equal
// values go to the first index, or to the last when `select_last`. x is float or float16; with NaNs in a row the
// index returned is one of the row's, unspecified.
// Rows of at least kArgSlicedLength are cut into kArgSlices slices, one block each, whose winners a second launch
// compares: `workspace` of ArgReduceWorkspace bytes (device memory; 0 bytes, and ignored, for other shapes).
inline constexpr int64_t kArgSlicedLength = 16384;
inline constexpr int kArgSlices = 32;
size_t ArgReduceWorkspace(int64_t outer, int64_t length, int64_t inner);
cudaError_t ArgReduce(bool is_max, ElementType type, const void* x, int64_t* y, int64_t outer, int64_t length,
                      int64_t inner, bool select_last, void* workspace, cudaStream_t stream);

// ---- products of a few rows (small_rows_product.cu) ---------------------------------------------------------------
// out[r, c] = activation(alpha * sum_j a[r, j] * wt[c, j] + bias[c]) + addend[r, c] for r < rows <= kSmallProductRows:
// a [rows, k] and out [rows, n] row-major, wt the weights transposed ([n, k] row-major). k must be a multiple of 8
// (float16) or 4 (float32) and a and wt 16-byte aligned; bias ([n]) and addend ([rows, n]) may be null.
inline constexpr int kSmallProductRows = 4;
struct EpilogueActivation;
cudaError_t SmallRowsProduct(ElementType type, const void* a, const void* wt, void* out, int rows, int64_t n,
                             int64_t k, float alpha, const void* bias, const EpilogueActivation& activation,
                             const void* addend, cudaStream_t stream);

// ---- RotaryEmbedding (rotary_embedding.cu) --------------------------------------------------------------------
// Semantics in tessera/ep/rotary_geometry.h. x and y (may be the same buffer) share the element strides below; the
// caches are [rows, rot / 2]. positions: null (row = b * seq + s), one value per (b, s) ([batch, seq]) or, with
// `first_only`, one value p0 (row = p0 + s); int32 or int64. A row outside [0, max_position) is clamped into it (the
// device cannot report it without a host synchronization; the CPU EP rejects it).
struct RotaryArgs {
  ElementType type = ElementType::kFloat;
  const void* x = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  const void* positions = nullptr;
  bool int64_positions = true;
  bool first_only = false;
  bool interleaved = false;
  int64_t max_position = 0;
  void* y = nullptr;
  int64_t batch = 0, heads = 0, seq = 0, head_size = 0, rot = 0;
  int64_t batch_stride = 0, head_stride = 0, token_stride = 0;
};
cudaError_t RotaryEmbedding(const RotaryArgs& args, cudaStream_t stream);

// ---- ScatterElements / ScatterND (scatter.cu) ----------------------------------------------------------------
// Both write `updates` into `out`, which already holds the data (the kernel copied it, or `out` is the data's own
// buffer: an in-place update). Negative indices count from the back; an index outside the data's dimension is
// skipped (the device cannot report it without a host synchronization).
// ScatterElements: indices and updates share `dims` (rank `rank`); element p of updates goes to the data element with
// p's coordinates, its coordinate along `axis` replaced by indices[p]. `data_strides` are the data's element strides,
// `axis_dim` its size along the axis.
struct ScatterElementsGeometry {
  int rank = 0, axis = 0;
  int64_t dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};
  int64_t axis_dim = 0;
};
cudaError_t ScatterElements(int element_size, void* out, const void* indices, bool indices_are_int64,
                            const void* updates, const ScatterElementsGeometry& geometry, cudaStream_t stream);
// ScatterND: `tuples` index tuples of `tuple_size` coordinates into the data's first dims (sizes `data_dims`, element
// strides `data_strides`), each followed by a slice of `slice` elements of updates.
struct ScatterNdGeometry {
  int tuple_size = 0;
  int64_t data_dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};
  int64_t tuples = 0, slice = 0;
};
cudaError_t ScatterNd(int element_size, void* out, const void* indices, bool indices_are_int64, const void* updates,
                      const ScatterNdGeometry& geometry, cudaStream_t stream);

// ---- Conv epilogue (conv_epilogue.cu) -------------------------------------------------------------
// The activation of a fused Conv (mirrors tessera::FusedActivation, which host code converts).
struct EpilogueActivation {
  enum class Kind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kTanh, kGelu, kGeluTanh, kSwish };
  Kind kind = Kind::kNone;
  float alpha = 0.0f, beta = 0.0f;
};
// y[b, c, s] = activation(y[b, c, s] + bias[c] + residual[b, c, s]) over y[batch, channels, spatial], in
// place; bias and residual may each be null.
cudaError_t ConvEpilogue(ElementType type, void* y, const void* bias, const void* residual, int64_t batch,
                         int64_t channels, int64_t spatial, const EpilogueActivation& activation,
                         cudaStream_t stream);

// The same over a channels-last y of n elements ([..., channels]): bias[i % channels], residual[i].
cudaError_t ConvEpilogueChannelsLast(ElementType type, void* y, const void* bias, const void* residual, int64_t n,
                                     int64_t channels, const EpilogueActivation& activation, cudaStream_t stream);

// ---- depthwise convolution (depthwise_conv.cu) ----------------------------------------------------
// A 2-D convolution with one filter per channel (group = channels, one output channel per group) over
// channels-last tensors, with Conv's epilogue fused: y[n, oh, ow, c] = activation(bias[c] + residual[n, oh, ow, c] +
// sum over r, s of x[n, oh * stride_h - pad_h + r * dilation_h, ow * stride_w - pad_w + s * dilation_w, c] *
// w[c, r, s]), taps outside x counting as zeros. x [N, H, W, C], w [C, 1, R, S] (ONNX's layout), y and residual
// [N, OH, OW, C]; bias and residual may each be null. `input_activation` (kNone: none) is applied to each x value
// read (ai.tessera::ActivatedNchwcConv); the taps outside x stay zeros.
struct DepthwiseGeometry {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
};
cudaError_t DepthwiseConvChannelsLast(ElementType type, const void* x, const void* w, const void* bias,
                                      const void* residual, void* y, const DepthwiseGeometry& geometry,
                                      const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                                      cudaStream_t stream);

// ---- FusedMatMul epilogue (matmul_epilogue.cu) ----------------------------------------------------
// y[i] = activation(y[i] + bias[i % columns]) + addend[offset of i] over the n elements of a row-major
// product with `columns` columns, in place; bias and addend may each be null. `addend_index` (its b_strides)
// maps y positions to addend offsets; null when the addend has y's shape.
cudaError_t MatMulEpilogue(ElementType type, void* y, int64_t n, int64_t columns, const void* bias,
                           const EpilogueActivation& activation, const void* addend, const BroadcastIndex* addend_index,
                           cudaStream_t stream);

// ---- normalization (normalization.cu) -----------------------------------------------------------
// BatchNormalization in inference mode over x[batch, channels, spatial]:
// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c]. The four parameter vectors have
// element type `param_type`.
cudaError_t BatchNormInference(ElementType type, ElementType param_type, const void* x, const void* scale,
                               const void* bias, const void* mean, const void* var, float epsilon, void* y,
                               int64_t batch, int64_t channels, int64_t spatial, cudaStream_t stream);

// LayerNormalization over rows: y = (x - mean) / sqrt(var + epsilon) * scale + bias for each of `rows`
// contiguous rows of `length` values; scale (`scale_type`) and bias (`bias_type`, nullable) hold `length`
// values each (exporters may mix float32 and float16 among X, scale and bias).
cudaError_t LayerNorm(ElementType type, ElementType scale_type, ElementType bias_type, const void* x,
                      const void* scale, const void* bias, float epsilon, void* y, int64_t rows, int64_t length,
                      cudaStream_t stream);

// RMS normalization over rows (RMSNormalization, com.microsoft SimplifiedLayerNormalization and
// SkipSimplifiedLayerNormalization): s = x (+ skip + bias, each sum rounded to the element type like the unfused
// Adds), y = s / sqrt(mean(s^2) + epsilon) * scale for each of `rows` contiguous rows of `length` values. skip
// (`rows` x `length`), bias (`length`), sum (s, written when not null) and inv_std (one float per row, when not
// null) are optional; scale holds `length` values of `scale_type`.
cudaError_t RmsNorm(ElementType type, ElementType scale_type, const void* x, const void* skip, const void* bias,
                    const void* scale, float epsilon, void* y, void* sum, float* inv_std, int64_t rows, int64_t length,
                    cudaStream_t stream);

// ---- com.microsoft Gelu family (bias_activation.cu) ----------------------------------------------
// y[i] = f(x[i] + bias[i % width]) (bias nullable) with f the exact (erf) Gelu, its tanh approximation, or
// QuickGelu x * sigmoid(alpha * x); the sum is kept in float, as the CPU EP does.
enum class BiasActivationKind { kGeluErf, kGeluTanh, kQuickGelu };
cudaError_t BiasActivation(BiasActivationKind kind, ElementType type, const void* x, const void* bias, void* y,
                           int64_t n, int64_t width, float alpha, cudaStream_t stream);

// ---- pooling (pool.cu) --------------------------------------------------------------------------
struct Pool2dGeometry {
  int64_t planes = 0;    // batch * channels (NCHW), or batch (channels last)
  int64_t channels = 0;  // 0: NCHW planes; else channels-last (NHWC) with this many channels
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};
enum class PoolOp { kMax, kAverageExcludePad, kAverageIncludePad };
// Windows that fall entirely into padding produce -inf (max) or 0 (average).
cudaError_t Pool2d(PoolOp op, ElementType type, const void* x, void* y, const Pool2dGeometry& geometry,
                   cudaStream_t stream);
// y[p] = mean of x[p, 0..spatial) for every plane p.
cudaError_t GlobalAveragePool(ElementType type, const void* x, void* y, int64_t planes, int64_t spatial,
                              cudaStream_t stream);
// Channels last: y[b, c] = mean of x[b, 0..spatial, c], in two passes: blocks of 32 channels x a chunk of positions
// write partial sums into `partial` (device scratch of GlobalAveragePoolChannelsLastScratch floats), then one thread per
// (b, c) adds its chunks in a fixed order (deterministic). Spreads a large image over the whole GPU.
int64_t GlobalAveragePoolChannelsLastScratch(int64_t batch, int64_t spatial, int64_t channels);
cudaError_t GlobalAveragePoolChannelsLast(ElementType type, const void* x, void* y, int64_t batch, int64_t spatial,
                                          int64_t channels, float* partial, cudaStream_t stream);

// ---- softmax (softmax.cu) -----------------------------------------------------------------------
// Softmax (or LogSoftmax when `log`) of x viewed as [outer, axis, inner] along the middle dimension.
cudaError_t Softmax(ElementType type, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner, bool log,
                    cudaStream_t stream);

// ---- transpose (transpose.cu) -------------------------------------------------------------------
// out[i] = in[offset], where i runs over the row-major output dims and `in_strides` are the input's
// element strides permuted into output order. Any element size of 1, 2, 4 or 8 bytes.
cudaError_t Transpose(int element_size, const void* in, void* out, int rank, const int64_t* out_dims,
                      const int64_t* in_strides, int64_t n, cudaStream_t stream);

// ---- Resize (resize.cu) -------------------------------------------------------------------------
// One (input index, weight) pair of an output coordinate along one axis; index < 0 marks a coordinate that takes
// the extrapolation value (tf_crop_and_resize).
struct ResizeTap {
  int32_t index = 0;
  float weight = 0.0f;
};
// Output dims, input strides and, per axis, where its taps start in the tap table (out * taps pairs, taps per
// output coordinate; identity axes read input coordinate = output coordinate and have no taps).
struct ResizeGeometry {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int taps[kMaxRank] = {};
  int64_t first_tap[kMaxRank] = {};
  bool identity[kMaxRank] = {};
  float extrapolation = 0.0f;
};
// y[i] = sum over the taps of every axis of x[sum of index * stride] * product of the weights, in float (rounded
// once into y's type). `table` is device memory; x has x_elements elements, y has n.
cudaError_t Resize(ElementType type, const void* x, int64_t x_elements, void* y, int64_t n,
                   const ResizeGeometry& geometry, const ResizeTap* table, cudaStream_t stream);

// ---- ConvTranspose (conv_transpose.cu) ------------------------------------------------------------
// y (dims `out_dims`) = the window of `full` (dims `full_dims`, same rank) starting at `offset` per axis (0 on the
// first two axes), zero where the window leaves `full`: ConvTranspose's asymmetric pads and output_padding applied
// to the unpadded result.
cudaError_t CropOrExtend(ElementType type, const void* full, void* y, int rank, const int64_t* out_dims,
                         const int64_t* full_dims, const int64_t* offset, int64_t n, cudaStream_t stream);

}  // namespace tessera::cuda::launch
