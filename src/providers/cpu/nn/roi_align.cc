// RoiAlign (opset 10, 16): average or max of bilinear samples over a grid in each output bin of each
// region of interest. rois are [x1, y1, x2, y2] in input-image units scaled by spatial_scale.
// coordinate_transformation_mode "half_pixel" (opset 16 default) shifts by -0.5 pixel;
// "output_half_pixel" (the opset 10 behaviour) does not and forces regions to at least 1x1.
// Sampling follows ONNX Runtime, including max mode taking the largest weighted corner of each sample.
#include <algorithm>
#include <cmath>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

// The four corner offsets and weights of one bilinear sample (weights all 0 outside the image).
struct SamplePoint {
  int64_t offset[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

SamplePoint MakeSample(float y, float x, int64_t height, int64_t width) {
  SamplePoint p;
  if (y < -1.0f || y > static_cast<float>(height) || x < -1.0f || x > static_cast<float>(width)) return p;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= height - 1) y = static_cast<float>(y_high = y_low = height - 1);
  if (x_low >= width - 1) x = static_cast<float>(x_high = x_low = width - 1);
  const float ly = y - static_cast<float>(y_low), lx = x - static_cast<float>(x_low);
  const float hy = 1 - ly, hx = 1 - lx;
  p.offset[0] = y_low * width + x_low;
  p.offset[1] = y_low * width + x_high;
  p.offset[2] = y_high * width + x_low;
  p.offset[3] = y_high * width + x_high;
  p.weight[0] = hy * hx;
  p.weight[1] = hy * lx;
  p.weight[2] = ly * hx;
  p.weight[3] = ly * lx;
  return p;
}

class RoiAlign : public Kernel {
 public:
  explicit RoiAlign(const KernelInfo& info)
      : max_mode_(info.node().GetString("mode", "avg") == "max"),
        output_height_(info.node().GetInt("output_height", 1)),
        output_width_(info.node().GetInt("output_width", 1)),
        sampling_ratio_(info.node().GetInt("sampling_ratio", 0)),
        spatial_scale_(info.node().GetFloat("spatial_scale", 1.0f)),
        half_pixel_(info.node().GetString("coordinate_transformation_mode",
                                          info.node().opset >= 16 ? "half_pixel" : "output_half_pixel") ==
                    "half_pixel") {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& rois = ctx.Input(1);
    const std::vector<int64_t> batch_indices = ReadIntParameter(ctx.node(), ctx.Input(2), "batch_indices");
    const Shape& xs = x.shape();
    const int64_t num_rois = rois.shape().rank() == 2 ? rois.shape()[0] : -1;
    if (xs.rank() != 4 || num_rois < 0 || rois.shape()[1] != 4 || static_cast<int64_t>(batch_indices.size()) != num_rois)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": expects X [N,C,H,W], rois [R,4], batch_indices [R]");
    const int64_t channels = xs[1];
    Tensor& y = ctx.Output(0, DataType::kFloat, Shape{num_rois, channels, output_height_, output_width_});
    for (int64_t b : batch_indices)
      if (b < 0 || b >= xs[0])
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": batch index ", b, " is outside [0, ", xs[0], ")");
    ctx.thread_pool().ParallelFor(num_rois, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        PoolRoi(x, rois.Data<float>() + r * 4, batch_indices[static_cast<size_t>(r)],
                y.Data<float>() + r * channels * output_height_ * output_width_);
    });
  }

 private:
  void PoolRoi(const Tensor& x, const float* roi, int64_t batch, float* out) const {
    const int64_t channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
    const float offset = half_pixel_ ? 0.5f : 0.0f;
    const float start_w = roi[0] * spatial_scale_ - offset, start_h = roi[1] * spatial_scale_ - offset;
    float roi_w = roi[2] * spatial_scale_ - offset - start_w, roi_h = roi[3] * spatial_scale_ - offset - start_h;
    if (!half_pixel_) {
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const float bin_h = roi_h / static_cast<float>(output_height_), bin_w = roi_w / static_cast<float>(output_width_);
    const int64_t grid_h = sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(bin_h));
    const int64_t grid_w = sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(bin_w));
    const float count = static_cast<float>(std::max<int64_t>(grid_h * grid_w, 1));
    std::vector<SamplePoint> samples;
    for (int64_t ph = 0; ph < output_height_; ++ph)
      for (int64_t pw = 0; pw < output_width_; ++pw) {
        samples.clear();
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix)
            samples.push_back(MakeSample(
                start_h + static_cast<float>(ph) * bin_h + (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h),
                start_w + static_cast<float>(pw) * bin_w + (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w),
                height, width));
        for (int64_t c = 0; c < channels; ++c) {
          const float* plane = x.Data<float>() + (batch * channels + c) * height * width;
          float acc = 0;
          bool first = true;
          for (const SamplePoint& s : samples) {
            if (max_mode_) {
              float v = s.weight[0] * plane[s.offset[0]];
              for (int k = 1; k < 4; ++k) v = std::max(v, s.weight[k] * plane[s.offset[k]]);
              acc = first ? v : std::max(acc, v);
              first = false;
            } else {
              for (int k = 0; k < 4; ++k) acc += s.weight[k] * plane[s.offset[k]];
            }
          }
          out[(c * output_height_ + ph) * output_width_ + pw] = max_mode_ ? acc : acc / count;
        }
      }
  }

  bool max_mode_;
  int64_t output_height_, output_width_, sampling_ratio_;
  float spatial_scale_;
  bool half_pixel_;
};

}  // namespace

void RegisterRoiAlignKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "RoiAlign";
  def.since_version = 10;
  def.input_types = {{0, {DataType::kFloat}}, {1, {DataType::kFloat}}};
  def.host_inputs = {2};
  registry.Register<RoiAlign>(std::move(def));
}

}  // namespace tessera::cpu
