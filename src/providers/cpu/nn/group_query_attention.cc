// GroupQueryAttention (com.microsoft): the attention of ONNX Runtime GenAI's decoder exports (Phi-3, Llama, Qwen,
// Mistral ...), with a key/value cache in BNSH whose rows each batch item fills up to its own length.
//   query [B, S, Nq*H], key / value [B, S, Nkv*H] (or, with key and value absent, query packs [Q | K | V] as
//   [B, S, (Nq + 2 Nkv)*H]); past_key / past_value [B, Nkv, P, H] (P: the past's length, or the cache's whole length
//   when past and present share a buffer); seqlens_k int32 [B]: each item's total length - 1 (past + new);
//   total_sequence_length int32 scalar: the batch's longest total; cos_cache / sin_cache [max_position, R/2] with
//   do_rotary = 1.
//   A first prompt (total_sequence_length == S) starts at position 0 and attends only to its item's first
//   seqlens_k + 1 keys (right padding after them); later calls append at past = seqlens_k + 1 - S.
//   With do_rotary, Q and the new K are rotated (RotaryEmbedding's formula, the first R features, pairs interleaved
//   with rotary_interleaved = 1) by the positions past + s. present_key / present_value [B, Nkv, max(P, total), H]:
//   item b's past rows [0, past_b), its new rows at [past_b, past_b + S), zeros after them; when the caller binds a
//   present output to its past input's buffer, only the new rows are written. scores = scale (default 1/sqrt(H)) *
//   q.k, softcap > 0 maps them to softcap * tanh(scores / softcap); query s at position p = past + s attends to keys
//   j <= p (causal) of its item's keys, and with local_window_size = W > 0 to the last W of them only (j > p - W).
//   Query head h reads key/value head h / (Nq / Nkv). Output [B, S, Nq*H]. Checked against ONNX Runtime 1.30's CPU
//   kernel (onnxruntime-node) on prompts with and without padding, packed QKV, rotary (interleaved or not, partial),
//   decoding with an exact or a longer (shared) past, a later prompt after a cached one, windows, softcap, scale,
//   float16.
// Not implemented (refused by name, tessera/ep/gqa_geometry.h): position_ids, attention_bias and head_sink inputs
// (9-11), smooth_softmax, qk_output. Arithmetic in float32 for float16 / bfloat16.
#include <cmath>
#include <cstring>

#include "tessera/ep/gqa_geometry.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/attention_core.h"

namespace tessera::cpu {

namespace {

class GroupQueryAttention : public Kernel {
 public:
  explicit GroupQueryAttention(const KernelInfo& info) : attributes_(ReadGqaAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DispatchType(ctx.Input(0).type(), TypeList<float, Float16, BFloat16>{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(ctx);
    });
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx) const {
    const Node& node = ctx.node();
    const Tensor& query = ctx.Input(0);
    const Tensor* key = ctx.OptionalInput(1);
    const Tensor* value = ctx.OptionalInput(2);
    const Tensor* past_k = ctx.OptionalInput(3);
    const Tensor* past_v = ctx.OptionalInput(4);
    const Tensor& seqlens = ctx.Input(5);
    const Tensor& total_length = ctx.Input(6);
    const Tensor* cos = ctx.OptionalInput(7);
    const Tensor* sin = ctx.OptionalInput(8);
    if (total_length.type() != DataType::kInt32 || total_length.NumElements() != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": total_sequence_length is ", total_length,
           ", expected one int32");
    const GqaGeometry g = MakeGqaGeometry(node, attributes_, query, key, value, past_k, past_v, seqlens,
                                          total_length.Data<int32_t>()[0], cos, sin);
    const int64_t batch = g.batch, s_len = g.s, head = g.head, heads = attributes_.heads, kv_heads = attributes_.kv_heads;
    const int64_t total = g.total, present_rows = g.present_rows, rot = g.rot;
    const bool first_prompt = g.first_prompt;
    const auto view = [&](const GqaRows& r, int64_t n) { return HeadView{batch, n, s_len, head, r.batch, r.head, r.position}; };
    HeadView vq = view(g.q, heads);
    const HeadView vk = view(g.k, kv_heads), vv = view(g.v, kv_heads);
    const T* q_data = query.Data<T>();
    const T* k_data = g.packed ? q_data + g.k.element_offset : key->Data<T>();
    const T* v_data = g.packed ? q_data + g.v.element_offset : value->Data<T>();

    // Per item: where its new rows start and how many keys it has.
    std::vector<int64_t> past(static_cast<size_t>(batch)), keys(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t length = int64_t{seqlens.Data<int32_t>()[b]} + 1;
      const int64_t start = first_prompt ? 0 : length - s_len;
      if (length < 1 || length > total || start < 0 || start + s_len > present_rows)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": seqlens_k[", b, "] = ", length - 1, " does not fit ",
             s_len, " new tokens, total_sequence_length ", total, " and a cache of ", present_rows, " rows");
      past[static_cast<size_t>(b)] = start;
      keys[static_cast<size_t>(b)] = first_prompt ? length : start + s_len;
    }

    if (attributes_.rotary)
      for (int64_t b = 0; b < batch; ++b)
        if (past[static_cast<size_t>(b)] + s_len > g.rotary_rows)
          Fail(ErrorCode::kInvalidArgument, node.Describe(), ": positions up to ", past[static_cast<size_t>(b)] + s_len - 1,
               " exceed the rotary caches' ", g.rotary_rows, " rows");

    // Q (rotated, when asked) in a [B, S, Nq, H] scratch; the new K rows go straight into the present cache.
    Tensor q_scratch;
    if (attributes_.rotary) {
      q_scratch = Tensor::Allocate(query.type(), Shape{batch, s_len, heads * head}, ctx.allocator());
      Rotate<T>(q_data, vq, q_scratch.Data<T>(), HeadView::Bshd(batch, heads, s_len, head), past, *cos, *sin, rot);
      vq = HeadView::Bshd(batch, heads, s_len, head);
      q_data = q_scratch.Data<T>();
    }
    Tensor present_k = Present(ctx, 1, past_k, present_rows, head, past);
    Tensor present_v = Present(ctx, 2, past_v, present_rows, head, past);
    const HeadView vp = HeadView::Bnsh(batch, kv_heads, present_rows, head);
    const auto rows_at = [&](const HeadView& view, int64_t b) {  // view of the new rows [past, past + S) of item b
      HeadView rows = view;
      rows.batch = 1;
      return std::make_pair(rows, b * view.sb + past[static_cast<size_t>(b)] * view.sp);
    };
    for (int64_t b = 0; b < batch; ++b) {
      const auto [target, offset] = rows_at(vp, b);
      if (attributes_.rotary) {
        std::vector<int64_t> start{past[static_cast<size_t>(b)]};
        Rotate<T>(k_data + b * vk.sb, {1, vk.heads, vk.positions, vk.features, vk.sb, vk.sh, vk.sp},
                  present_k.Data<T>() + offset, target, start, *cos, *sin, rot);
      } else {
        CopyRows<T>(k_data + b * vk.sb, vk, present_k.Data<T>() + offset, target);
      }
      CopyRows<T>(v_data + b * vv.sb, vv, present_v.Data<T>() + offset, target);
    }

    Tensor& y = ctx.Output(0, query.type(), Shape{batch, s_len, heads * head});
    const float scale = g.scale;
    const int64_t window = attributes_.window;
    const auto bias = [&](int64_t b, int64_t /*h*/, int64_t i, int64_t j, float score) {
      const int64_t position = past[static_cast<size_t>(b)] + i;
      if (j > position || j >= keys[static_cast<size_t>(b)] || (window > 0 && j <= position - window))
        return kMaskedScore;
      return score;
    };
    // Causal: the queries [first, first + rows) of item b read no key past position past + first + rows - 1.
    const auto key_end = [&](int64_t b, int64_t first, int64_t rows) {
      return std::min(keys[static_cast<size_t>(b)], past[static_cast<size_t>(b)] + first + rows);
    };
    AttentionRows<T>(ctx.thread_pool(), q_data, vq, present_k.Data<T>(), vp, present_v.Data<T>(), vp, y.Data<T>(),
                     HeadView::Bshd(batch, heads, s_len, head), scale, attributes_.softcap, bias, nullptr, false,
                     key_end);
  }

  // Output `index` (or a scratch when the graph omits it) [B, Nkv, rows, H]: item b's first past[b] rows from the past,
  // zeros after them (its new rows are written next); when the output is the past's own buffer (a cache shared in
  // place), the past stays as it is.
  Tensor Present(KernelContext& ctx, size_t index, const Tensor* past, int64_t rows, int64_t head,
                 const std::vector<int64_t>& past_of) const {
    const Tensor& query = ctx.Input(0);
    const Shape shape{query.shape()[0], attributes_.kv_heads, rows, head};
    Tensor out = ctx.NumOutputs() > index && !ctx.node().outputs[index].empty()
                     ? ctx.Output(index, query.type(), shape)
                     : Tensor::Allocate(query.type(), shape, ctx.allocator());
    if (past != nullptr && out.raw_data() == past->raw_data()) return out;
    std::memset(out.raw_data(), 0, out.SizeInBytes());
    if (past == nullptr || past->SizeInBytes() == 0) return out;
    const size_t element = SizeOf(query.type());
    const int64_t past_rows = past->shape()[2];
    for (int64_t b = 0; b < shape[0]; ++b)
      for (int64_t h = 0; h < attributes_.kv_heads; ++h) {
        const int64_t r = b * attributes_.kv_heads + h;
        std::memcpy(static_cast<char*>(out.raw_data()) + static_cast<size_t>(r * rows * head) * element,
                    static_cast<const char*>(past->raw_data()) + static_cast<size_t>(r * past_rows * head) * element,
                    static_cast<size_t>(std::min(past_of[static_cast<size_t>(b)], past_rows) * head) * element);
      }
    return out;
  }

  template <typename T>
  static void CopyRows(const T* src, const HeadView& from, T* dst, const HeadView& to) {
    for (int64_t h = 0; h < from.heads; ++h)
      for (int64_t p = 0; p < from.positions; ++p)
        std::memcpy(dst + to.Offset(0, h, p), src + from.Offset(0, h, p), sizeof(T) * static_cast<size_t>(from.features));
  }

  // dst = src with the first `rot` features of every head rotated by position starts[b] + p (RotaryEmbedding's
  // formula); `starts` has one entry per batch item of the views.
  template <typename T>
  void Rotate(const T* src, const HeadView& from, T* dst, const HeadView& to, const std::vector<int64_t>& starts,
              const Tensor& cos, const Tensor& sin, int64_t rot) const {
    const int64_t half = rot / 2;
    const T* c = cos.Data<T>();
    const T* s = sin.Data<T>();
    for (int64_t b = 0; b < from.batch; ++b)
      for (int64_t h = 0; h < from.heads; ++h)
        for (int64_t p = 0; p < from.positions; ++p) {
          const T* in = src + from.Offset(b, h, p);
          T* out = dst + to.Offset(b, h, p);
          const int64_t row = (starts[static_cast<size_t>(b)] + p) * half;
          for (int64_t j = 0; j < half; ++j) {
            const int64_t i1 = attributes_.interleaved ? 2 * j : j, i2 = attributes_.interleaved ? 2 * j + 1 : j + half;
            const float cj = Load(c[row + j]), sj = Load(s[row + j]), x1 = Load(in[i1]), x2 = Load(in[i2]);
            out[i1] = Store<T>(cj * x1 - sj * x2);
            out[i2] = Store<T>(sj * x1 + cj * x2);
          }
          for (int64_t f = rot; f < from.features; ++f) out[f] = in[f];
        }
  }

  GqaAttributes attributes_;
};

}  // namespace

void RegisterGroupQueryAttentionKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "GroupQueryAttention";
  def.domain = "com.microsoft";
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  def.in_place_inputs = {-1, 3, 4};  // present_key / present_value over past_key / past_value (a shared cache)
  registry.Register<GroupQueryAttention>(std::move(def));
}

}  // namespace tessera::cpu
