#include "providers/cpu/common/dnnl_utils.h"

#include <omp.h>

namespace tessera::cpu {

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::primitive_attr DnnlAttr(dnnl::primitive_attr base) {
  base.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return base;
}

dnnl::memory::dims ToDnnlDims(const std::vector<int64_t>& dims) { return {dims.begin(), dims.end()}; }

dnnl::memory::desc PlainF32Desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

void ExecuteDnnl(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                 std::unordered_map<int, dnnl::memory> args) {
  // oneDNN parallelizes with OpenMP from the calling thread; match the session's intra-op setting.
  omp_set_num_threads(ctx.thread_pool().num_threads());
  dnnl::memory::desc scratch_desc = pd.scratchpad_desc();
  Tensor scratch;
  if (scratch_desc.get_size() > 0) {
    scratch = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(scratch_desc.get_size())}, ctx.allocator());
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch_desc, DnnlEngine(), scratch.raw_data());
  }
  dnnl::stream stream(DnnlEngine());
  primitive.execute(stream, args);
  stream.wait();
}

dnnl::memory ReorderInto(const dnnl::memory& from, const dnnl::memory::desc& to_desc) {
  dnnl::memory to(to_desc, DnnlEngine());
  dnnl::stream stream(DnnlEngine());
  dnnl::reorder(from, to).execute(stream, const_cast<dnnl::memory&>(from), to);
  stream.wait();
  return to;
}

void AppendShapeKey(std::vector<int64_t>& key, const Shape& shape) {
  key.push_back(static_cast<int64_t>(shape.rank()));
  key.insert(key.end(), shape.dims().begin(), shape.dims().end());
}

}  // namespace tessera::cpu
