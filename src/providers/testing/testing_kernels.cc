#include "providers/testing/testing_kernels.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "providers/testing/testing_memory.h"
#include "providers/testing/testing_stream.h"
#include "tessera/ep/shape_kernel.h"

namespace tessera::testing_ep {

namespace {

// ---- memory access --------------------------------------------------------------------------------

// Device kernels reach only this device's memory: a tensor in plain host memory means a copy is missing.
float* DeviceData(const KernelContext& ctx, const Tensor& t, const std::string& what) {
  if (!IsOwnMemory(t.memory_info()))
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " is in ", t.memory_info().ToString(),
         ", not in memory the testing device can reach (a missing copy?)");
  return static_cast<float*>(DeviceAccessibleData(t, what.c_str()));
}

const float* InputData(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.Input(i);
  if (t.type() != DataType::kFloat)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " is ", DataTypeName(t.type()),
         ", the testing device supports float only");
  return DeviceData(ctx, t, "input " + std::to_string(i));
}

float* OutputData(const KernelContext& ctx, const Tensor& t) { return DeviceData(ctx, t, "output 0"); }

// ---- broadcasting ---------------------------------------------------------------------------------

// numpy broadcasting of two shapes; throws naming the node when they are incompatible.
std::vector<int64_t> BroadcastDims(const Node& node, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": shapes ", Shape(a).ToString(), " and ",
           Shape(b).ToString(), " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `dims` (right-aligned to `out_dims`) with 0 for broadcast dimensions.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> strides(out_dims.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t d = dims.size() - 1 - k;
    const size_t o = out_dims.size() - 1 - k;
    strides[o] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

// Offset of the element at row-major position `linear` of `out_dims` in a tensor with `strides`,
// considering only dimensions [0, rank).
int64_t OffsetOf(int64_t linear, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& strides,
                 size_t rank) {
  int64_t offset = 0;
  for (size_t k = rank; k-- > 0;) {
    offset += (linear % out_dims[k]) * strides[k];
    linear /= out_dims[k];
  }
  return offset;
}

// ---- Add, Mul ---------------------------------------------------------------------------------------

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
};

// One innermost row; the strides are 0 or 1 and the four cases are separate loops so each vectorizes.
template <typename Op>
void BinaryRow(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  Op op;
  if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a[j], b[j]);
  } else if (sa == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a[j], b[0]);
  } else if (sb == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a[0], b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a[0], b[0]);
  }
}

struct BinaryPlan {
  std::vector<int64_t> dims, a_strides, b_strides;
  int64_t rows = 1, row_length = 1;
};

template <typename Op>
void RunBinary(const BinaryPlan& plan, const float* a, const float* b, float* out) {
  const size_t outer_rank = plan.dims.size() - 1;
  const int64_t sa = plan.a_strides.back(), sb = plan.b_strides.back();
  for (int64_t r = 0; r < plan.rows; ++r) {
    const int64_t a_offset = OffsetOf(r, plan.dims, plan.a_strides, outer_rank);
    const int64_t b_offset = OffsetOf(r, plan.dims, plan.b_strides, outer_rank);
    BinaryRow<Op>(a + a_offset, sa, b + b_offset, sb, out + r * plan.row_length, plan.row_length);
  }
}

template <typename Op>
class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(const KernelInfo& /*info*/) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    BinaryPlan plan;
    plan.dims = BroadcastDims(ctx.node(), a.shape().dims(), b.shape().dims());
    Tensor& out = ctx.Output(0, DataType::kFloat, Shape(plan.dims));
    if (out.NumElements() == 0) return;
    if (plan.dims.empty()) plan.dims = {1};  // a scalar is one row of one element
    plan.a_strides = BroadcastStrides(a.shape().dims(), plan.dims);
    plan.b_strides = BroadcastStrides(b.shape().dims(), plan.dims);
    plan.row_length = plan.dims.back();
    plan.rows = out.NumElements() / plan.row_length;
    const float* a_data = InputData(ctx, 0);
    const float* b_data = InputData(ctx, 1);
    float* out_data = OutputData(ctx, out);
    RunOn(ctx.stream(), [plan = std::move(plan), a_data, b_data, out_data] {
      RunBinary<Op>(plan, a_data, b_data, out_data);
    });
  }
};

// ---- Relu -----------------------------------------------------------------------------------------

class ReluKernel : public Kernel {
 public:
  explicit ReluKernel(const KernelInfo& /*info*/) {}

  void Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.Output(0, DataType::kFloat, ctx.Input(0).shape());
    const int64_t n = out.NumElements();
    if (n == 0) return;
    const float* x = InputData(ctx, 0);
    float* y = OutputData(ctx, out);
    RunOn(ctx.stream(), [x, y, n] {
      for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0.0f);
    });
  }
};

// ---- MatMul ---------------------------------------------------------------------------------------

// numpy.matmul shapes: 1-D operands are promoted to matrices and the promoted dimension is dropped
// from the result; batch dimensions broadcast.
struct MatMulPlan {
  int64_t m = 0, k = 0, n = 0, batches = 1;
  std::vector<int64_t> batch_dims, a_batch_strides, b_batch_strides;  // strides in matrices
  std::vector<int64_t> out_dims;
};

MatMulPlan PlanMatMul(const Node& node, std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.empty() || b.empty()) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": MatMul inputs must not be scalars");
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  MatMulPlan plan;
  plan.m = a[a.size() - 2];
  plan.k = a.back();
  plan.n = b.back();
  if (b[b.size() - 2] != plan.k)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": inner dimensions differ: A is ", Shape(a).ToString(),
         ", B is ", Shape(b).ToString());
  const std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  plan.batch_dims = BroadcastDims(node, a_batch, b_batch);
  plan.a_batch_strides = BroadcastStrides(a_batch, plan.batch_dims);
  plan.b_batch_strides = BroadcastStrides(b_batch, plan.batch_dims);
  for (int64_t d : plan.batch_dims) plan.batches *= d;
  plan.out_dims = plan.batch_dims;
  if (!a_vector) plan.out_dims.push_back(plan.m);
  if (!b_vector) plan.out_dims.push_back(plan.n);
  return plan;
}

// out[m x n] = a[m x k] * b[k x n], row by row so that the inner loop runs along contiguous rows.
void MultiplyMatrices(const float* a, const float* b, float* out, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    std::fill(row, row + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float scale = a[i * k + p];
      const float* b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += scale * b_row[j];
    }
  }
}

void RunMatMul(const MatMulPlan& plan, const float* a, const float* b, float* out) {
  const size_t rank = plan.batch_dims.size();
  for (int64_t batch = 0; batch < plan.batches; ++batch) {
    const int64_t a_matrix = OffsetOf(batch, plan.batch_dims, plan.a_batch_strides, rank);
    const int64_t b_matrix = OffsetOf(batch, plan.batch_dims, plan.b_batch_strides, rank);
    MultiplyMatrices(a + a_matrix * plan.m * plan.k, b + b_matrix * plan.k * plan.n, out + batch * plan.m * plan.n,
                     plan.m, plan.k, plan.n);
  }
}

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo& /*info*/) {}

  void Compute(KernelContext& ctx) const override {
    MatMulPlan plan = PlanMatMul(ctx.node(), ctx.Input(0).shape().dims(), ctx.Input(1).shape().dims());
    Tensor& out = ctx.Output(0, DataType::kFloat, Shape(plan.out_dims));
    if (out.NumElements() == 0) return;
    const float* a = InputData(ctx, 0);
    const float* b = InputData(ctx, 1);
    float* y = OutputData(ctx, out);
    RunOn(ctx.stream(), [plan = std::move(plan), a, b, y] { RunMatMul(plan, a, b, y); });
  }
};

// ---- Reshape (Shape: tessera/ep/shape_kernel.h) ----------------------------------------------------------

// Reshape: the new shape is read on the host (a host input); the data is copied on the device stream.
class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(const KernelInfo& info) : allow_zero_(info.node().GetInt("allowzero", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.Input(0);
    const Tensor& requested = ctx.Input(1);
    if (requested.type() != DataType::kInt64 || requested.shape().rank() != 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the shape input must be a 1-D int64 tensor");
    std::vector<int64_t> dims(requested.Data<int64_t>(), requested.Data<int64_t>() + requested.NumElements());
    int64_t known = 1, inferred = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && !allow_zero_) dims[i] = i < data.shape().rank() ? data.shape()[i] : 0;
      if (dims[i] == -1) {
        inferred = static_cast<int64_t>(i);
      } else {
        known *= dims[i];
      }
    }
    if (inferred >= 0) dims[inferred] = known == 0 ? 0 : data.NumElements() / known;
    if (Shape(dims).NumElements() != data.NumElements())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot reshape ", data.shape().ToString(), " to ",
           Shape(dims).ToString());
    Tensor& out = ctx.Output(0, DataType::kFloat, Shape(dims));
    const int64_t n = out.NumElements();
    if (n == 0) return;
    const float* x = InputData(ctx, 0);
    float* y = OutputData(ctx, out);
    RunOn(ctx.stream(), [x, y, n] { std::copy(x, x + n, y); });
  }

 private:
  bool allow_zero_;
};

KernelDef FloatDef(const char* op, int since, int inputs) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  for (int i = 0; i < inputs; ++i) def.input_types[i] = {DataType::kFloat};
  return def;
}

}  // namespace

void RegisterTestingKernels(KernelRegistry& registry) {
  registry.Register<BinaryKernel<AddOp>>(FloatDef("Add", 7, 2));
  registry.Register<BinaryKernel<MulOp>>(FloatDef("Mul", 7, 2));
  registry.Register<ReluKernel>(FloatDef("Relu", 6, 1));
  registry.Register<MatMulKernel>(FloatDef("MatMul", 1, 2));
  KernelDef shape;
  shape.op_type = "Shape";
  shape.host_outputs = {0};
  shape.host_or_device_inputs = {0};  // only the shape is read
  // Written in host memory at enqueue time from the shape alone: no device work, nothing to wait for.
  registry.Register<ShapeOfInputKernel>(std::move(shape));
  KernelDef reshape = FloatDef("Reshape", 5, 1);
  reshape.host_inputs = {1};
  registry.Register<ReshapeKernel>(std::move(reshape));
}

}  // namespace tessera::testing_ep
