// com.microsoft EmbedLayerNormalization (ONNX Runtime's fusion of BERT's embedding layer):
//   sum[b, s] = word_embedding[input_ids[b, s]] + position_embedding[position_ids[b, s] (or s)]
//               (+ segment_embedding[segment_ids[b, s]])
//   output[b, s] = (sum - mean) / sqrt(var + epsilon) * gamma + beta      over the hidden axis (epsilon default 1e-12)
// Inputs: input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma, beta, mask?,
// position_ids? ([B, S] or [1, S]); ids int32, tables and gamma/beta float32 or float16 [*, H] / [H].
// Outputs: output [B, S, H]; mask_index [B] int32 (per batch the number of mask entries equal to 1, which for a
// right-padded mask is the position of its first 0; zeros when there is no mask, as ONNX Runtime writes);
// embedding_sum [B, S, H] (the sum before the normalization). An id outside its table fails, naming the node.
// Statistics in double.
#include <cmath>
#include <vector>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

class EmbedLayerNormalization : public Kernel {
 public:
  explicit EmbedLayerNormalization(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-12f)) {}

  void Compute(KernelContext& ctx) const override {
    DispatchType(ctx.Input(2).type(), TypeList<float, Float16>{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(ctx);
    });
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx) const {
    const Node& node = ctx.node();
    const Tensor& ids = ctx.Input(0);
    const Tensor* segment_ids = ctx.OptionalInput(1);
    const Tensor &words = ctx.Input(2), &positions = ctx.Input(3);
    const Tensor* segments = ctx.OptionalInput(4);
    const Tensor &gamma = ctx.Input(5), &beta = ctx.Input(6);
    const Tensor* mask = ctx.OptionalInput(7);
    const Tensor* position_ids = ctx.OptionalInput(8);
    const auto bad = [&](const auto&... what) { Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what...); };
    if (ids.type() != DataType::kInt32 || ids.shape().rank() != 2) bad("input_ids is ", ids, ", expected int32 [B, S]");
    const int64_t batch = ids.shape()[0], seq = ids.shape()[1];
    if (words.shape().rank() != 2) bad("word_embedding is ", words, ", expected [vocabulary, hidden]");
    const int64_t hidden = words.shape()[1];
    for (const Tensor* table : {&positions, segments})
      if (table && (table->type() != words.type() || table->shape().rank() != 2 || table->shape()[1] != hidden))
        bad("embedding table ", *table, " must be ", DataTypeName(words.type()), " [*, ", hidden, "]");
    for (const Tensor* t : {&gamma, &beta})
      if (t->type() != words.type() || t->shape() != Shape{hidden})
        bad("gamma/beta is ", *t, ", expected ", DataTypeName(words.type()), " [", hidden, "]");
    if ((segment_ids == nullptr) != (segments == nullptr)) bad("segment_ids and segment_embedding come together");
    for (const Tensor* t : {segment_ids, mask})
      if (t && (t->type() != DataType::kInt32 || t->shape() != ids.shape()))
        bad(*t, " must be int32 like input_ids ", ids);
    if (position_ids && (position_ids->type() != DataType::kInt32 || position_ids->shape().rank() != 2 ||
                         (position_ids->shape()[0] != batch && position_ids->shape()[0] != 1) ||
                         position_ids->shape()[1] != seq))
      bad("position_ids is ", *position_ids, ", expected int32 [", batch, " or 1, ", seq, "]");

    const auto row_of = [&](const Tensor& table, int32_t id, const char* what) {
      if (id < 0 || id >= table.shape()[0])
        bad(what, " ", id, " is outside its embedding table of ", table.shape()[0], " rows");
      return table.Data<T>() + static_cast<int64_t>(id) * hidden;
    };
    Tensor& out = ctx.Output(0, words.type(), Shape{batch, seq, hidden});
    T* sum_out = ctx.NumOutputs() > 2 && !node.outputs[2].empty()
                     ? ctx.Output(2, words.type(), Shape{batch, seq, hidden}).template Data<T>()
                     : nullptr;
    const T *g = gamma.Data<T>(), *bt = beta.Data<T>();
    std::vector<float> sum(static_cast<size_t>(hidden));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t at = b * seq + s;
        const int32_t position = position_ids ? position_ids->Data<int32_t>()[(position_ids->shape()[0] == 1 ? 0 : b) *
                                                                                  seq + s]
                                              : static_cast<int32_t>(s);
        const T* word = row_of(words, ids.Data<int32_t>()[at], "input id");
        const T* pos = row_of(positions, position, "position id");
        const T* seg = segments ? row_of(*segments, segment_ids->Data<int32_t>()[at], "segment id") : nullptr;
        double mean = 0;
        for (int64_t f = 0; f < hidden; ++f) {
          float v = Load(word[f]) + Load(pos[f]);
          if (seg) v += Load(seg[f]);
          sum[static_cast<size_t>(f)] = v;
          if (sum_out) sum_out[at * hidden + f] = Store<T>(v);
          mean += v;
        }
        mean /= static_cast<double>(hidden);
        double var = 0;
        for (float v : sum) var += (v - mean) * (v - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(hidden) + epsilon_);
        T* row = out.Data<T>() + at * hidden;
        for (int64_t f = 0; f < hidden; ++f)
          row[f] = Store<T>(static_cast<float>((sum[static_cast<size_t>(f)] - mean) * inv) * Load(g[f]) + Load(bt[f]));
      }
    if (ctx.NumOutputs() > 1 && !node.outputs[1].empty()) {
      int32_t* index = ctx.Output(1, DataType::kInt32, Shape{batch}).template Data<int32_t>();
      for (int64_t b = 0; b < batch; ++b) {
        int32_t ones = 0;
        if (mask)
          for (int64_t s = 0; s < seq; ++s) ones += mask->Data<int32_t>()[b * seq + s] == 1;
        index[b] = ones;
      }
    }
  }

  float epsilon_;
};

}  // namespace

void RegisterEmbedLayerNormKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "EmbedLayerNormalization";
  def.domain = "com.microsoft";
  def.input_types = {{0, {DataType::kInt32}}, {2, {DataType::kFloat, DataType::kFloat16}}};
  registry.Register<EmbedLayerNormalization>(std::move(def));
}

}  // namespace tessera::cpu
