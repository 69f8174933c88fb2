// The model of the copy-stream race tests (CopyStreamsTest on the testing EP, CudaCopyStreamsTest on CUDA).
//
// y = (a @ b) @ b on the device; z = s + s on the device, with s = HostOp(c) computed on the CPU. The copy of s
// to the device is queued while the MatMuls still run and can reuse memory they read (a, b and t have s's
// size), which the host has already released: with copy streams, it must wait for them.
#pragma once

#include <string>
#include <vector>

#include "tessera/tessera.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {

// `host_op`: a unary float op that the device EP under test has no kernel for.
inline std::string CopyRaceModel(int64_t n, const std::string& host_op) {
  return GraphBuilder()
      .Input("a", {n, n})
      .Input("b", {n, n})
      .Input("c", {n, n})
      .Node("MatMul", {"a", "b"}, {"t"})
      .Node("MatMul", {"t", "b"}, {"y"})
      .Node(host_op, {"c"}, {"s"})
      .Node("Add", {"s", "s"}, {"z"})
      .Output("y")
      .Output("z")
      .Serialize();
}

// An n x n float tensor of small integers in [-modulus/2, modulus/2): float32 products and sums of them stay exact.
inline Tensor CopyRacePattern(int64_t n, int modulus, int shift) {
  std::vector<float> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((static_cast<int64_t>(i) * 7 + shift) % modulus - modulus / 2);
  return Tensor::FromVector<float>({n, n}, v);
}

}  // namespace tessera::test
