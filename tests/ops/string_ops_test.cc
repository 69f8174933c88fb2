// StringNormalizer and TfIdfVectorizer against hand-computed values.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ops/op_tester.h"
#include "test_env.h"

namespace tessera::test {
namespace {

using StringLists = std::vector<std::pair<std::string, std::vector<std::string>>>;

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

Tensor Strings(Shape shape, std::vector<std::string> values) { return Make<std::string>(std::move(shape), values); }

// OpTester has no string-list attributes: this adds them to its serialized one-node model, runs that
// on the CPU and the testing EP with x fed as input "x", and checks output "y" against `expected`.
void RunWithStringLists(const OpTester& tester, const StringLists& lists, const Tensor& x, const Tensor& expected) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(tester.SerializedModel()));
  for (const auto& [name, values] : lists) {
    onnx::AttributeProto* attribute = model.mutable_graph()->mutable_node(0)->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& v : values) attribute->add_strings(v);
  }
  const std::string bytes = model.SerializeAsString();
  for (const char* ep : {"cpu", "testing"}) {
    Session session(TestEnv(), bytes.data(), bytes.size(), OptionsFor(ep));
    const std::vector<Value> outputs = session.Run({{"x", x}}, {"y"});
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(CompareTensors(expected, outputs[0].tensor(), 1e-6, 1e-6), "") << "on " << ep;
  }
}

OpTester Normalizer(const std::string& action, int64_t case_sensitive, const Tensor& x) {
  OpTester t("StringNormalizer", 10);
  t.Attr("case_change_action", action).Attr("is_case_sensitive", case_sensitive);
  t.Input("x", x);
  return t;
}

TEST(StringNormalizerTest, CaseInsensitiveStopwordsThenUpper) {
  const Tensor x = Strings({4}, {"Monday", "tuesday", "MONDAY", "wednesday"});
  RunWithStringLists(Normalizer("UPPER", 0, x).OutputName("y"), {{"stopwords", {"monday"}}}, x,
                     Strings({2}, {"TUESDAY", "WEDNESDAY"}));
}

TEST(StringNormalizerTest, CaseSensitiveStopwordsThenLower) {
  const Tensor x = Strings({1, 3}, {"Monday", "monday", "TUESDAY"});
  RunWithStringLists(Normalizer("LOWER", 1, x).OutputName("y"), {{"stopwords", {"monday"}}}, x,
                     Strings({1, 2}, {"monday", "tuesday"}));
}

TEST(StringNormalizerTest, AllDroppedGivesOneEmptyString) {
  const Tensor one_d = Strings({2}, {"a", "A"});
  RunWithStringLists(Normalizer("NONE", 0, one_d).OutputName("y"), {{"stopwords", {"a"}}}, one_d, Strings({1}, {""}));
  const Tensor two_d = Strings({1, 2}, {"a", "A"});
  RunWithStringLists(Normalizer("NONE", 0, two_d).OutputName("y"), {{"stopwords", {"a"}}}, two_d,
                     Strings({1, 1}, {""}));
}

TEST(StringNormalizerTest, NoStopwordsAndUtf8CaseMapping) {
  const Tensor x = Strings({3}, {"\xC3\x80\xC3\xA9",
                                 "Stra\xC3\x9F"
                                 "e",
                                 "\xFF"
                                 "aB"});  // "Àé", "Straße", bad UTF-8
  OpTester lower = Normalizer("LOWER", 0, x);
  lower
      .Output("y", Strings({3}, {"\xC3\xA0\xC3\xA9",
                                 "stra\xC3\x9F"
                                 "e",
                                 "\xFF"
                                 "ab"}))
      .Run();
  OpTester upper = Normalizer("UPPER", 0, x);
  upper
      .Output("y", Strings({3}, {"\xC3\x80\xC3\x89",
                                 "STRA\xC3\x9F"
                                 "E",
                                 "\xFF"
                                 "AB"}))
      .Run();
  OpTester none = Normalizer("NONE", 0, x);
  none.Output("y", x).Run();
}

TEST(StringNormalizerTest, RejectsBadShapesAndTypes) {
  OpTester shape = Normalizer("NONE", 0, Strings({2, 2}, {"a", "b", "c", "d"}));
  shape.OutputName("y").ExpectFailure("must be [C] or [1, C]").Run();
  OpTester type("StringNormalizer", 10);
  type.Input("x", Make<int64_t>({2}, {1, 2})).Output("y", Make<int64_t>({2}, {1, 2}));
  type.ExpectFailure("no kernel for op StringNormalizer").Run();
}

// Pool: 1-grams {1, 3}, 2-grams {(1,2), (3,3), (1,1)}, written to output columns in reverse
// (4, 3, 2, 1, 0). Row 0 [1,2,1,2,1]: "1" x3; (1,2) x2 at skip 0; (1,1) x2 at skip 1.
// Row 1 [3,3,3,0,0]: "3" x3; (3,3) x2 at skip 0 and x1 at skip 1.
OpTester TfIdf(const std::string& mode, const std::vector<float>& weights) {
  OpTester t("TfIdfVectorizer", 9);
  t.Attr("mode", mode).Attr("min_gram_length", int64_t{1}).Attr("max_gram_length", int64_t{2});
  t.Attr("max_skip_count", int64_t{1}).Attr("ngram_counts", std::vector<int64_t>{0, 2});
  t.Attr("ngram_indexes", std::vector<int64_t>{4, 3, 2, 1, 0});
  t.Attr("pool_int64s", std::vector<int64_t>{1, 3, 1, 2, 3, 3, 1, 1});
  if (!weights.empty()) t.Attr("weights", weights);
  t.Input("x", Make<int64_t>({2, 5}, {1, 2, 1, 2, 1, 3, 3, 3, 0, 0}));
  return t;
}

TEST(TfIdfVectorizerTest, ModesWithSkipsAndWeights) {
  TfIdf("TF", {}).Output("y", Make<float>({2, 5}, {2, 0, 2, 0, 3, 0, 3, 0, 3, 0})).Run();
  const std::vector<float> weights{0.5f, 1, 2, 3, 4};  // by output column
  TfIdf("TFIDF", weights).Output("y", Make<float>({2, 5}, {1, 0, 4, 0, 12, 0, 3, 0, 9, 0})).Run();
  TfIdf("IDF", weights).Output("y", Make<float>({2, 5}, {0.5f, 0, 2, 0, 4, 0, 1, 0, 3, 0})).Run();
  TfIdf("IDF", {}).Output("y", Make<float>({2, 5}, {1, 0, 1, 0, 1, 0, 1, 0, 1, 0})).Run();
}

TEST(TfIdfVectorizerTest, Int32InputOnlyBigramsNoSkip) {
  // Spec example: pool (94,17) -> column 1, (17,36) -> column 0.
  OpTester t("TfIdfVectorizer", 9);
  t.Attr("mode", std::string("TF")).Attr("min_gram_length", int64_t{2}).Attr("max_gram_length", int64_t{2});
  t.Attr("max_skip_count", int64_t{0}).Attr("ngram_counts", std::vector<int64_t>{0, 0});
  t.Attr("ngram_indexes", std::vector<int64_t>{1, 0}).Attr("pool_int64s", std::vector<int64_t>{94, 17, 17, 36});
  t.Input("x", Make<int32_t>({6}, {94, 17, 36, 12, 94, 17})).Output("y", Make<float>({2}, {1, 2})).Run();
}

TEST(TfIdfVectorizerTest, StringPool) {
  OpTester t("TfIdfVectorizer", 9);
  t.Attr("mode", std::string("TF")).Attr("min_gram_length", int64_t{1}).Attr("max_gram_length", int64_t{2});
  t.Attr("max_skip_count", int64_t{0}).Attr("ngram_counts", std::vector<int64_t>{0, 2});
  t.Attr("ngram_indexes", std::vector<int64_t>{0, 1, 2});
  const Tensor x = Strings({1, 5}, {"a", "b", "a", "b", "ab"});
  t.Input("x", x).OutputName("y");
  RunWithStringLists(t, {{"pool_strings", {"a", "ab", "a", "b"}}}, x, Make<float>({1, 3}, {2, 1, 2}));
}

TEST(TfIdfVectorizerTest, InputTypeMustMatchPool) {
  OpTester t("TfIdfVectorizer", 9);
  t.Attr("mode", std::string("TF")).Attr("min_gram_length", int64_t{1}).Attr("max_gram_length", int64_t{1});
  t.Attr("max_skip_count", int64_t{0}).Attr("ngram_counts", std::vector<int64_t>{0});
  t.Attr("ngram_indexes", std::vector<int64_t>{0}).Attr("pool_int64s", std::vector<int64_t>{7});
  t.Input("x", Strings({1}, {"7"})).Output("y", Make<float>({1}, {1}));
  t.ExpectFailure("does not match pool_int64s").Run();
}

}  // namespace
}  // namespace tessera::test
