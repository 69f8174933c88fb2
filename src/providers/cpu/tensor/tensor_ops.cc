// Data-rearranging operators of the CPU EP: Transpose, Concat, Split, Slice, Tile, Pad, DepthToSpace,
// SpaceToDepth, Trilu, OneHot.
//
// Most of them describe their output as a strided view of the input and let CopyStrided do the work
// (strided_copy.h), so each gets unit-dim removal, axis merging, tiled transposes and threading.
// Parameter inputs (starts/ends/axes/steps, repeats, pads, split, k, depth) are host inputs.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"
#include "tessera/ep/split_lengths.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

std::string DimsString(const std::vector<int64_t>& dims) { return Shape(dims).ToString(); }

// Normalizes `axis` against `rank`, failing with the node's name when it is out of range.
int64_t AxisFor(const Node& node, int64_t axis, int64_t rank, const Shape& shape) {
  if (axis < -rank || axis >= rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis, " is out of range for input ",
         shape.ToString());
  return axis < 0 ? axis + rank : axis;
}

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : perm_(info.node().GetInts("perm")) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const std::vector<int64_t>& dims = input.shape().dims();
    const size_t rank = dims.size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(rank);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    std::vector<bool> used(rank, false);
    bool valid = perm.size() == rank;
    for (int64_t p : perm) {
      valid = valid && p >= 0 && p < static_cast<int64_t>(rank) && !used[p];
      if (valid) used[p] = true;
    }
    if (!valid)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": perm ", DimsString(perm),
           " is not a permutation of the axes of input ", input.shape().ToString());
    const std::vector<int64_t> strides = DenseStrides(dims);
    StridedView view;
    for (int64_t p : perm) {
      view.dims.push_back(dims[p]);
      view.strides.push_back(strides[p]);
    }
    Tensor& out = ctx.Output(0, input.type(), Shape(view.dims));
    CopyStrided(input, view, out, ctx.thread_pool());
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", 1)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) inputs.push_back(&ctx.Input(i));
    const Shape& first = inputs[0]->shape();
    const int64_t rank = static_cast<int64_t>(first.rank());
    if (rank == 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot concatenate scalars");
    const size_t axis = static_cast<size_t>(AxisFor(node, axis_, rank, first));
    std::vector<int64_t> out_dims = first.dims();
    out_dims[axis] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Shape& s = inputs[i]->shape();
      bool compatible = s.rank() == first.rank() && inputs[i]->type() == inputs[0]->type();
      for (size_t k = 0; compatible && k < s.rank(); ++k) compatible = k == axis || s[k] == first[k];
      if (!compatible)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", i, " ", inputs[i]->Describe(),
             " does not match input 0 ", inputs[0]->Describe(), " outside axis ", axis);
      out_dims[axis] += s[axis];
    }
    Tensor& out = ctx.Output(0, inputs[0]->type(), Shape(out_dims));
    VisitStorageType(out.type(),
                     [&]<typename S>() { CopyPieces(inputs, axis, StorageData<S>(out), ctx.thread_pool()); });
  }

 private:
  // Output row o (of the dims before `axis`) is input 0's row o, then input 1's row o, ...; each
  // (row, input) piece is one contiguous copy. Long rows spread their pieces over the pool; short rows
  // (an interleaving Concat on the last axis, as rotary embeddings' rotate-every-two writes, has
  // one-element pieces) go row by row, so no piece pays an index division or a copy call.
  template <typename S>
  static void CopyPieces(const std::vector<const Tensor*>& inputs, size_t axis, S* out, const ThreadPool& pool) {
    const Shape& first = inputs[0]->shape();
    const int64_t outer = first.SizeTo(axis), inner = first.SizeFrom(axis + 1);
    std::vector<int64_t> piece(inputs.size()), offset(inputs.size());
    int64_t row = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      piece[i] = inputs[i]->shape()[axis] * inner;
      offset[i] = row;
      row += piece[i];
    }
    const int64_t num_inputs = static_cast<int64_t>(inputs.size());
    if (std::all_of(piece.begin(), piece.end(), [](int64_t p) { return p == 1; })) {  // one element per input: an interleave
      InterleaveElements(inputs, outer, out, pool);
      return;
    }
    if (row < 4096) {
      std::vector<const S*> in(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) in[i] = StorageData<S>(*inputs[i]);
      pool.ParallelFor(outer, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, row)), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          S* dst = out + o * row;
          for (size_t i = 0; i < in.size(); ++i) {
            const S* src = in[i] + o * piece[i];
            if (piece[i] == 1) *dst = *src;
            else std::copy_n(src, piece[i], dst);
            dst += piece[i];
          }
        }
      });
      return;
    }
    const int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, row / num_inputs));
    pool.ParallelFor(outer * num_inputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t o = p / num_inputs;
        const size_t i = static_cast<size_t>(p % num_inputs);
        std::copy_n(StorageData<S>(*inputs[i]) + o * piece[i], piece[i], out + o * row + offset[i]);
      }
    });
  }
  // out[o * k + i] = input i's element o, for k inputs of `outer` elements each. Two inputs (a rotary embedding's
  // rotate-every-two) take a loop the compiler vectorizes; more go input by input with strided stores.
  template <typename S>
  static void InterleaveElements(const std::vector<const Tensor*>& inputs, int64_t outer, S* out,
                                 const ThreadPool& pool) {
    const int64_t k = static_cast<int64_t>(inputs.size());
    const int64_t grain = std::max<int64_t>(1024, (1 << 15) / k);
    if (k == 2) {
      const S* a = StorageData<S>(*inputs[0]);
      const S* b = StorageData<S>(*inputs[1]);
      pool.ParallelFor(outer, grain, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          out[2 * o] = a[o];
          out[2 * o + 1] = b[o];
        }
      });
      return;
    }
    pool.ParallelFor(outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = 0; i < k; ++i) {
        const S* in = StorageData<S>(*inputs[static_cast<size_t>(i)]);
        for (int64_t o = begin; o < end; ++o) out[o * k + i] = in[o];
      }
    });
  }

  int64_t axis_;
};

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const KernelInfo& info) : rule_(SplitRule::Of(info.node())) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    const Shape& shape = input.shape();
    const size_t axis = static_cast<size_t>(AxisFor(node, rule_.axis, static_cast<int64_t>(shape.rank()), shape));
    const bool from_input = rule_.input_lengths && ctx.OptionalInput(1) != nullptr;
    const std::vector<int64_t> given =
        from_input ? ReadIntParameter(node, ctx.Input(1), "split") : std::vector<int64_t>{};
    const std::vector<int64_t> lengths = SplitLengths(node, shape, axis, static_cast<int64_t>(ctx.NumOutputs()), rule_,
                                                      from_input ? &given : nullptr);
    const int64_t inner = shape.SizeFrom(axis + 1);
    StridedView view{{shape.SizeTo(axis), 0, inner}, {shape[axis] * inner, inner, 1}, 0};
    for (size_t i = 0; i < lengths.size(); ++i) {
      std::vector<int64_t> dims = shape.dims();
      dims[axis] = lengths[i];
      view.dims[1] = lengths[i];
      Tensor& out = ctx.Output(i, input.type(), Shape(dims));
      CopyStrided(input, view, out, ctx.thread_pool());
      view.offset += lengths[i] * inner;
    }
  }

 private:
  SplitRule rule_;
};

// Slice parameters after defaults: one entry per sliced axis.
struct SliceRequest {
  std::vector<int64_t> starts, ends, axes, steps;
};

// The view one Slice request selects, with starts/ends clamped per the ONNX spec (negative values
// count from the back; with a negative step the start clamps to [0, dim-1] and the end to [-1, dim-1]).
StridedView SliceView(const Node& node, const Shape& shape, const SliceRequest& r) {
  const int64_t rank = static_cast<int64_t>(shape.rank());
  StridedView view = DenseView(shape.dims());
  std::vector<bool> seen(shape.rank(), false);
  for (size_t j = 0; j < r.starts.size(); ++j) {
    const size_t axis = static_cast<size_t>(AxisFor(node, r.axes[j], rank, shape));
    if (seen[axis]) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", r.axes[j], " is sliced twice");
    seen[axis] = true;
    const int64_t dim = shape[axis], step = r.steps[j];
    if (step == 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": step for axis ", r.axes[j], " is 0");
    int64_t start = r.starts[j] < 0 ? r.starts[j] + dim : r.starts[j];
    int64_t end = r.ends[j] < 0 ? r.ends[j] + dim : r.ends[j];
    int64_t count = 0;
    if (dim > 0 && step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    view.dims[axis] = count;
    if (count > 0) view.offset += start * view.strides[axis];
    view.strides[axis] *= step;
  }
  return view;
}

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const KernelInfo& info) {
    const Node& node = info.node();
    if (node.opset < 10) {
      attributes_.starts = node.GetInts("starts");
      attributes_.ends = node.GetInts("ends");
      attributes_.axes = node.GetInts("axes");
    }
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    SliceRequest r = node.opset < 10 ? attributes_ : FromInputs(ctx);
    if (r.axes.empty()) {
      r.axes.resize(r.starts.size());
      std::iota(r.axes.begin(), r.axes.end(), 0);
    }
    if (r.steps.empty()) r.steps.assign(r.starts.size(), 1);
    if (r.ends.size() != r.starts.size() || r.axes.size() != r.starts.size() || r.steps.size() != r.starts.size())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": starts ", DimsString(r.starts), ", ends ",
           DimsString(r.ends), ", axes ", DimsString(r.axes), " and steps ", DimsString(r.steps), " differ in length");
    const StridedView view = SliceView(node, input.shape(), r);
    Tensor& out = ctx.Output(0, input.type(), Shape(view.dims));
    CopyStrided(input, view, out, ctx.thread_pool());
  }

 private:
  static SliceRequest FromInputs(const KernelContext& ctx) {
    const Node& node = ctx.node();
    SliceRequest r;
    r.starts = ReadIntParameter(node, ctx.Input(1), "starts");
    r.ends = ReadIntParameter(node, ctx.Input(2), "ends");
    if (const Tensor* axes = ctx.OptionalInput(3)) r.axes = ReadIntParameter(node, *axes, "axes");
    if (const Tensor* steps = ctx.OptionalInput(4)) r.steps = ReadIntParameter(node, *steps, "steps");
    return r;
  }
  SliceRequest attributes_;
};

// Tile-1 takes (input, tiles, axis): `tiles` copies along one axis. Tile-6 takes one repeat per dim.
class TileKernel : public Kernel {
 public:
  explicit TileKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    const std::vector<int64_t>& dims = input.shape().dims();
    const std::vector<int64_t> repeats = node.opset < 6 ? AxisRepeats(ctx, input.shape())
                                                        : ReadIntParameter(node, ctx.Input(1), "repeats");
    bool valid = repeats.size() == dims.size();
    for (int64_t r : repeats) valid = valid && r >= 0;
    if (!valid)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": repeats ", DimsString(repeats),
           " must hold one non-negative count per dim of input ", input.shape().ToString());
    // Output dim k of size r*d is row-major [r, d] reading input dim k with stride 0 for the repeat.
    const std::vector<int64_t> strides = DenseStrides(dims);
    StridedView view;
    std::vector<int64_t> out_dims;
    for (size_t k = 0; k < dims.size(); ++k) {
      view.dims.insert(view.dims.end(), {repeats[k], dims[k]});
      view.strides.insert(view.strides.end(), {0, strides[k]});
      out_dims.push_back(repeats[k] * dims[k]);
    }
    Tensor& out = ctx.Output(0, input.type(), Shape(out_dims));
    CopyStrided(input, view, out, ctx.thread_pool());
  }

 private:
  static std::vector<int64_t> AxisRepeats(const KernelContext& ctx, const Shape& shape) {
    const Node& node = ctx.node();
    const std::vector<int64_t> tiles = ReadIntParameter(node, ctx.Input(1), "tiles");
    const std::vector<int64_t> axis = ReadIntParameter(node, ctx.Input(2), "axis");
    if (tiles.size() != 1 || axis.size() != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": tiles and axis must be scalars");
    std::vector<int64_t> repeats(shape.rank(), 1);
    repeats[static_cast<size_t>(AxisFor(node, axis[0], static_cast<int64_t>(shape.rank()), shape))] = tiles[0];
    return repeats;
  }
};

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Where output index `o` of one padded dim reads from: an input index, or -1 for the constant.
int64_t PadSource(PadMode mode, int64_t o, int64_t pad_begin, int64_t dim) {
  const int64_t i = o - pad_begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return std::clamp<int64_t>(i, 0, dim - 1);
    case PadMode::kWrap:
      return ((i % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      const int64_t r = ((i % period) + period) % period;
      return r < dim ? r : period - r;
    }
  }
  return -1;
}

class PadKernel : public Kernel {
 public:
  explicit PadKernel(const KernelInfo& info) {
    const Node& node = info.node();
    const std::string mode = node.GetString("mode", "constant");
    if (mode == "constant")
      mode_ = PadMode::kConstant;
    else if (mode == "reflect")
      mode_ = PadMode::kReflect;
    else if (mode == "edge")
      mode_ = PadMode::kEdge;
    else if (mode == "wrap" && node.opset >= 19)
      mode_ = PadMode::kWrap;
    else
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": unknown mode '", mode, "'");
    if (node.opset < 11) {
      attribute_pads_ = node.GetInts(node.opset < 2 ? "paddings" : "pads");
      attribute_value_ = node.GetFloat("value", 0.0f);
    }
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    const Shape& shape = input.shape();
    const std::vector<int64_t> pads = Pads(ctx, shape);
    const size_t rank = shape.rank();
    std::vector<int64_t> out_dims(rank);
    for (size_t k = 0; k < rank; ++k) {
      out_dims[k] = shape[k] + pads[k] + pads[k + rank];
      const bool needs_input = mode_ != PadMode::kConstant && out_dims[k] > 0 && pads[k] + pads[k + rank] != 0;
      if (out_dims[k] < 0 || (needs_input && shape[k] == 0))
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": pads ", DimsString(pads), " do not fit input ",
             shape.ToString());
    }
    // Per dim, the source index of every output index (-1: the constant).
    std::vector<std::vector<int64_t>> sources(rank);
    for (size_t k = 0; k < rank; ++k)
      for (int64_t o = 0; o < out_dims[k]; ++o) sources[k].push_back(PadSource(mode_, o, pads[k], shape[k]));
    Tensor& out = ctx.Output(0, input.type(), Shape(out_dims));
    const Tensor value = ConstantValue(ctx, input.type());
    VisitStorageType(input.type(), [&]<typename S>() {
      const S fill = value.defined() ? StorageData<S>(value)[0] : S{};
      FillPadded(StorageData<S>(input), shape, sources, pads, fill, StorageData<S>(out), ctx.thread_pool());
    });
  }

 private:
  // [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}] for every input dim (axes not listed get 0).
  std::vector<int64_t> Pads(const KernelContext& ctx, const Shape& shape) const {
    const Node& node = ctx.node();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    const std::vector<int64_t> given = node.opset < 11 ? attribute_pads_ : ReadIntParameter(node, ctx.Input(1), "pads");
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    if (node.opset >= 18 && ctx.OptionalInput(3) != nullptr) axes = ReadIntParameter(node, ctx.Input(3), "axes");
    if (given.size() != 2 * axes.size())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": pads ", DimsString(given), " must have ", 2 * axes.size(),
           " values for input ", shape.ToString());
    std::vector<int64_t> pads(2 * shape.rank(), 0);
    for (size_t j = 0; j < axes.size(); ++j) {
      const size_t axis = static_cast<size_t>(AxisFor(node, axes[j], rank, shape));
      pads[axis] = given[j];
      pads[axis + shape.rank()] = given[j + axes.size()];
    }
    return pads;
  }

  // The constant as a one-element tensor of the input's type, or an undefined tensor for zero.
  Tensor ConstantValue(const KernelContext& ctx, DataType type) const {
    const Node& node = ctx.node();
    if (node.opset >= 11) {
      const Tensor* value = ctx.OptionalInput(2);
      if (value == nullptr || value->NumElements() == 0) return Tensor();
      if (value->type() != type)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": constant_value ", value->Describe(),
             " does not have the input's type ", DataTypeName(type));
      return *value;
    }
    Tensor value = Tensor::Allocate(type, Shape{});
    VisitNumericType(node, type,
                     [&]<typename T>() { *static_cast<T*>(value.raw_data()) = Narrow<T>(attribute_value_); });
    return value;
  }

  template <typename S>
  static void FillPadded(const S* in, const Shape& shape, const std::vector<std::vector<int64_t>>& sources,
                         const std::vector<int64_t>& pads, S fill, S* out, const ThreadPool& pool) {
    const size_t rank = shape.rank();
    const int64_t out_inner = rank == 0 ? 1 : static_cast<int64_t>(sources[rank - 1].size());
    int64_t rows = 1;
    for (size_t k = 0; k + 1 < rank; ++k) rows *= static_cast<int64_t>(sources[k].size());
    if (rows == 0 || out_inner == 0) return;
    if (rank == 0) {
      out[0] = in[0];
      return;
    }
    const std::vector<int64_t> strides = DenseStrides(shape.dims());
    const std::vector<int64_t>& inner_sources = sources[rank - 1];
    // The middle run of a row reads the input contiguously; only the pads need the per-index map.
    const int64_t run_begin = std::clamp<int64_t>(pads[rank - 1], 0, out_inner);
    const int64_t run_end = std::clamp<int64_t>(pads[rank - 1] + shape[rank - 1], run_begin, out_inner);
    pool.ParallelFor(rows, std::max<int64_t>(1, (1 << 15) / out_inner), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        S* dst = out + row * out_inner;
        int64_t offset = 0, rest = row;
        for (size_t k = rank - 1; k-- > 0 && offset >= 0;) {
          const int64_t size = static_cast<int64_t>(sources[k].size());
          const int64_t source = sources[k][rest % size];
          offset = source < 0 ? -1 : offset + source * strides[k];
          rest /= size;
        }
        if (offset < 0) {
          std::fill_n(dst, out_inner, fill);
          continue;
        }
        const S* src = in + offset;
        for (int64_t o = 0; o < run_begin; ++o) dst[o] = inner_sources[o] < 0 ? fill : src[inner_sources[o]];
        if (run_end > run_begin) std::copy_n(src + inner_sources[run_begin], run_end - run_begin, dst + run_begin);
        for (int64_t o = run_end; o < out_inner; ++o) dst[o] = inner_sources[o] < 0 ? fill : src[inner_sources[o]];
      }
    });
  }

  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> attribute_pads_;
  float attribute_value_ = 0.0f;
};

// DepthToSpace and SpaceToDepth: a 6-D transpose of a 4-D tensor.
class DepthSpaceKernel : public Kernel {
 public:
  DepthSpaceKernel(const KernelInfo& info, bool to_space) : to_space_(to_space) {
    const Node& node = info.node();
    block_ = node.GetInt("blocksize");
    // DepthToSpace-13 and SpaceToDepth-28 take mode DCR (default) or CRD.
    const std::string mode = node.GetString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": mode must be 'DCR' or 'CRD', not '", mode, "'");
    column_row_depth_ = mode == "CRD";
    if (block_ <= 0) Fail(ErrorCode::kInvalidModel, node.Describe(), ": blocksize ", block_, " must be positive");
  }
  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const Shape& s = input.shape();
    const int64_t b = block_;
    const bool valid = s.rank() == 4 && (to_space_ ? s[1] % (b * b) == 0 : s[2] % b == 0 && s[3] % b == 0);
    if (!valid)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", s.ToString(),
           " must be 4-D with dims divisible by blocksize ", b);
    const auto [view, out_shape] = to_space_ ? ToSpace(s) : ToDepth(s);
    Tensor& out = ctx.Output(0, input.type(), out_shape);
    CopyStrided(input, view, out, ctx.thread_pool());
  }

 private:
  // Reads input dims `in6` (a 6-D view of the input) in the order `perm`.
  static StridedView Permuted(const std::vector<int64_t>& in6, const std::vector<size_t>& perm) {
    const std::vector<int64_t> strides = DenseStrides(in6);
    StridedView view;
    for (size_t p : perm) {
      view.dims.push_back(in6[p]);
      view.strides.push_back(strides[p]);
    }
    return view;
  }
  std::pair<StridedView, Shape> ToSpace(const Shape& s) const {
    const int64_t b = block_, n = s[0], c = s[1] / (b * b), h = s[2], w = s[3];
    const StridedView view = column_row_depth_ ? Permuted({n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3})
                                               : Permuted({n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2});
    return {view, Shape{n, c, h * b, w * b}};
  }
  std::pair<StridedView, Shape> ToDepth(const Shape& s) const {
    const int64_t b = block_, n = s[0], c = s[1], h = s[2] / b, w = s[3] / b;
    // Output channel (i * b + j) * c + k (DCR) or (k * b + i) * b + j (CRD) holds input (k, h * b + i, w * b + j).
    const StridedView view = column_row_depth_ ? Permuted({n, c, h, b, w, b}, {0, 1, 3, 5, 2, 4})
                                               : Permuted({n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4});
    return {view, Shape{n, c * b * b, h, w}};
  }
  bool to_space_;
  int64_t block_ = 1;
  bool column_row_depth_ = false;
};

class TriluKernel : public Kernel {
 public:
  explicit TriluKernel(const KernelInfo& info) : upper_(info.node().GetInt("upper", 1) != 0) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    const Shape& shape = input.shape();
    if (shape.rank() < 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", shape.ToString(), " must be at least 2-D");
    int64_t k = 0;
    if (const Tensor* k_input = ctx.OptionalInput(1)) {
      const std::vector<int64_t> values = ReadIntParameter(node, *k_input, "k");
      if (values.size() != 1) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": k must be a scalar");
      k = values[0];
    }
    const int64_t rows = shape[shape.rank() - 2], cols = shape[shape.rank() - 1];
    const int64_t total_rows = shape.SizeTo(shape.rank() - 1);
    Tensor& out = ctx.Output(0, input.type(), shape);
    VisitStorageType(input.type(), [&]<typename S>() {
      const S* in = StorageData<S>(input);
      S* dst = StorageData<S>(out);
      ctx.thread_pool().ParallelFor(
          total_rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(cols, 1)), [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
              // Columns [keep_begin, keep_end) of matrix row r are kept: upper keeps c - r >= k, lower c - r <= k.
              const int64_t r = row % rows;
              const int64_t keep_begin = upper_ ? std::clamp<int64_t>(r + k, 0, cols) : 0;
              const int64_t keep_end = upper_ ? cols : std::clamp<int64_t>(r + k + 1, 0, cols);
              const S* src = in + row * cols;
              S* d = dst + row * cols;
              std::fill_n(d, keep_begin, S{});
              std::copy(src + keep_begin, src + std::max(keep_begin, keep_end), d + keep_begin);
              std::fill(d + std::max(keep_begin, keep_end), d + cols, S{});
            }
          });
    });
  }

 private:
  bool upper_;
};

class OneHotKernel : public Kernel {
 public:
  explicit OneHotKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", -1)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& indices_t = ctx.Input(0);
    const Tensor& values = ctx.Input(2);
    const int64_t depth = static_cast<int64_t>(ReadScalarAsDouble(node, ctx.Input(1), "depth"));
    if (depth < 1) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": depth ", depth, " must be positive");
    if (values.NumElements() != 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": values must hold [off, on], got ", values.Describe());
    const Shape& shape = indices_t.shape();
    const int64_t out_rank = static_cast<int64_t>(shape.rank()) + 1;
    if (axis_ < -out_rank || axis_ >= out_rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis_, " is out of range for output rank ",
           out_rank);
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + out_rank : axis_);
    std::vector<int64_t> out_dims = shape.dims();
    out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    const std::vector<int64_t> indices = ReadAsInt64s(node, indices_t);
    const int64_t inner = shape.SizeFrom(axis);
    Tensor& out = ctx.Output(0, values.type(), Shape(out_dims));
    VisitStorageType(values.type(), [&]<typename S>() {
      const S off = StorageData<S>(values)[0], on = StorageData<S>(values)[1];
      S* dst = StorageData<S>(out);
      std::fill_n(dst, out.NumElements(), off);
      for (size_t p = 0; p < indices.size(); ++p) {
        const int64_t index = indices[p] < 0 ? indices[p] + depth : indices[p];
        if (index < 0 || index >= depth) continue;
        const int64_t o = static_cast<int64_t>(p) / inner, i = static_cast<int64_t>(p) % inner;
        dst[(o * depth + index) * inner + i] = on;
      }
    });
  }

 private:
  int64_t axis_;
};

KernelDef Def(const char* op, int since, std::vector<int> host_inputs = {}) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = kLastOpset;
  def.host_inputs = std::move(host_inputs);
  return def;
}

}  // namespace

void RegisterTensorKernels(KernelRegistry& registry) {
  registry.Register<TransposeKernel>(Def("Transpose", 1));
  registry.Register<ConcatKernel>(Def("Concat", 1));
  registry.Register<SplitKernel>(Def("Split", 1, {1}));
  registry.Register<SliceKernel>(Def("Slice", 1, {1, 2, 3, 4}));
  registry.Register<TileKernel>(Def("Tile", 1, {1, 2}));
  registry.Register<PadKernel>(Def("Pad", 1, {1, 2, 3}));
  registry.Register(Def("DepthToSpace", 1),
                    [](const KernelInfo& info) { return std::make_unique<DepthSpaceKernel>(info, true); });
  registry.Register(Def("SpaceToDepth", 1),
                    [](const KernelInfo& info) { return std::make_unique<DepthSpaceKernel>(info, false); });
  registry.Register<TriluKernel>(Def("Trilu", 14, {1}));
  registry.Register<OneHotKernel>(Def("OneHot", 9, {1}));
}

}  // namespace tessera::cpu
