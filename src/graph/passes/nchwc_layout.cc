#include "graph/passes/nchwc_layout.h"

#include <algorithm>
#include <map>
#include <memory>

namespace tessera {
namespace {

// Default-domain ops computing each output element from the same element of input 0 (other inputs, if
// any, are scalar parameters such as Clip's limits) into a fresh buffer (so not Identity, which aliases:
// NchwcConv's residual_in_place relies on blocked values owning their memory).
const std::set<std::string> kUnaryOps = {
    "Relu", "LeakyRelu", "Clip", "Sigmoid",    "Tanh",     "HardSigmoid", "HardSwish",
    "Elu",  "Selu",      "Celu", "Softplus",   "Softsign", "Abs",         "Neg",
    "Exp",  "Log",       "Sqrt", "Reciprocal", "Erf",      "Mish",        "ThresholdedRelu",
    "Gelu"};
// Those that map 0 to 0, so they keep the padding channels of a padded blocked value zero.
const std::set<std::string> kZeroPreservingUnaryOps = {
    "Relu", "LeakyRelu", "Tanh", "HardSwish",       "Elu", "Selu", "Celu", "Softsign", "Abs",
    "Neg",  "Erf",       "Mish", "ThresholdedRelu", "Gelu"};
const std::set<std::string> kBinaryOps = {"Add", "Sub", "Mul", "Div"};
const std::set<std::string> kZeroPreservingBinaryOps = {"Add", "Sub", "Mul"};
const std::map<std::string, std::string> kPools = {{"MaxPool", "NchwcMaxPool"},
                                                   {"AveragePool", "NchwcAveragePool"},
                                                   {"GlobalMaxPool", "NchwcGlobalMaxPool"},
                                                   {"GlobalAveragePool", "NchwcGlobalAveragePool"}};
constexpr const char* kDomain = "ai.tessera";

struct BlockedValue {
  std::string name;  // the blocked tensor's value name
  int64_t channels = 0;
  int64_t block = 0;    // 8, 16 or 0 (NHWC)
  DataType type = DataType::kFloat;
  bool padded = false;  // channels is not a multiple of the block: the last block ends in zero channels
};

class BlockedLayoutRewriter {
 public:
  BlockedLayoutRewriter(Graph& graph, const CanFuse& can_fuse, const ChannelBlockFor& channel_block)
      : graph_(graph), index_(graph), can_fuse_(can_fuse), channel_block_(channel_block) {}

  size_t Run() {
    for (const auto& owned : graph_.nodes) {
      Node& node = *owned;
      std::vector<std::string> blocked_outputs = TrySplit(node);
      if (blocked_outputs.empty()) {
        std::optional<std::string> blocked_output = TryConv(node);
        if (!blocked_output) blocked_output = TryPool(node);
        if (!blocked_output) blocked_output = TryResize(node);
        if (!blocked_output) blocked_output = TryPassThrough(node);
        if (blocked_output) blocked_outputs.push_back(*blocked_output);
      }
      if (blocked_outputs.empty())
        for (const std::string& input : node.inputs) EmitPlainTwin(input);
      order_.push_back(&node);
      for (const std::string& output : blocked_outputs)
        if (graph_.IsGraphOutput(output) || index_.ReadBySubgraph(output)) EmitPlainTwin(output);
    }
    Reassemble();
    if (rewritten_ > 0) graph_.opsets.emplace(kDomain, 1);
    return rewritten_;
  }

 private:
  const BlockedValue* Find(const std::string& value) const {
    auto it = blocked_.find(value);
    return it == blocked_.end() ? nullptr : &it->second;
  }

  // Whether every reader of `value` other than `node` is an ancestor of `node` (so it has run before `node`
  // under any schedule) and the value is neither a graph output nor read by a subgraph.
  bool OtherReadersPrecede(const std::string& value, const Node& node) const {
    if (graph_.IsGraphOutput(value) || index_.ReadBySubgraph(value)) return false;
    std::set<const Node*> ancestors;
    std::vector<const Node*> pending{&node};
    while (!pending.empty()) {
      const Node* current = pending.back();
      pending.pop_back();
      for (const std::string& input : current->inputs) {
        auto renamed = original_name_.find(input);
        const Node* producer = index_.Producer(renamed == original_name_.end() ? input : renamed->second);
        if (producer != nullptr && ancestors.insert(producer).second) pending.push_back(producer);
      }
    }
    for (const Node* reader : index_.Consumers(value))
      if (reader != &node && !ancestors.count(reader)) return false;
    return true;
  }

  // A one-element constant of rank <= 4: broadcasting it over a blocked value is exact.
  bool IsScalar(const std::string& value) const {
    const Tensor* constant = ConstantTensor(graph_, value);
    return constant != nullptr && constant->NumElements() == 1 && constant->shape().rank() <= 4;
  }

  // NHWC takes dense and depthwise convs with 8 or more output channels. With 8 or 16 blocks, dense convs may pad their
  // output to whole blocks when that costs at most half again the channels (MobileNetV2's 24 -> 32 with B = 16);
  // grouped and depthwise convs need whole blocks.
  static bool ChannelsFit(int64_t in_channels, int64_t out_channels, int64_t group, int64_t block) {
    if (block == 0)  // NHWC: fewer than 8 output channels fill too little of a vector to gain anything
      return out_channels >= 8 && (group == 1 || (group == in_channels && out_channels == in_channels));
    if (group == 1) {
      const int64_t padded = (out_channels + block - 1) / block * block;
      return out_channels % block == 0 || (out_channels > block && 2 * padded <= 3 * out_channels);
    }
    if (out_channels % block != 0 || group < 1) return false;
    if (group == in_channels && out_channels == in_channels) return true;  // depthwise
    return (in_channels / group) % block == 0 && (out_channels / group) % block == 0;
  }

  std::optional<std::string> TryConv(Node& node) {
    const bool conv = node.op_type == "Conv" && node.domain.empty();
    const bool fused = node.op_type == "FusedConv" && node.domain == kDomain;
    if ((!conv && !fused) || node.outputs.size() != 1 || node.NumInputs() < 2) return std::nullopt;
    const Tensor* w = ConstantTensor(graph_, node.inputs[1]);
    const DataType type = graph_.TypeOf(node.inputs[0]);
    if ((type != DataType::kFloat && type != DataType::kFloat16) || w == nullptr || w->shape().rank() != 4)
      return std::nullopt;
    const std::optional<int64_t> block = channel_block_(node, graph_);
    if (!block) return std::nullopt;
    const int64_t group = node.GetInt("group", 1), out_channels = w->shape()[0];
    const int64_t in_channels = w->shape()[1] * group;
    const BlockedValue* x = Find(node.inputs[0]);
    const BlockedValue* z = node.HasInput(3) ? Find(node.inputs[3]) : nullptr;
    if ((x && x->channels != in_channels) || !ChannelsFit(in_channels, out_channels, group, *block)) return std::nullopt;
    if (node.HasInput(3) && (!z || z->channels != out_channels || z->block != *block)) return std::nullopt;
    if (!can_fuse_(node, graph_, "NchwcConv", kDomain, 0)) return std::nullopt;
    if (x && x->block != *block) {  // blocked for another EP's convs: this one reads the plain twin
      EmitPlainTwin(node.inputs[0]);
      x = nullptr;
    }
    node.op_type = "NchwcConv";
    node.domain = kDomain;
    node.opset = 1;
    // The conv may write its output over Z when Z's other readers all run before it (saves copying Z).
    if (z && node.inputs[0] != node.inputs[3] && OtherReadersPrecede(node.inputs[3], node))
      node.attributes["residual_in_place"] = IntAttribute("residual_in_place", 1);
    if (x) node.inputs[0] = x->name;
    if (z) node.inputs[3] = z->name;
    node.attributes["channel_block"] = IntAttribute("channel_block", *block);
    return WriteBlocked(node, out_channels, *block, type);
  }

  std::optional<std::string> TryPool(Node& node) {
    auto pool = kPools.find(node.op_type);
    if (pool == kPools.end() || !node.domain.empty() || node.inputs.size() != 1 || node.outputs.size() != 1)
      return std::nullopt;
    const BlockedValue* x = Find(node.inputs[0]);
    const bool global = node.op_type.starts_with("Global");
    if (!x || (!global && node.GetInts("kernel_shape").size() != 2)) return std::nullopt;
    if (!can_fuse_(node, graph_, pool->second, kDomain, 0)) return std::nullopt;
    node.op_type = pool->second;
    node.domain = kDomain;
    node.opset = 1;
    node.inputs[0] = x->name;
    return WriteBlocked(node, x->channels, x->block, x->type);
  }

  // Resize (opset 10+) or Upsample of a blocked value over H and W only, nearest or linear, scales or sizes constant.
  // Both modes work axis by axis, and along an axis of scale 1 every coordinate mode but tf_crop_and_resize maps
  // each output coordinate to itself, so resizing [N, C/B, H, W, B] by [1, 1, sh, sw, 1] is exact (padding channels
  // stay zero). The scales or sizes become 5-D constants of their own.
  std::optional<std::string> TryResize(Node& node) {
    const bool upsample = node.op_type == "Upsample";
    if ((node.op_type != "Resize" && !upsample) || !node.domain.empty() || node.inputs.empty() ||
        node.outputs.size() != 1)
      return std::nullopt;
    const BlockedValue* x = Find(node.inputs[0]);
    const std::string mode = node.GetString("mode", "nearest");
    if (!x || (mode != "nearest" && mode != "linear") || node.HasAttribute("axes") ||
        node.GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
      return std::nullopt;
    if (upsample && node.opset < 9) {  // scales as an attribute
      const std::vector<float> scales = node.GetFloats("scales");
      if (scales.size() != 4 || scales[0] != 1.0f || scales[1] != 1.0f) return std::nullopt;
      Attribute blocked_scales = node.attributes["scales"];
      blocked_scales.floats = {1.0f, 1.0f, scales[2], scales[3], 1.0f};
      node.attributes["scales"] = std::move(blocked_scales);
      node.inputs[0] = x->name;
      return WriteBlocked(node, x->channels, x->block, x->type);
    }
    // Resize-11+: X, roi, scales, sizes (one of the last two given); Upsample-9 and Resize-10: X, scales.
    const size_t scales_input = upsample || node.opset < 11 ? 1 : 2, sizes_input = 3;
    const bool by_sizes = !upsample && node.opset >= 11 && node.HasInput(sizes_input);
    const size_t input = by_sizes ? sizes_input : scales_input;
    const Tensor* given = node.HasInput(input) ? ConstantTensor(graph_, node.inputs[input]) : nullptr;
    if (given == nullptr || given->NumElements() != 4) return std::nullopt;
    Tensor blocked;
    if (by_sizes) {
      if (given->type() != DataType::kInt64 || node.GetString("keep_aspect_ratio_policy", "stretch") != "stretch")
        return std::nullopt;
      const int64_t* sizes = given->Data<int64_t>();
      if (sizes[1] != x->channels) return std::nullopt;
      const std::vector<int64_t> dims =
          x->block == 0 ? std::vector<int64_t>{sizes[0], 1, sizes[2], sizes[3], x->channels}
                        : std::vector<int64_t>{sizes[0], (x->channels + x->block - 1) / x->block, sizes[2], sizes[3],
                                               x->block};
      blocked = Tensor::FromVector<int64_t>(Shape{5}, dims);
    } else {
      if (given->type() != DataType::kFloat) return std::nullopt;
      const float* scales = given->Data<float>();
      if (scales[0] != 1.0f || scales[1] != 1.0f) return std::nullopt;
      blocked = Tensor::FromVector<float>(Shape{5}, {1.0f, 1.0f, scales[2], scales[3], 1.0f});
    }
    const std::string name = FreshValueName(graph_, node.inputs[input] + "_blocked");
    graph_.initializers[name] = std::move(blocked);
    node.inputs[input] = name;
    node.inputs[0] = x->name;
    return WriteBlocked(node, x->channels, x->block, x->type);
  }

  std::optional<std::string> TryPassThrough(Node& node) {
    if (!node.domain.empty() || node.outputs.size() != 1 || node.inputs.empty()) return std::nullopt;
    std::vector<const BlockedValue*> parts;
    const BlockedValue* first = nullptr;
    for (const std::string& input : node.inputs) {
      parts.push_back(Find(input));
      if (!first) first = parts.back();
    }
    if (!first) return std::nullopt;
    for (const BlockedValue* part : parts)
      if (part && (part->block != first->block || part->type != first->type)) return std::nullopt;
    int64_t channels = 0;
    const bool any_padded =
        std::any_of(parts.begin(), parts.end(), [](const BlockedValue* part) { return part && part->padded; });
    if (kUnaryOps.count(node.op_type)) {
      if (!parts[0] || (any_padded && !kZeroPreservingUnaryOps.count(node.op_type))) return std::nullopt;
      for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i]) return std::nullopt;
      channels = parts[0]->channels;
    } else if (kBinaryOps.count(node.op_type) && parts.size() == 2) {
      const bool both = parts[0] && parts[1] && parts[0]->channels == parts[1]->channels;
      const bool with_scalar = (parts[0] && IsScalar(node.inputs[1])) || (parts[1] && IsScalar(node.inputs[0]));
      if (!both && !with_scalar) return std::nullopt;
      if (any_padded && (!both || !kZeroPreservingBinaryOps.count(node.op_type))) return std::nullopt;
      channels = (parts[0] ? parts[0] : parts[1])->channels;
    } else if ((node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear") && parts[0] && !any_padded) {
      // Per-tensor (de)quantization is elementwise with scalar parameters: exact on the blocked tensor (a QDQ model's
      // pairs between convolutions). Not on padded values: zero quantizes to the zero point, not to zero.
      for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i] || !IsScalar(node.inputs[i])) return std::nullopt;
      // A quantized (8-bit) blocked value has no plain twin (ReorderFromBlocked is for float values): quantize only
      // for a DequantizeLinear alone that will take it blocked too.
      if (node.op_type == "QuantizeLinear") {
        const Node* reader = index_.SoleReader(node.outputs[0]);
        if (!IsStandardOp(reader, "DequantizeLinear") || reader->inputs[0] != node.outputs[0]) return std::nullopt;
        for (size_t i = 1; i < reader->inputs.size(); ++i)
          if (!reader->inputs[i].empty() && !IsScalar(reader->inputs[i])) return std::nullopt;
      }
      const DataType out_type = graph_.TypeOf(node.outputs[0]);
      if (out_type == DataType::kUndefined) return std::nullopt;
      node.inputs[0] = parts[0]->name;
      return WriteBlocked(node, parts[0]->channels, first->block, out_type);
    } else if (node.op_type == "Concat") {
      const int64_t axis = node.GetInt("axis", 0);
      if ((axis != 1 && axis != -3) || any_padded) return std::nullopt;
      for (const BlockedValue* part : parts) {
        if (!part) return std::nullopt;
        channels += part->channels;
      }
      node.attributes["axis"] = IntAttribute("axis", first->block == 0 ? 4 : 1);  // NHWC [N, 1, H, W, C]: along C
    } else {
      return std::nullopt;
    }
    for (size_t i = 0; i < parts.size(); ++i)
      if (parts[i]) node.inputs[i] = parts[i]->name;
    return WriteBlocked(node, channels, first->block, first->type);
  }

  // Split of a blocked value along channels: every output blocked. Sizes from the constant `split` input (opset 13+),
  // the attribute (before 13) or equal parts (num_outputs, 18+); with 8/16 blocks every part must be whole blocks
  // (the sizes are then counted in blocks, axis 1), NHWC splits axis 4. Returns the original output names.
  std::vector<std::string> TrySplit(Node& node) {
    if (node.op_type != "Split" || !node.domain.empty() || node.inputs.empty()) return {};
    const BlockedValue* x = Find(node.inputs[0]);
    const int64_t axis = node.GetInt("axis", 0);
    if (!x || x->padded || (axis != 1 && axis != -3)) return {};
    for (const std::string& output : node.outputs)
      if (output.empty()) return {};
    const int64_t parts = static_cast<int64_t>(node.outputs.size());
    std::vector<int64_t> sizes;
    const bool sizes_as_input = node.opset >= 13 && node.HasInput(1);
    if (sizes_as_input) {
      const Tensor* split = ConstantTensor(graph_, node.inputs[1]);
      if (!split || split->type() != DataType::kInt64 || split->NumElements() != parts) return {};
      sizes.assign(split->Data<int64_t>(), split->Data<int64_t>() + parts);
    } else if (node.opset < 13 && node.HasAttribute("split")) {
      sizes = node.GetInts("split");
    } else {
      if (x->channels % parts != 0) return {};
      sizes.assign(static_cast<size_t>(parts), x->channels / parts);
    }
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size <= 0 || (x->block > 0 && size % x->block != 0)) return {};
      total += size;
    }
    if (total != x->channels || static_cast<int64_t>(sizes.size()) != parts) return {};
    // Blocked sizes: the same channel counts along C for NHWC, whole blocks along C/B otherwise.
    std::vector<int64_t> blocked_sizes = sizes;
    if (x->block > 0)
      for (int64_t& size : blocked_sizes) size /= x->block;
    if (sizes_as_input) {
      const std::string name = FreshValueName(graph_, node.inputs[1] + "_blocked");
      graph_.initializers[name] = Tensor::FromVector<int64_t>(Shape{parts}, blocked_sizes);
      node.inputs[1] = name;
    } else if (node.opset < 13 && node.HasAttribute("split")) {
      node.attributes["split"] = IntsAttribute("split", blocked_sizes);
    }
    node.attributes["axis"] = IntAttribute("axis", x->block == 0 ? 4 : 1);
    node.inputs[0] = x->name;
    std::vector<std::string> originals;
    for (size_t i = 0; i < node.outputs.size(); ++i)
      originals.push_back(WriteBlocked(node, sizes[i], x->block, x->type, i));
    return originals;
  }

  // The blocked value's shape when the plain value's is known ([N, C, H, W] with C = channels): [N, C/B, H, W, B]
  // (whole blocks, padded), or [N, 1, H, W, C] for block 0. Kernels that prepare work for the shapes a model
  // declares read it (KernelInfo::InputShape).
  std::optional<std::vector<Dim>> BlockedShape(const std::string& plain, int64_t channels, int64_t block) const {
    const ValueInfo* info = graph_.FindValueInfo(plain);
    if (info == nullptr || !info->shape || info->shape->size() != 4) return std::nullopt;
    const std::vector<Dim>& d = *info->shape;
    for (const Dim& dim : d)
      if (!dim.is_concrete()) return std::nullopt;
    if (d[1].value != channels) return std::nullopt;
    const auto dim = [](int64_t value) {
      Dim out;
      out.value = value;
      return out;
    };
    if (block == 0) return std::vector<Dim>{dim(d[0].value), dim(1), dim(d[2].value), dim(d[3].value), dim(channels)};
    return std::vector<Dim>{dim(d[0].value), dim((channels + block - 1) / block), dim(d[2].value), dim(d[3].value),
                            dim(block)};
  }

  // Renames the node's output to a fresh blocked value; returns the original (now the plain twin's) name.
  std::string WriteBlocked(Node& node, int64_t channels, int64_t block, DataType type, size_t output = 0) {
    const std::string original = node.outputs[output];
    ValueInfo info;
    info.name = FreshValueName(graph_, original + "_blocked");
    info.type = type;
    info.shape = BlockedShape(original, channels, block);
    node.outputs[output] = info.name;
    blocked_[original] = BlockedValue{info.name, channels, block, type, block > 0 && channels % block != 0};
    original_name_[info.name] = original;
    graph_.value_infos[info.name] = std::move(info);
    ++rewritten_;
    return original;
  }

  // Makes `value` available in plain layout under its own name, once (nothing for values never blocked).
  void EmitPlainTwin(const std::string& value) {
    const BlockedValue* blocked = Find(value);
    if (!blocked || !plain_ready_.insert(value).second) return;
    auto reorder = std::make_unique<Node>();
    reorder->name = value + "_from_blocked";
    reorder->op_type = "ReorderFromBlocked";
    reorder->domain = kDomain;
    reorder->opset = 1;
    reorder->inputs = {blocked->name};
    reorder->attributes["channels"] = IntAttribute("channels", blocked->channels);
    reorder->outputs = {value};
    order_.push_back(reorder.get());
    created_.push_back(std::move(reorder));
  }

  // Replaces the graph's node list by `order_` (original nodes and the reorders in between).
  void Reassemble() {
    std::map<const Node*, std::unique_ptr<Node>> owners;
    for (auto& node : graph_.nodes) owners.emplace(node.get(), std::move(node));
    for (auto& node : created_) owners.emplace(node.get(), std::move(node));
    graph_.nodes.clear();
    for (const Node* node : order_) graph_.nodes.push_back(std::move(owners.at(node)));
  }

  Graph& graph_;
  GraphIndex index_;
  const CanFuse& can_fuse_;
  const ChannelBlockFor& channel_block_;
  std::map<std::string, BlockedValue> blocked_;       // by the original (plain) value name
  std::map<std::string, std::string> original_name_;  // blocked value name -> the value it stands for
  std::set<std::string> plain_ready_;                 // values whose plain twin has been emitted
  std::vector<const Node*> order_;
  std::vector<std::unique_ptr<Node>> created_;
  size_t rewritten_ = 0;
};

}  // namespace

size_t ConvertToBlockedLayout(Graph& graph, const CanFuse& can_fuse, const ChannelBlockFor& channel_block) {
  return BlockedLayoutRewriter(graph, can_fuse, channel_block).Run();
}

size_t ConvertToBlockedLayout(Graph& graph, const CanFuse& can_fuse, int64_t channel_block) {
  return ConvertToBlockedLayout(graph, can_fuse,
                                [channel_block](const Node&, const Graph&) { return std::optional(channel_block); });
}

}  // namespace tessera
