#include "tessera/ep/matmul_skip_layer_norm_geometry.h"

#include <string>
#include <vector>

#include "tessera/ep/broadcast.h"
#include "tessera/status.h"

namespace tessera {

Shape MatMulSkipLayerNormOutput(const Node& node, const Tensor& a, const Tensor& b, const Tensor& skip,
                                const Tensor& gamma, const Tensor* beta, const Tensor* bias) {
  const DataType type = a.type();
  if (a.shape().rank() < 1 || b.shape().rank() != 2 || b.type() != type ||
      a.shape()[a.shape().rank() - 1] != b.shape()[0])
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": A ", a.Describe(), " and B ", b.Describe(),
         " do not multiply (A [..., K] and B [K, N] of one type)");
  const int64_t n = b.shape()[1];
  const struct {
    const Tensor* tensor;
    const char* what;
    int64_t length;  // -1: any
  } operands[] = {{&skip, "skip", -1}, {&gamma, "gamma", n}, {beta, "beta", n}, {bias, "bias", n}};
  for (const auto& o : operands)
    if (o.tensor != nullptr && (o.tensor->type() != type || (o.length >= 0 && o.tensor->NumElements() != o.length)))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", o.what, " is ", o.tensor->Describe(), ", expected ",
           DataTypeName(type), o.length >= 0 ? " with one value per feature (" + std::to_string(o.length) + ")" : "");
  std::vector<int64_t> dims(a.shape().dims().begin(), a.shape().dims().end() - 1);
  dims.push_back(n);
  const Shape out(dims);
  if (BroadcastShapes(node, out, skip.shape()) != out)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": skip ", skip.Describe(), " widens the product's ",
         out.ToString());
  return out;
}

}  // namespace tessera
