// ai.tessera::Attention in its cache-update form (graph/passes/cache_update_fusion.h): inputs 4-5 / 6-7 scatter rows
// into K / V along their sequence axis before the attention reads them; outputs 1 / 2 are the updated caches.
// Values computed by hand; errors name the node and the operand.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor Floats(const Shape& shape, std::vector<float> values) { return Tensor::FromVector<float>(shape, values); }
Tensor Int64Tensor(const Shape& shape, std::vector<int64_t> values) { return Tensor::FromVector<int64_t>(shape, values); }

// q = [1, 0] over three cached positions of zeros; the step writes key [2, 0] and value [1, 1] at position 1 (given
// as -2 for the values): scores [0, 2, 0], p = [1, e^2, 1] / (2 + e^2), y = p[1] * [1, 1].
OpTester OneStep(const Tensor& key_rows) {
  OpTester t("Attention", 1, "ai.tessera");
  t.Attr("k_axes", std::vector<int64_t>{0, 1, 2, 3});
  t.Input("q", Floats({1, 1, 1, 2}, {1, 0}));
  t.Input("k", Floats({1, 1, 3, 2}, {0, 0, 0, 0, 0, 0}));
  t.Input("v", Floats({1, 1, 3, 2}, {0, 0, 0, 0, 0, 0}));
  t.OmittedInput();  // no mask
  t.Input("k_rows", key_rows);
  t.Input("k_new", Floats({1, 1, 1, 2}, {2, 0}));
  t.Input("v_rows", Int64Tensor({1, 1, 1, 2}, {-2, -2}));
  t.Input("v_new", Floats({1, 1, 1, 2}, {1, 1}));
  return t;
}

TEST(AttentionCacheUpdateTest, WritesTheRowsThenAttendsOverTheUpdatedCaches) {
  const float p = std::exp(2.0f) / (2.0f + std::exp(2.0f));
  OpTester t = OneStep(Int64Tensor({1, 1, 1, 2}, {1, 1}));
  t.Output("y", Floats({1, 1, 1, 2}, {p, p}));
  t.Output("present_k", Floats({1, 1, 3, 2}, {0, 0, 2, 0, 0, 0}));
  t.Output("present_v", Floats({1, 1, 3, 2}, {0, 0, 1, 1, 0, 0}));
  t.Tolerance(1e-6, 1e-6);
  t.Run();
}

TEST(AttentionCacheUpdateTest, IndicesOutsideTheCacheAreAnErrorNamingTheNode) {
  OpTester t = OneStep(Int64Tensor({1, 1, 1, 2}, {3, 3}));
  t.OutputName("y").OutputName("present_k").OutputName("present_v");
  t.ExpectFailure("cache index 3 is outside [-3, 3)");
  t.Run({"cpu"});
}

TEST(AttentionCacheUpdateTest, IndicesOfAnotherShapeThanTheUpdatesAreAnError) {
  OpTester t = OneStep(Int64Tensor({1, 1, 2, 2}, {1, 1, 2, 2}));
  t.OutputName("y").OutputName("present_k").OutputName("present_v");
  t.ExpectFailure("must have one rank-4 shape");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
