// EP SDK: the Shape kernel every EP can register as it is. It reads only its input's shape and writes the dims
// (opset 15 and later: the slice [start, end), negative bounds counting from the back, out-of-range bounds clamped
// to [0, rank]) as an int64 tensor. Register it with host_outputs = {0} and host_or_device_inputs = {0}: its output
// is then host memory whatever the EP, and its input is never copied anywhere for it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/ep/kernel.h"

namespace tessera {

class ShapeOfInputKernel : public Kernel {
 public:
  explicit ShapeOfInputKernel(const KernelInfo& info) {
    const Node& node = info.node();
    if (node.opset >= 15) {
      start_ = node.GetInt("start", 0);
      if (node.HasAttribute("end")) end_ = node.GetInt("end");
    }
  }

  void Compute(KernelContext& ctx) const override {
    const std::vector<int64_t>& dims = ctx.Input(0).shape().dims();
    const int64_t rank = static_cast<int64_t>(dims.size());
    const int64_t start = ClampBound(start_, rank), end = ClampBound(end_.value_or(rank), rank);
    const int64_t count = std::max<int64_t>(0, end - start);
    Tensor& out = ctx.Output(0, DataType::kInt64, Shape{count});
    std::copy_n(dims.begin() + start, count, out.Data<int64_t>());
  }

 private:
  static int64_t ClampBound(int64_t bound, int64_t rank) { return std::clamp<int64_t>(bound < 0 ? bound + rank : bound, 0, rank); }

  int64_t start_ = 0;
  std::optional<int64_t> end_;
};

}  // namespace tessera
