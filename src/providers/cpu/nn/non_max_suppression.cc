// NonMaxSuppression (opset 10, 11): per batch and class, greedily keeps the highest-scoring boxes whose
// score exceeds score_threshold and whose IoU with every box kept before is at most iou_threshold, up to
// max_output_boxes_per_class. Output rows are (batch, class, box), in batch, class, then score order.
#include <algorithm>
#include <array>
#include <numeric>
#include <optional>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

struct Box {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
  float Area() const { return (y2 - y1) * (x2 - x1); }
};

Box ToBox(const float* b, bool center_point) {
  if (center_point) {
    const float xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

float IntersectionOverUnion(const Box& a, const Box& b) {
  const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0;
  const float intersection = h * w;
  const float union_area = a.Area() + b.Area() - intersection;
  return union_area > 0 ? intersection / union_area : 0;
}

class NonMaxSuppression : public Kernel {
 public:
  explicit NonMaxSuppression(const KernelInfo& info) : center_point_(info.node().GetInt("center_point_box", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& boxes = ctx.Input(0);
    const Tensor& scores = ctx.Input(1);
    const Shape& bs = boxes.shape();
    const Shape& ss = scores.shape();
    if (bs.rank() != 3 || bs[2] != 4 || ss.rank() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": boxes must be [batches, boxes, 4] and scores ",
           "[batches, classes, boxes], got ", bs.ToString(), " and ", ss.ToString());
    const auto max_per_class = static_cast<int64_t>(ScalarOr(ctx, 2, 0.0));
    const float iou_threshold = static_cast<float>(ScalarOr(ctx, 3, 0.0));
    const Tensor* score_threshold_input = ctx.OptionalInput(4);
    std::optional<float> score_threshold;
    if (score_threshold_input)
      score_threshold = static_cast<float>(ReadScalarAsDouble(ctx.node(), *score_threshold_input, "score_threshold"));

    std::vector<std::array<int64_t, 3>> selected;
    const int64_t batches = bs[0], classes = ss[1], count = bs[1];
    for (int64_t b = 0; b < batches; ++b) {
      std::vector<Box> decoded(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) decoded[static_cast<size_t>(i)] = ToBox(boxes.Data<float>() + (b * count + i) * 4, center_point_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* class_scores = scores.Data<float>() + (b * classes + c) * count;
        for (int64_t i : SelectClass(decoded, class_scores, max_per_class, iou_threshold, score_threshold))
          selected.push_back({b, c, i});
      }
    }
    int64_t* out = ctx.Output(0, DataType::kInt64, Shape{static_cast<int64_t>(selected.size()), 3}).Data<int64_t>();
    for (size_t r = 0; r < selected.size(); ++r) std::copy(selected[r].begin(), selected[r].end(), out + r * 3);
  }

 private:
  static double ScalarOr(const KernelContext& ctx, size_t i, double fallback) {
    const Tensor* t = ctx.OptionalInput(i);
    if (!t || t->NumElements() == 0) return fallback;
    return ReadScalarAsDouble(ctx.node(), *t, i == 2 ? "max_output_boxes_per_class" : "iou_threshold");
  }

  static std::vector<int64_t> SelectClass(const std::vector<Box>& boxes, const float* scores, int64_t max_out,
                                          float iou_threshold, std::optional<float> score_threshold) {
    std::vector<int64_t> candidates;
    for (int64_t i = 0; i < static_cast<int64_t>(boxes.size()); ++i)
      if (!score_threshold || scores[i] > *score_threshold) candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
    std::vector<int64_t> kept;
    for (int64_t i : candidates) {
      if (static_cast<int64_t>(kept.size()) >= max_out) break;
      const Box& box = boxes[static_cast<size_t>(i)];
      const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
        return IntersectionOverUnion(box, boxes[static_cast<size_t>(k)]) > iou_threshold;
      });
      if (!suppressed) kept.push_back(i);
    }
    return kept;
  }

  bool center_point_;
};

}  // namespace

void RegisterNonMaxSuppressionKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "NonMaxSuppression";
  def.since_version = 10;
  def.input_types = {{0, {DataType::kFloat}}, {1, {DataType::kFloat}}};
  def.host_inputs = {2, 3, 4};
  registry.Register<NonMaxSuppression>(std::move(def));
}

}  // namespace tessera::cpu
