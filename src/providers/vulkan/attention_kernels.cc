// ai.tessera::Attention (graph/passes/attention_fusion.h) on the Vulkan EP: the fused scaled dot-product attention
// of BERT- and GPT-style exports in one dispatch per batch entry, reading Q, K and V through the strides of the
// absorbed Transposes and writing the output in the layout the absorbed output Transpose gave. float16 on devices
// with cooperative matrices, where Q's, K's and V's rows are whole aligned 16-byte words (CoopAttentionShader), runs
// shaders/attention_coop.comp (16 query rows per workgroup, matrix units); everything else shaders/attention.comp
// (one query row per workgroup, float FMAs).
// The geometry and its checks are the EP SDK's (tessera/ep/attention_geometry.h). The cache-update form (inputs 4-7)
// is not taken (KernelDef::max_inputs): cache_update_fusion leaves the updates to ScatterElements for this EP.
#include <algorithm>
#include <string>

#include "tessera/ep/attention_geometry.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

struct AttentionPush {
  uint64_t q, k, v, out, mask;
  uint32_t heads, q_len, k_len, head_size, v_head_size;
  uint32_t q_h, q_s, q_d, k_h, k_s, k_d, v_h, v_s, v_d;
  uint32_t o_h, o_s, o_d, m_h, m_q, m_k;
  float scale;
  uint32_t flags;  // 1: mask, 2: fully masked rows give zeros
};
static_assert(sizeof(AttentionPush) <= kPushConstantBytes);

// The largest head size attention.comp holds (its kMaxHeadSize).
constexpr int64_t kMaxHeadSize = 512;

// attention_coop.comp's variant for the call ("attention[_bool_mask]_coop_h64_f16" for head sizes up to 64, "_h128"
// up to 128), or "" when it cannot take it: it needs float16 on a device with cooperative matrices (coop_f16) and
// subgroup shuffles and 42 KB of shared memory per workgroup (the variants' tiles: 40.7 KB / 39.5 KB), and reads every
// row of Q, K and V as 16-byte words, so features must be contiguous and every offset and stride a multiple of 8
// elements from 16-byte aligned addresses.
std::string CoopAttentionShader(const VulkanStream& stream, DataType type, const AttentionGeometry& g,
                                const AttentionPush& push) {
  const PhysicalDeviceInfo& device = stream.device().info();
  if (type != DataType::kFloat16 || !device.coop_f16 || !device.subgroup_shuffle ||
      device.properties.limits.maxComputeSharedMemorySize < 42 * 1024)
    return "";
  const int64_t largest = std::max(g.head_size, g.v_head_size);
  if (largest > 128 || g.head_size % 8 != 0 || g.v_head_size % 8 != 0) return "";
  if (g.q[3] != 1 || g.k[3] != 1 || g.v[3] != 1) return "";
  for (const auto* strides : {&g.q, &g.k, &g.v})
    for (size_t axis = 0; axis < 3; ++axis)
      if ((*strides)[axis] % 8 != 0) return "";
  if (push.q % 16 != 0 || push.k % 16 != 0 || push.v % 16 != 0) return "";
  if ((g.q_len + 15) / 16 > 65535 || g.heads > 65535) return "";
  return std::string(g.bool_mask ? "attention_bool_mask" : "attention") +
         (largest <= 64 ? "_coop_h64_f16" : "_coop_h128_f16");
}

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(const KernelInfo& info) : attributes_(ReadAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& q = ctx.Input(0);
    const Tensor& k = ctx.Input(1);
    const Tensor& v = ctx.Input(2);
    const Tensor* mask = ctx.OptionalInput(3);
    const AttentionGeometry g = MakeAttentionGeometry(node, attributes_, q, k, v, mask);
    if (g.head_size > kMaxHeadSize || g.v_head_size > kMaxHeadSize)
      Fail(ErrorCode::kNotImplemented, node, ": head sizes ", g.head_size, " / ", g.v_head_size,
           " exceed the Vulkan kernel's ", kMaxHeadSize);
    Tensor& out = ctx.Output(0, q.type(), g.output_shape);
    if (out.NumElements() == 0) return;
    const size_t element = SizeOf(q.type());
    AttentionPush push{};
    push.q = Address(ctx, q, "Q") + static_cast<uint64_t>(g.q_offset) * element;
    push.k = Address(ctx, k, "K") + static_cast<uint64_t>(g.k_offset) * element;
    push.v = Address(ctx, v, "V") + static_cast<uint64_t>(g.v_offset) * element;
    push.out = Address(ctx, out, "output");
    push.mask = mask != nullptr ? Address(ctx, *mask, "mask") : push.out;
    push.heads = U32(ctx, g.heads);
    push.q_len = U32(ctx, g.q_len);
    push.k_len = U32(ctx, g.k_len);
    push.head_size = U32(ctx, g.head_size);
    push.v_head_size = U32(ctx, g.v_head_size);
    push.q_h = U32(ctx, g.q[1]), push.q_s = U32(ctx, g.q[2]), push.q_d = U32(ctx, g.q[3]);
    push.k_h = U32(ctx, g.k[1]), push.k_s = U32(ctx, g.k[2]), push.k_d = U32(ctx, g.k[3]);
    push.v_h = U32(ctx, g.v[1]), push.v_s = U32(ctx, g.v[2]), push.v_d = U32(ctx, g.v[3]);
    push.o_h = U32(ctx, g.out[1]), push.o_s = U32(ctx, g.out[2]), push.o_d = U32(ctx, g.out[3]);
    push.m_h = U32(ctx, g.mask[1]), push.m_q = U32(ctx, g.mask[2]), push.m_k = U32(ctx, g.mask[3]);
    push.scale = attributes_.scale;
    push.flags = (g.has_mask ? 1u : 0u) | (attributes_.masked_rows_zero ? 2u : 0u);
    const size_t mask_element = g.bool_mask ? 1 : element;
    VulkanStream& stream = StreamOf(ctx);
    const std::string coop = CoopAttentionShader(stream, q.type(), g, push);
    const std::string shader = !coop.empty() ? coop
                                             : std::string(g.bool_mask ? "attention_bool_mask" : "attention") +
                                                   FloatSuffix(ctx, q.type());
    // One dispatch per batch entry, its offsets added to the addresses (the push constants hold no batch strides).
    for (int64_t b = 0; b < g.batch; ++b) {
      AttentionPush entry = push;
      entry.q += static_cast<uint64_t>(b * g.q[0]) * element;
      entry.k += static_cast<uint64_t>(b * g.k[0]) * element;
      entry.v += static_cast<uint64_t>(b * g.v[0]) * element;
      entry.out += static_cast<uint64_t>(b * g.out[0]) * element;
      if (g.has_mask) entry.mask += static_cast<uint64_t>(b * g.mask[0]) * mask_element;
      if (!coop.empty())
        stream.Dispatch(shader, &entry, sizeof(entry), static_cast<uint32_t>((g.q_len + 15) / 16),
                        static_cast<uint32_t>(g.heads));
      else
        DispatchRows(stream, shader, &entry, sizeof(entry), static_cast<uint64_t>(g.heads * g.q_len));
    }
  }

 private:
  AttentionAttributes attributes_;
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  KernelDef def = AttentionKernelDef();
  def.in_place_inputs.clear();
  def.max_inputs = 4;  // Q, K, V, mask: no cache updates
  const std::vector<DataType> floats = FloatTypes(device);
  std::vector<DataType> masks = floats;
  if (device.storage8) masks.push_back(DataType::kBool);
  def.input_types = {{0, floats}, {1, floats}, {2, floats}, {3, masks}};
  registry.Register<AttentionKernel>(std::move(def));
}

}  // namespace tessera::vulkan_ep
