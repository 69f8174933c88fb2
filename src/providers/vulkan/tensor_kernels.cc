// Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout alias their input (no device work);
// Transpose, Concat, Slice, Split and Expand are strided copies (shaders/strided_copy.comp); Gather (shaders/gather.comp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "tessera/ep/broadcast.h"
#include "tessera/ep/shape_kernel.h"
#include "tessera/ep/split_lengths.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

std::vector<int64_t> HostInts(const KernelContext& ctx, size_t input) {
  const Tensor& t = ctx.Input(input);
  if (t.type() == DataType::kInt64) return t.ToVector<int64_t>();
  if (t.type() == DataType::kInt32) {
    std::vector<int64_t> out;
    for (int32_t v : t.Span<int32_t>()) out.push_back(v);
    return out;
  }
  Fail(ErrorCode::kInvalidArgument, ctx.node(), ": input ", input, " must be int64 or int32, got ",
       DataTypeName(t.type()));
}

int64_t NormalizeAxis(const Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    Fail(ErrorCode::kInvalidArgument, node, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

// ---- aliases ---------------------------------------------------------------------------------------------------

class AliasKernel : public Kernel {
 public:
  explicit AliasKernel(const KernelInfo& /*info*/) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const std::string& op = node.op_type;
    if (op == "Identity" || op == "Dropout") {
      if (op == "Dropout" && node.outputs.size() > 1 && !node.outputs[1].empty())
        Fail(ErrorCode::kNotImplemented, node, ": Dropout's mask output on the Vulkan EP");
      ctx.SetOutput(0, Value(x));
      return;
    }
    ctx.SetOutput(0, Value(x.Reshaped(Target(ctx, x.shape()))));
  }

 private:
  static Shape Target(const KernelContext& ctx, const Shape& in) {
    const Node& node = ctx.node();
    const std::vector<int64_t>& d = in.dims();
    const int64_t rank = static_cast<int64_t>(d.size());
    if (node.op_type == "Reshape") {
      const std::vector<int64_t> requested = HostInts(ctx, 1);
      const bool allow_zero = node.GetInt("allowzero", 0) != 0;
      std::vector<int64_t> out(requested.size());
      int inferred = -1;
      int64_t known = 1;
      for (size_t i = 0; i < requested.size(); ++i) {
        int64_t v = requested[i];
        if (v == 0 && !allow_zero) {
          if (static_cast<int64_t>(i) >= rank)
            Fail(ErrorCode::kInvalidArgument, node, ": shape entry ", i, " copies a dimension the input ",
                 in.ToString(), " does not have");
          v = d[i];
        }
        if (v == -1) {
          if (inferred >= 0) Fail(ErrorCode::kInvalidArgument, node, ": more than one -1 in the shape");
          inferred = static_cast<int>(i);
          continue;
        }
        if (v < 0) Fail(ErrorCode::kInvalidArgument, node, ": invalid shape entry ", v);
        out[i] = v;
        known *= v;
      }
      if (inferred >= 0) {
        if (known == 0 || in.NumElements() % known != 0)
          Fail(ErrorCode::kInvalidArgument, node, ": cannot reshape ", in.ToString(), " to ", Shape(requested).ToString());
        out[inferred] = in.NumElements() / known;
      }
      if (Shape(out).NumElements() != in.NumElements())
        Fail(ErrorCode::kInvalidArgument, node, ": cannot reshape ", in.ToString(), " to ", Shape(out).ToString());
      return Shape(out);
    }
    if (node.op_type == "Flatten") {
      int64_t axis = node.GetInt("axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) Fail(ErrorCode::kInvalidArgument, node, ": axis out of range for ", in.ToString());
      int64_t outer = 1;
      for (int64_t i = 0; i < axis; ++i) outer *= d[i];
      return Shape({outer, outer == 0 ? 0 : in.NumElements() / outer});
    }
    std::vector<int64_t> axes = node.opset >= 13 ? (ctx.HasInput(1) ? HostInts(ctx, 1) : std::vector<int64_t>{})
                                                 : node.GetInts("axes");
    if (node.op_type == "Squeeze") {
      std::vector<bool> drop(d.size(), false);
      if (axes.empty()) {
        for (size_t i = 0; i < d.size(); ++i) drop[i] = d[i] == 1;
      } else {
        for (int64_t a : axes) {
          const int64_t k = NormalizeAxis(node, a, rank);
          if (d[k] != 1) Fail(ErrorCode::kInvalidArgument, node, ": axis ", a, " of ", in.ToString(), " is not 1");
          drop[k] = true;
        }
      }
      std::vector<int64_t> out;
      for (size_t i = 0; i < d.size(); ++i)
        if (!drop[i]) out.push_back(d[i]);
      return Shape(out);
    }
    // Unsqueeze
    const int64_t out_rank = rank + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(out_rank, false);
    for (int64_t a : axes) {
      const int64_t k = NormalizeAxis(node, a, out_rank);
      if (inserted[k]) Fail(ErrorCode::kInvalidArgument, node, ": axis ", a, " repeated");
      inserted[k] = true;
    }
    std::vector<int64_t> out;
    size_t next = 0;
    for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? 1 : d[next++]);
    return Shape(out);
  }
};

// ---- strided copies --------------------------------------------------------------------------------------------

constexpr size_t kMaxCopyRank = 6;

struct CopyPush {
  uint64_t src, dst;
  uint32_t n, rank;
  int32_t ibase, obase;
  uint32_t dims[kMaxCopyRank];
  int32_t istr[kMaxCopyRank];
  int32_t ostr[kMaxCopyRank];
};
static_assert(sizeof(CopyPush) <= kPushConstantBytes);

int32_t I32(const KernelContext& ctx, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX)
    Fail(ErrorCode::kNotImplemented, ctx.node(), ": an offset of ", v, " does not fit the Vulkan kernels' indices");
  return static_cast<int32_t>(v);
}

// dst[obase + sum(i * ostr)] = src[ibase + sum(i * istr)] for every index of `dims` (strides and bases in elements
// of `element` bytes).
void RecordStridedCopy(const KernelContext& ctx, uint64_t src, uint64_t dst, size_t element, std::vector<int64_t> dims,
                       std::vector<int64_t> istr, std::vector<int64_t> ostr, int64_t ibase, int64_t obase) {
  int64_t total = 1;
  for (int64_t v : dims) total *= v;
  if (total == 0) return;
  // Drop dims of 1, merge neighbours contiguous on both sides.
  std::vector<int64_t> cd, ci, co;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!cd.empty() && ci.back() == istr[d] * dims[d] && co.back() == ostr[d] * dims[d]) {
      cd.back() *= dims[d];
      ci.back() = istr[d];
      co.back() = ostr[d];
      continue;
    }
    cd.push_back(dims[d]);
    ci.push_back(istr[d]);
    co.push_back(ostr[d]);
  }
  if (cd.empty()) cd = {1}, ci = {0}, co = {0};
  std::string shader = "strided_copy_b32";
  if (element == 2 || element == 1) {
    shader = element == 2 ? "strided_copy_b16" : "strided_copy_b8";
  } else if (element == 8) {  // pairs of 32-bit words
    for (auto* v : {&ci, &co})
      for (int64_t& s : *v) s *= 2;
    cd.push_back(2), ci.push_back(1), co.push_back(1);
    ibase *= 2;
    obase *= 2;
  } else if (element != 4) {
    Fail(ErrorCode::kNotImplemented, ctx.node(), ": elements of ", element, " bytes on the Vulkan EP");
  }
  const size_t rank = cd.size();
  const size_t outer_rank = rank > kMaxCopyRank ? rank - kMaxCopyRank : 0;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < outer_rank; ++d) outer *= cd[d];
  CopyPush push{};
  push.src = src;
  push.dst = dst;
  push.rank = static_cast<uint32_t>(rank - outer_rank);
  for (size_t d = outer_rank; d < rank; ++d) {
    push.dims[d - outer_rank] = U32(ctx, cd[d]);
    push.istr[d - outer_rank] = I32(ctx, ci[d]);
    push.ostr[d - outer_rank] = I32(ctx, co[d]);
    inner *= cd[d];
  }
  push.n = U32(ctx, inner);
  VulkanStream& stream = StreamOf(ctx);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rest = o, ioff = ibase, ooff = obase;
    for (size_t d = outer_rank; d-- > 0;) {
      const int64_t k = rest % cd[d];
      rest /= cd[d];
      ioff += k * ci[d];
      ooff += k * co[d];
    }
    push.ibase = I32(ctx, ioff);
    push.obase = I32(ctx, ooff);
    DispatchLinear(stream, shader, &push, sizeof(push), inner);
  }
}

}  // namespace

void RecordAddressCopy(VulkanStream& stream, uint64_t src, uint64_t dst, size_t bytes) {
  if (bytes == 0) return;
  const bool words = src % 4 == 0 && dst % 4 == 0 && bytes % 4 == 0;
  if (!words && !stream.device().info().storage8)
    Fail(ErrorCode::kNotImplemented, kEpName, ": a copy of ", bytes, " bytes between 0x", std::hex, src, " and 0x",
         dst, std::dec, " that are not 4-byte aligned needs the device's 8-bit storage, which ",
         stream.device().info().properties.deviceName, " does not have");
  const size_t element = words ? 4 : 1;
  const std::string shader = words ? "strided_copy_b32" : "strided_copy_b8";
  // Chunks of at most 2^30 elements keep the shader's 32-bit counts and offsets in range.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  const uint64_t total = bytes / element;
  for (uint64_t first = 0; first < total; first += kChunk) {
    const uint64_t n = std::min(kChunk, total - first);
    CopyPush push{};
    push.src = src + first * element;
    push.dst = dst + first * element;
    push.n = static_cast<uint32_t>(n);
    push.rank = 1;
    push.dims[0] = static_cast<uint32_t>(n);
    push.istr[0] = 1;
    push.ostr[0] = 1;
    DispatchLinear(stream, shader, &push, sizeof(push), n);
  }
}

namespace {

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : perm_(info.node().GetInts("perm")) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t>& d = x.shape().dims();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (size_t i = 0; i < d.size(); ++i) perm.push_back(static_cast<int64_t>(d.size() - 1 - i));
    if (perm.size() != d.size())
      Fail(ErrorCode::kInvalidArgument, ctx.node(), ": perm has ", perm.size(), " entries for ", x.shape().ToString());
    std::vector<bool> seen(d.size(), false);
    std::vector<int64_t> out(d.size()), istr(d.size());
    const std::vector<int64_t> in_strides = ContiguousStrides(d);
    for (size_t i = 0; i < perm.size(); ++i) {
      const int64_t p = perm[i];
      if (p < 0 || p >= static_cast<int64_t>(d.size()) || seen[p])
        Fail(ErrorCode::kInvalidArgument, ctx.node(), ": perm is not a permutation of 0..", d.size() - 1);
      seen[p] = true;
      out[i] = d[p];
      istr[i] = in_strides[p];
    }
    Tensor& y = ctx.Output(0, x.type(), Shape(out));
    RecordStridedCopy(ctx, Address(ctx, x, "data"), Address(ctx, y, "transposed"), SizeOf(x.type()), out, istr,
                      ContiguousStrides(out), 0, 0);
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis")) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& first = ctx.Input(0);
    const int64_t rank = static_cast<int64_t>(first.shape().rank());
    const int64_t axis = NormalizeAxis(node, axis_, rank);
    std::vector<int64_t> out = first.shape().dims();
    out[axis] = 0;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) {
      const Tensor& t = ctx.Input(i);
      if (t.type() != first.type() || static_cast<int64_t>(t.shape().rank()) != rank)
        Fail(ErrorCode::kInvalidArgument, node, ": input ", i, " ", t.Describe(), " does not match input 0 ",
             first.Describe());
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && t.shape()[d] != first.shape()[d])
          Fail(ErrorCode::kInvalidArgument, node, ": input ", i, " has shape ", t.shape().ToString(), ", input 0 ",
               first.shape().ToString());
      out[axis] += t.shape()[axis];
    }
    Tensor& y = ctx.Output(0, first.type(), Shape(out));
    const std::vector<int64_t> ostr = ContiguousStrides(out);
    const uint64_t dst = Address(ctx, y, "concat_result");
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) {
      const Tensor& t = ctx.Input(i);
      RecordStridedCopy(ctx, Address(ctx, t, "input"), dst, SizeOf(t.type()), t.shape().dims(),
                        ContiguousStrides(t.shape().dims()), ostr, 0, offset * ostr[axis]);
      offset += t.shape()[axis];
    }
  }

 private:
  int64_t axis_;
};

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const KernelInfo& info) {
    const Node& node = info.node();
    if (node.opset < 10) {
      starts_ = node.GetInts("starts");
      ends_ = node.GetInts("ends");
      axes_ = node.GetInts("axes");
      attributes_ = true;
    }
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t>& d = x.shape().dims();
    const int64_t rank = static_cast<int64_t>(d.size());
    std::vector<int64_t> starts = attributes_ ? starts_ : HostInts(ctx, 1);
    std::vector<int64_t> ends = attributes_ ? ends_ : HostInts(ctx, 2);
    std::vector<int64_t> axes = attributes_ ? axes_ : (ctx.HasInput(3) ? HostInts(ctx, 3) : std::vector<int64_t>{});
    std::vector<int64_t> steps = !attributes_ && ctx.HasInput(4) ? HostInts(ctx, 4) : std::vector<int64_t>{};
    if (axes.empty()) {
      axes.resize(starts.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      Fail(ErrorCode::kInvalidArgument, node, ": starts, ends, axes and steps differ in length");
    std::vector<int64_t> begin(rank, 0), step(rank, 1), out = d;
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = NormalizeAxis(node, axes[i], rank);
      if (seen[a]) Fail(ErrorCode::kInvalidArgument, node, ": axis ", axes[i], " repeated");
      seen[a] = true;
      const int64_t dim = d[a], s = steps[i];
      if (s == 0) Fail(ErrorCode::kInvalidArgument, node, ": step 0 on axis ", axes[i]);
      int64_t st = starts[i], en = ends[i];
      if (st < 0) st = st < -dim ? -1 : st + dim;
      if (en < 0) en = en < -dim ? -1 : en + dim;
      int64_t len;
      if (s > 0) {
        st = std::clamp<int64_t>(st, 0, dim);
        en = std::clamp<int64_t>(en, 0, dim);
        len = en > st ? (en - st + s - 1) / s : 0;
      } else {
        st = std::clamp<int64_t>(st, 0, dim - 1);
        en = std::clamp<int64_t>(en, -1, dim - 1);
        len = st > en ? (st - en + (-s) - 1) / (-s) : 0;
      }
      begin[a] = st;
      step[a] = s;
      out[a] = len;
    }
    Tensor& y = ctx.Output(0, x.type(), Shape(out));
    const std::vector<int64_t> in_strides = ContiguousStrides(d);
    std::vector<int64_t> istr(rank);
    int64_t base = 0;
    for (int64_t i = 0; i < rank; ++i) {
      istr[i] = in_strides[i] * step[i];
      base += begin[i] * in_strides[i];
    }
    RecordStridedCopy(ctx, Address(ctx, x, "data"), Address(ctx, y, "output"), SizeOf(x.type()), out, istr,
                      ContiguousStrides(out), base, 0);
  }

 private:
  bool attributes_ = false;
  std::vector<int64_t> starts_, ends_, axes_;
};

// Split: each part a strided copy of its range along the axis (part lengths: the EP SDK's SplitLengths).
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const KernelInfo& info) : rule_(SplitRule::Of(info.node())) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t>& d = x.shape().dims();
    const int64_t rank = static_cast<int64_t>(d.size());
    const int64_t axis = NormalizeAxis(node, rule_.axis, rank);
    const bool from_input = rule_.input_lengths && ctx.HasInput(1);
    const std::vector<int64_t> given = from_input ? HostInts(ctx, 1) : std::vector<int64_t>{};
    const std::vector<int64_t> lengths =
        SplitLengths(node, x.shape(), static_cast<size_t>(axis), static_cast<int64_t>(ctx.NumOutputs()), rule_,
                     from_input ? &given : nullptr);
    const std::vector<int64_t> istr = ContiguousStrides(d);
    int64_t begin = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      std::vector<int64_t> out = d;
      out[axis] = lengths[i];
      Tensor& y = ctx.Output(i, x.type(), Shape(out));
      if (y.NumElements() > 0)
        RecordStridedCopy(ctx, Address(ctx, x, "input"), Address(ctx, y, "part"), SizeOf(x.type()), out, istr,
                          ContiguousStrides(out), begin * istr[axis], 0);
      begin += lengths[i];
    }
  }

 private:
  SplitRule rule_;
};

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const KernelInfo& /*info*/) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape out = BroadcastShapes(ctx.node(), x.shape(), Shape(HostInts(ctx, 1)));
    Tensor& y = ctx.Output(0, x.type(), out);
    const size_t rank = out.rank();
    std::vector<int64_t> xd(rank - x.shape().rank(), 1);
    xd.insert(xd.end(), x.shape().dims().begin(), x.shape().dims().end());
    std::vector<int64_t> istr = ContiguousStrides(xd);
    for (size_t i = 0; i < rank; ++i)
      if (xd[i] == 1) istr[i] = 0;
    RecordStridedCopy(ctx, Address(ctx, x, "input"), Address(ctx, y, "output"), SizeOf(x.type()), out.dims(), istr,
                      ContiguousStrides(out.dims()), 0, 0);
  }
};

// ---- Gather ----------------------------------------------------------------------------------------------------

struct GatherPush {
  uint64_t data, indices, out;
  uint32_t n, axis, inner, count, index64;
};

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", 0)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices = ctx.Input(1);
    const std::vector<int64_t>& d = data.shape().dims();
    const int64_t axis = NormalizeAxis(node, axis_, static_cast<int64_t>(d.size()));
    std::vector<int64_t> out(d.begin(), d.begin() + axis);
    out.insert(out.end(), indices.shape().dims().begin(), indices.shape().dims().end());
    out.insert(out.end(), d.begin() + axis + 1, d.end());
    Tensor& y = ctx.Output(0, data.type(), Shape(out));
    if (y.NumElements() == 0) return;
    if (d[axis] == 0) Fail(ErrorCode::kInvalidArgument, node, ": gathering from an empty axis of ", data.shape().ToString());
    int64_t inner = 1;
    for (size_t i = axis + 1; i < d.size(); ++i) inner *= d[i];
    const size_t element = SizeOf(data.type());
    if (element != 4 && element != 2 && element != 1)
      Fail(ErrorCode::kNotImplemented, node, ": Gather of ", DataTypeName(data.type()), " on the Vulkan EP");
    // Indices computed on the host (from shapes, e.g. position ids) go up through a staging buffer; in a captured run
    // the upload is recorded with them, which is right since such values depend on shapes alone.
    uint64_t indices_address = 0;
    if (indices.memory_info().IsHostReadable()) {
      VulkanStream& stream = StreamOf(ctx);
      VulkanDevice& device = stream.device();
      const size_t bytes = indices.SizeInBytes();
      Tensor uploaded = Tensor::Allocate(indices.type(), indices.shape(), ctx.allocator());
      const AllocatorPtr& staging = device.Staging();
      void* staged = staging->Allocate(bytes);
      std::shared_ptr<void> holder(staged, [staging](void* p) { staging->Free(p); });
      std::memcpy(staged, indices.raw_data(), bytes);
      stream.CopyBuffer(device.Resolve(staged, bytes), device.Resolve(uploaded.raw_data(), bytes), bytes);
      stream.KeepAlive(std::move(holder));
      stream.KeepAlive(uploaded.buffer());
      indices_address = Address(ctx, uploaded, "indices");
    } else {
      indices_address = Address(ctx, indices, "indices");
    }
    GatherPush push{Address(ctx, data, "data"), indices_address, Address(ctx, y, "output"),
                    U32(ctx, y.NumElements()), U32(ctx, d[axis]), U32(ctx, inner), U32(ctx, indices.NumElements()),
                    indices.type() == DataType::kInt64 ? 1u : 0u};
    DispatchLinear(StreamOf(ctx), element == 1 ? "gather_b8" : element == 2 ? "gather_b16" : "gather_b32", &push,
                   sizeof(push), y.NumElements());
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterTensorKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  const std::vector<DataType> floats = FloatTypes(device);
  // Aliases do no device work: every numeric type (shape computations stay on the CPU all the same:
  // VulkanExecutionProvider::GetCapability leaves them there).
  const std::vector<DataType> numeric = {DataType::kFloat,  DataType::kFloat16, DataType::kBFloat16, DataType::kDouble,
                                         DataType::kInt8,   DataType::kUInt8,   DataType::kInt16,    DataType::kUInt16,
                                         DataType::kInt32,  DataType::kUInt32,  DataType::kInt64,    DataType::kUInt64,
                                         DataType::kBool};
  auto alias = [&](const char* op, int since, std::vector<int> host_inputs) {
    KernelDef def = Def(op, "", since, kLatestOnnxOpset, {{0, numeric}});
    def.host_inputs = std::move(host_inputs);
    def.may_alias = true;
    registry.Register<AliasKernel>(def);
  };
  alias("Reshape", 5, {1});
  alias("Flatten", 1, {});
  alias("Squeeze", 1, {1});
  alias("Unsqueeze", 1, {1});
  alias("Identity", 1, {});
  alias("Dropout", 1, {1, 2});
  KernelDef shape = Def("Shape", "", 1, kLatestOnnxOpset, {{0, numeric}});
  shape.host_outputs = {0};
  shape.host_or_device_inputs = {0};  // only the shape is read
  // Shape of a tensor in the EP's memory, written on the host (a host output): no copy of the data, and capture works
  // (its output depends on shapes alone).
  registry.Register<ShapeOfInputKernel>(shape);
  // Data movement copies raw elements: the float types, and bool / int8 / uint8 (byte elements) where the device has
  // 8-bit storage (attention masks computed in bool).
  std::vector<DataType> moved = floats;
  if (device.storage8) moved.insert(moved.end(), {DataType::kBool, DataType::kInt8, DataType::kUInt8});
  registry.Register<TransposeKernel>(Def("Transpose", "", 1, kLatestOnnxOpset, {{0, moved}}));
  registry.Register<ConcatKernel>(Def("Concat", "", 4, kLatestOnnxOpset, {{0, moved}}));
  KernelDef slice = Def("Slice", "", 1, kLatestOnnxOpset, {{0, moved}});
  slice.host_inputs = {1, 2, 3, 4};
  registry.Register<SliceKernel>(slice);
  KernelDef split = Def("Split", "", 1, kLatestOnnxOpset, {{0, moved}});
  split.host_inputs = {1};
  registry.Register<SplitKernel>(split);
  KernelDef expand = Def("Expand", "", 8, kLatestOnnxOpset, {{0, moved}});
  expand.host_inputs = {1};
  registry.Register<ExpandKernel>(expand);
  KernelDef gather = Def("Gather", "", 1, kLatestOnnxOpset, {{0, moved}, {1, {DataType::kInt32, DataType::kInt64}}});
  gather.host_or_device_inputs = {1};  // indices computed on the host are uploaded by the kernel
  registry.Register<GatherKernel>(gather);
}

}  // namespace tessera::vulkan_ep
