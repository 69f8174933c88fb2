// Resize (opset 10+) and Upsample (opset 7-9) on the CUDA EP: every interpolation mode, coordinate transformation,
// nearest mode, roi / scales / sizes form, antialiasing and extrapolation the CPU EP has, through the shared geometry
// (tessera/ep/resize_geometry.h), in float32 and float16 (other types stay on the CPU EP). roi, scales and sizes are
// host inputs (constants, or values computed from shapes); per input shape and values the kernel builds the taps
// table once, uploads it and keeps it for the session (CUDA graphs bake its address in), so a step is one launch.
// Past kCachedTables distinct geometries (a model resized to ever new sizes) a table is uploaded per run instead,
// into the run's memory. Blocked layouts (nchwc_layout: Resize of [N, 1, H, W, C] over H and W) are 5-D
// resizes whose channel axes are identity axes.
#include <algorithm>
#include <cstring>
#include <climits>
#include <map>
#include <mutex>

#include "providers/cuda/cuda_graph.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "tessera/ep/resize_geometry.h"

namespace tessera::cuda {
namespace {

constexpr size_t kCachedTables = 256;

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attrs_(ReadResizeAttributes(info.node())), allocator_(CudaEpOf(info).allocator(MemoryType::kDefault)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const std::vector<double> roi = Numbers(ctx, attrs_.roi_input);
    const std::vector<double> scales = attrs_.scales_input >= 0 ? Numbers(ctx, attrs_.scales_input) : attrs_.attribute_scales;
    const std::vector<double> sizes = Numbers(ctx, attrs_.sizes_input);
    const std::vector<ResizeAxis> axes = ResolveResizeGeometry(ctx.node(), attrs_, x.shape(), roi, scales, sizes);
    std::vector<int64_t> out_dims;
    for (const ResizeAxis& axis : axes) out_dims.push_back(axis.out);
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot resize empty input ", x.shape().ToString(),
           " to ", y.shape().ToString());
    if (axes.size() > static_cast<size_t>(launch::kMaxRank))
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel resizes up to ", launch::kMaxRank,
           " dimensions, not ", axes.size());
    std::vector<double> key(x.shape().dims().begin(), x.shape().dims().end());
    for (const std::vector<double>* part : {&roi, &scales, &sizes}) {
      key.push_back(-1.0 - static_cast<double>(part->size()));  // separates the parts
      key.insert(key.end(), part->begin(), part->end());
    }
    const launch::ResizeGeometry* geometry = nullptr;
    const void* taps = nullptr;
    Table uncached;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = tables_.find(key);
      if (it == tables_.end() && tables_.size() < kCachedTables) {
        Table table = BuildTable(axes);
        Tensor device = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(table.bytes())}, allocator_);
        // Synchronous and outside any capture: the table is complete before any stream reads it.
        UploadOutsideCapture(device.raw_data(), table.taps.data(), table.bytes());
        table.device = std::move(device);
        it = tables_.emplace(std::move(key), std::move(table)).first;
      }
      if (it != tables_.end()) {  // entries are never removed: their addresses may live in CUDA graphs
        geometry = &it->second.geometry;
        taps = it->second.device.raw_data();
      }
    }
    if (geometry == nullptr) {
      uncached = BuildTable(axes);
      uncached.device = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(uncached.bytes())}, ctx.allocator());
      if (WholeRunCaptureOnThisThread()) {
        // Fixed for the graph: uploaded now; a captured run's allocations live as long as its graph.
        UploadOutsideCapture(uncached.device.raw_data(), uncached.taps.data(), uncached.bytes());
      } else {
        // From pageable memory, cudaMemcpyAsync has staged the values when it returns.
        CheckCuda(cudaMemcpyAsync(uncached.device.raw_data(), uncached.taps.data(), uncached.bytes(),
                                  cudaMemcpyHostToDevice, StreamOf(ctx)),
                  ctx.node(), ": copying the resize taps");
      }
      geometry = &uncached.geometry;
      taps = uncached.device.raw_data();
    }
    CheckLaunch(ctx,
                launch::Resize(FloatElementType(ctx, x.type()), x.raw_data(), x.NumElements(), y.raw_data(),
                               y.NumElements(), *geometry, static_cast<const launch::ResizeTap*>(taps), StreamOf(ctx)),
                "Resize launch");
  }

 private:
  // The taps of one (input shape, roi, scales, sizes), and their copy on the device.
  struct Table {
    launch::ResizeGeometry geometry;
    std::vector<launch::ResizeTap> taps;  // one unused pair when every axis is an identity
    Tensor device;
    size_t bytes() const { return taps.size() * sizeof(launch::ResizeTap); }
  };

  // The values of optional host input `index` as doubles; empty when the input is absent or empty.
  static std::vector<double> Numbers(const KernelContext& ctx, int index) {
    const Tensor* t = index >= 0 ? ctx.OptionalInput(static_cast<size_t>(index)) : nullptr;
    if (t == nullptr || t->NumElements() == 0) return {};
    return HostNumbers(ctx, *t);
  }

  Table BuildTable(const std::vector<ResizeAxis>& axes) const {
    Table table;
    launch::ResizeGeometry& g = table.geometry;
    g.rank = static_cast<int>(axes.size());
    g.extrapolation = attrs_.extrapolation_value;
    int64_t stride = 1;
    for (size_t d = axes.size(); d-- > 0;) {
      g.out_dims[d] = axes[d].out;
      g.in_strides[d] = stride;
      stride *= axes[d].in;
      const ResizeTaps t = MakeResizeTaps(attrs_, axes[d]);
      g.identity[d] = t.identity;
      g.taps[d] = static_cast<int>(t.taps);
      g.first_tap[d] = static_cast<int64_t>(table.taps.size());
      if (t.identity) continue;
      for (int64_t o = 0; o < axes[d].out; ++o)
        for (int64_t k = 0; k < t.taps; ++k) {
          const size_t at = static_cast<size_t>(o * t.taps + k);
          launch::ResizeTap tap;
          tap.index = t.extrapolated[static_cast<size_t>(o)] ? -1 : static_cast<int32_t>(t.index[at]);
          tap.weight = static_cast<float>(t.weight[at]);
          table.taps.push_back(tap);
        }
    }
    if (table.taps.empty()) table.taps.emplace_back();
    return table;
  }

  const CudaExecutionProvider& ep_;
  ResizeAttributes attrs_;
  AllocatorPtr allocator_;  // the EP's device memory, for the tables
  mutable std::mutex mutex_;
  mutable std::map<std::vector<double>, Table> tables_;  // by input shape and roi / scales / sizes values
};

}  // namespace

void RegisterResizeKernels(KernelRegistry& registry) {
  KernelDef resize = MakeDef("Resize", 10, INT_MAX, FloatTypes());
  resize.host_inputs = {1, 2, 3};  // roi, scales, sizes (scales alone in opset 10)
  registry.Register<ResizeKernel>(std::move(resize));
  KernelDef upsample = MakeDef("Upsample", 7, 9, FloatTypes());
  upsample.host_inputs = {1};  // scales (opset 9)
  registry.Register<ResizeKernel>(std::move(upsample));
}

}  // namespace tessera::cuda
