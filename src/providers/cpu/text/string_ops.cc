// String kernels: StringNormalizer (opset 10) and TfIdfVectorizer (opset 9).
// (RegexFullMatch, StringConcat and StringSplit are opset 20 and absent from the ONNX 1.12 suite.)
#include <cstring>
#include <locale>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// Decodes UTF-8 into code points; nullopt for malformed input.
std::optional<std::wstring> DecodeUtf8(const std::string& s) {
  std::wstring out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const int extra = lead < 0x80 ? 0 : (lead >> 5) == 0x6 ? 1 : (lead >> 4) == 0xE ? 2 : (lead >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + static_cast<size_t>(extra) >= s.size()) return std::nullopt;
    uint32_t cp = extra == 0 ? lead : lead & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((next & 0xC0) != 0x80) return std::nullopt;
      cp = (cp << 6) | (next & 0x3F);
    }
    out.push_back(static_cast<wchar_t>(cp));
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

std::string EncodeUtf8(const std::wstring& s) {
  std::string out;
  out.reserve(s.size());
  for (wchar_t wc : s) {
    const auto cp = static_cast<uint32_t>(wc);
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

// Upper/lower-casing by the rules of a locale. The locale attribute (default en_US) is tried as
// "<name>.UTF-8" and "<name>"; hosts without it installed use C.UTF-8 (Unicode case mappings too),
// and hosts without that the classic locale (ASCII only). Malformed UTF-8 is case-mapped as ASCII.
class CaseConverter {
 public:
  explicit CaseConverter(const std::string& name) : locale_(FindLocale(name)) {}

  std::string Convert(const std::string& s, bool upper) const {
    const auto& facet = std::use_facet<std::ctype<wchar_t>>(locale_);
    if (std::optional<std::wstring> wide = DecodeUtf8(s)) {
      if (upper)
        facet.toupper(wide->data(), wide->data() + wide->size());
      else
        facet.tolower(wide->data(), wide->data() + wide->size());
      return EncodeUtf8(*wide);
    }
    std::string out = s;
    for (char& c : out)
      if (static_cast<unsigned char>(c) < 0x80)
        c = static_cast<char>(upper ? std::toupper(c, std::locale::classic())
                                    : std::tolower(c, std::locale::classic()));
    return out;
  }

 private:
  static std::locale FindLocale(const std::string& name) {
    for (const std::string& candidate : {name + ".UTF-8", name, std::string("C.UTF-8")}) {
      try {
        return std::locale(candidate);
      } catch (const std::runtime_error&) {
      }
    }
    return std::locale::classic();
  }

  std::locale locale_;
};

class StringNormalizer : public Kernel {
 public:
  explicit StringNormalizer(const KernelInfo& info)
      : case_action_(info.node().GetString("case_change_action", "NONE")),
        case_sensitive_(info.node().GetInt("is_case_sensitive", 0) != 0),
        converter_(info.node().GetString("locale", "en_US")) {
    if (case_action_ != "NONE" && case_action_ != "LOWER" && case_action_ != "UPPER")
      Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": case_change_action '", case_action_,
           "' must be LOWER, UPPER or NONE");
    for (const std::string& word : info.node().GetStrings("stopwords"))
      stopwords_.insert(case_sensitive_ ? word : converter_.Convert(word, false));
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    if (!(shape.rank() == 1 || (shape.rank() == 2 && shape[0] == 1)))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", shape.ToString(), " must be [C] or [1, C]");
    std::vector<std::string> kept;
    for (const std::string& s : x.Span<std::string>()) {
      if (stopwords_.count(case_sensitive_ ? s : converter_.Convert(s, false))) continue;
      kept.push_back(case_action_ == "NONE" ? s : converter_.Convert(s, case_action_ == "UPPER"));
    }
    if (kept.empty()) kept.emplace_back();  // the spec's "empty value": one empty string
    const auto count = static_cast<int64_t>(kept.size());
    Tensor& y = ctx.Output(0, DataType::kString, shape.rank() == 1 ? Shape{count} : Shape{1, count});
    std::move(kept.begin(), kept.end(), y.Data<std::string>());
  }

 private:
  std::string case_action_;
  bool case_sensitive_;
  CaseConverter converter_;
  std::unordered_set<std::string> stopwords_;
};

// TfIdfVectorizer: counts the pool's n-grams in each row, for gram lengths min..max and skips
// 0..max_skip_count (an n-gram with skip s takes every (s+1)-th token; 1-grams count once, not once
// per skip); pool n-gram i counts at output column ngram_indexes[i]. Column j is then weighed by mode:
// TF count, IDF (count > 0) * weights[j], TFIDF count * weights[j] (weights default to 1). Weights are
// indexed by output column as in the ONNX reference implementation and ONNX Runtime.
class TfIdfVectorizer : public Kernel {
 public:
  explicit TfIdfVectorizer(const KernelInfo& info) {
    const Node& node = info.node();
    min_gram_ = node.GetInt("min_gram_length");
    max_gram_ = node.GetInt("max_gram_length");
    max_skip_ = node.GetInt("max_skip_count");
    const std::string mode = node.GetString("mode");
    mode_ = mode == "TF" ? Mode::kTf : mode == "IDF" ? Mode::kIdf : mode == "TFIDF" ? Mode::kTfIdf : Mode::kInvalid;
    if (mode_ == Mode::kInvalid)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": mode '", mode, "' must be TF, IDF or TFIDF");
    if (min_gram_ < 1 || max_gram_ < min_gram_ || max_skip_ < 0)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": need 1 <= min_gram_length <= max_gram_length and ",
           "max_skip_count >= 0, got ", min_gram_, ", ", max_gram_, ", ", max_skip_);
    ngram_indexes_ = node.GetInts("ngram_indexes");
    weights_ = node.GetFloats("weights");
    for (int64_t index : ngram_indexes_) {
      if (index < 0) Fail(ErrorCode::kInvalidModel, node.Describe(), ": negative ngram_indexes value ", index);
      output_size_ = std::max(output_size_, index + 1);
    }
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < output_size_)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": weights has ", weights_.size(), " values for ", output_size_,
           " output columns");
    BuildPool(node);
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    if (shape.rank() > 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", shape.ToString(), " must be [C] or [N, C]");
    if ((x.type() == DataType::kString) != strings_)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input of type ", DataTypeName(x.type()),
           strings_ ? " does not match pool_strings" : " does not match pool_int64s");
    // A scalar reads as one row of one token.
    const int64_t rows = shape.rank() == 2 ? shape[0] : 1, width = shape.rank() == 0 ? 1 : shape.dims().back();
    Tensor& y = ctx.Output(0, DataType::kFloat, shape.rank() == 2 ? Shape{rows, output_size_} : Shape{output_size_});
    float* out = y.Data<float>();
    if (x.type() == DataType::kString)
      CountRows(ctx, x.Data<std::string>(), rows, width, out);
    else if (x.type() == DataType::kInt32)
      CountRows(ctx, x.Data<int32_t>(), rows, width, out);
    else
      CountRows(ctx, x.Data<int64_t>(), rows, width, out);
  }

 private:
  enum class Mode { kTf, kIdf, kTfIdf, kInvalid };

  // n-gram keys: 8 bytes per integer token, length-prefixed bytes per string token.
  static void AppendToken(int64_t v, std::string& key) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
  static void AppendToken(const std::string& s, std::string& key) {
    const auto size = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    key.append(s);
  }

  template <typename T>
  void CountRows(KernelContext& ctx, const T* x, int64_t rows, int64_t width, float* out) const {
    ctx.thread_pool().ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, width)),
                                  [&](int64_t begin, int64_t end) {
                                    std::vector<int64_t> counts(static_cast<size_t>(output_size_));
                                    std::string key;
                                    for (int64_t row = begin; row < end; ++row) {
                                      std::fill(counts.begin(), counts.end(), 0);
                                      CountRow(x + row * width, width, key, counts);
                                      WriteRow(counts, out + row * output_size_);
                                    }
                                  });
  }

  // Maps every pool n-gram's key to its output column.
  void BuildPool(const Node& node) {
    const std::vector<int64_t> pool_ints = node.GetInts("pool_int64s");
    const std::vector<std::string> pool_strings = node.GetStrings("pool_strings");
    strings_ = !pool_strings.empty();
    if (strings_ == !pool_ints.empty())
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": exactly one of pool_int64s and pool_strings must be set");
    const auto pool_size = static_cast<int64_t>(strings_ ? pool_strings.size() : pool_ints.size());
    const std::vector<int64_t> starts = node.GetInts("ngram_counts");
    size_t ngram = 0;
    for (size_t level = 0; level < starts.size(); ++level) {
      const auto n = static_cast<int64_t>(level + 1);
      const int64_t begin = starts[level], end = level + 1 < starts.size() ? starts[level + 1] : pool_size;
      if (begin < 0 || end < begin || end > pool_size || (end - begin) % n != 0)
        Fail(ErrorCode::kInvalidModel, node.Describe(), ": ngram_counts entry ", level, " gives pool range [", begin,
             ", ", end, ") that does not hold whole ", n, "-grams of a pool of ", pool_size);
      for (int64_t start = begin; start < end; start += n, ++ngram) {
        std::string key;
        for (int64_t t = start; t < start + n; ++t) {
          if (strings_)
            AppendToken(pool_strings[static_cast<size_t>(t)], key);
          else
            AppendToken(pool_ints[static_cast<size_t>(t)], key);
        }
        if (ngram >= ngram_indexes_.size())
          Fail(ErrorCode::kInvalidModel, node.Describe(), ": the pool has more n-grams than ngram_indexes (",
               ngram_indexes_.size(), ")");
        pool_.emplace(std::move(key), static_cast<size_t>(ngram_indexes_[ngram]));
      }
      max_pool_gram_ = n;
    }
  }

  template <typename T>
  void CountRow(const T* tokens, int64_t width, std::string& key, std::vector<int64_t>& counts) const {
    const int64_t top = std::min(max_gram_, max_pool_gram_);
    for (int64_t skip = 0; skip <= max_skip_; ++skip) {
      const int64_t step = skip + 1;
      for (int64_t start = 0; start < width; ++start) {
        key.clear();
        for (int64_t n = 1; n <= top && start + (n - 1) * step < width; ++n) {
          if constexpr (std::is_same_v<T, std::string>)
            AppendToken(tokens[start + (n - 1) * step], key);
          else
            AppendToken(static_cast<int64_t>(tokens[start + (n - 1) * step]), key);
          if (n < min_gram_ || (n == 1 && skip > 0)) continue;
          auto it = pool_.find(key);
          if (it != pool_.end()) ++counts[it->second];
        }
      }
    }
  }

  void WriteRow(const std::vector<int64_t>& counts, float* out) const {
    for (size_t j = 0; j < counts.size(); ++j) {
      const float weight = weights_.empty() ? 1.0f : weights_[j];
      const float count = static_cast<float>(counts[j]);
      out[j] = mode_ == Mode::kTf ? count : mode_ == Mode::kIdf ? (counts[j] > 0 ? weight : 0.0f) : count * weight;
    }
  }

  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0, max_pool_gram_ = 0, output_size_ = 0;
  Mode mode_ = Mode::kTf;
  bool strings_ = false;
  std::vector<int64_t> ngram_indexes_;
  std::vector<float> weights_;
  std::unordered_map<std::string, size_t> pool_;
};

}  // namespace

void RegisterStringKernels(KernelRegistry& registry) {
  KernelDef normalizer;
  normalizer.op_type = "StringNormalizer";
  normalizer.since_version = 10;
  normalizer.input_types = {{0, {DataType::kString}}};
  registry.Register<StringNormalizer>(std::move(normalizer));

  KernelDef tfidf;
  tfidf.op_type = "TfIdfVectorizer";
  tfidf.since_version = 9;
  tfidf.input_types = {{0, {DataType::kString, DataType::kInt32, DataType::kInt64}}};
  registry.Register<TfIdfVectorizer>(std::move(tfidf));
}

}  // namespace tessera::cpu
