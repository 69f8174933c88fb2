#include "random_inputs.h"

#include <random>

#include "npy.h"

namespace tessera::cli {
namespace {

template <typename T, typename Convert>
void FillUniform(Tensor& tensor, std::mt19937& rng, double lo, double hi, Convert convert) {
  std::uniform_real_distribution<double> dist(lo, hi);
  T* out = static_cast<T*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) out[i] = convert(dist(rng));
}

template <typename T>
void FillIntegers(Tensor& tensor, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(0, 99);
  T* out = static_cast<T*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) out[i] = static_cast<T>(dist(rng));
}

Tensor RandomTensor(const std::string& name, DataType type, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::Allocate(type, shape);
  switch (type) {
    case DataType::kFloat: FillUniform<float>(t, rng, -1, 1, [](double v) { return static_cast<float>(v); }); break;
    case DataType::kDouble: FillUniform<double>(t, rng, -1, 1, [](double v) { return v; }); break;
    case DataType::kFloat16:
      FillUniform<Float16>(t, rng, -1, 1, [](double v) { return ToFloat16(static_cast<float>(v)); });
      break;
    case DataType::kBFloat16:
      FillUniform<BFloat16>(t, rng, -1, 1, [](double v) { return ToBFloat16(static_cast<float>(v)); });
      break;
    case DataType::kInt8: FillIntegers<int8_t>(t, rng); break;
    case DataType::kInt16: FillIntegers<int16_t>(t, rng); break;
    case DataType::kInt32: FillIntegers<int32_t>(t, rng); break;
    case DataType::kInt64: FillIntegers<int64_t>(t, rng); break;
    case DataType::kUInt8: FillIntegers<uint8_t>(t, rng); break;
    case DataType::kUInt16: FillIntegers<uint16_t>(t, rng); break;
    case DataType::kUInt32: FillIntegers<uint32_t>(t, rng); break;
    case DataType::kUInt64: FillIntegers<uint64_t>(t, rng); break;
    case DataType::kBool: {
      std::bernoulli_distribution coin(0.5);
      bool* out = t.Data<bool>();
      for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = coin(rng);
      break;
    }
    case DataType::kString: {
      std::string* out = t.Data<std::string>();
      for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = "tessera";
      break;
    }
    default:
      Fail(ErrorCode::kInvalidArgument, "cannot make random values of type ", DataTypeName(type), " for input '",
           name, "'; pass it with --input ", name, "=file.npy");
  }
  return t;
}

}  // namespace

Shape ConcreteShape(const ValueInfo& info, const DimOverrides& dims) {
  if (!info.shape)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' has unknown rank; pass it with --input ", info.name,
         "=file.npy");
  std::vector<int64_t> concrete;
  for (const Dim& dim : *info.shape) {
    if (dim.is_concrete()) {
      concrete.push_back(dim.value);
      continue;
    }
    auto it = dims.find(dim.symbol);
    concrete.push_back(!dim.symbol.empty() && it != dims.end() ? it->second : 1);
  }
  return Shape(std::move(concrete));
}

Value RandomValue(const ValueInfo& info, const DimOverrides& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  if (info.type == DataType::kUndefined)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' has an unknown element type; pass it with --input ",
         info.name, "=file.npy");
  Tensor tensor = RandomTensor(info.name, info.type, ConcreteShape(info, dims), rng);
  if (info.kind == ValueInfo::Kind::kSequence) return Value(TensorSequence{tensor});
  return Value(tensor);
}

DimOverrides ParseDimOverrides(const ParsedArgs& args) {
  DimOverrides dims;
  for (const std::string& text : args.All("--dim")) {
    auto [symbol, value] = SplitAssignment(text, "--dim");
    try {
      size_t used = 0;
      const long long parsed = std::stoll(value, &used);
      if (used != value.size() || parsed < 0) throw std::invalid_argument(value);
      dims[symbol] = parsed;
    } catch (const std::exception&) {
      throw UsageError("--dim " + symbol + " needs a non-negative integer, got '" + value + "'");
    }
  }
  return dims;
}

Session::NamedValues BuildFeeds(const Session& session, const ParsedArgs& args) {
  std::map<std::string, std::string> files;
  for (const std::string& text : args.All("--input")) files.insert(SplitAssignment(text, "--input"));
  const DimOverrides dims = ParseDimOverrides(args);
  const uint32_t seed = static_cast<uint32_t>(args.IntOr("--seed", 0));

  Session::NamedValues feeds;
  for (size_t i = 0; i < session.inputs().size(); ++i) {
    const ValueInfo& info = session.inputs()[i];
    auto file = files.find(info.name);
    if (file != files.end()) {
      feeds.emplace_back(info.name, Value(ReadNpy(file->second)));
      files.erase(file);
    } else {
      feeds.emplace_back(info.name, RandomValue(info, dims, seed + static_cast<uint32_t>(i)));
    }
  }
  if (!files.empty()) {
    std::string names;
    for (const ValueInfo& info : session.inputs()) names += (names.empty() ? "" : ", ") + info.name;
    throw UsageError("--input '" + files.begin()->first + "' is not a model input (inputs: " + names + ")");
  }
  return feeds;
}

}  // namespace tessera::cli
