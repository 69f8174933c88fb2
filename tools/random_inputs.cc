#include "random_inputs.h"

#include <algorithm>
#include <random>
#include <set>

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
      Fail(ErrorCode::kInvalidArgument, "cannot make random values of type ", DataTypeName(type), " for input '", name,
           "'; pass it with --input ", name, "=file.npy");
  }
  return t;
}

int64_t ParseDimValue(const std::string& text, const std::string& option) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(option + " needs non-negative integers, got '" + text + "'");
}

void CheckNamesInputs(const Session& session, const std::vector<std::string>& names, const std::string& option) {
  std::set<std::string> inputs;
  std::string listed;
  for (const ValueInfo& info : session.inputs()) {
    inputs.insert(info.name);
    listed += (listed.empty() ? "" : ", ") + info.name;
  }
  for (const std::string& name : names)
    if (!inputs.count(name)) throw UsageError(option + " '" + name + "' is not a model input (inputs: " + listed + ")");
}

}  // namespace

Shape ConcreteShape(const ValueInfo& info, const ShapeChoices& choices) {
  auto whole = choices.shapes.find(info.name);
  if (whole != choices.shapes.end()) return whole->second;
  if (!info.shape)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' has unknown rank; pass it with --input ", info.name,
         "=file.npy or --shape ", info.name, "=D1xD2...");
  std::vector<int64_t> concrete;
  for (const Dim& dim : *info.shape) {
    if (dim.is_concrete()) {
      concrete.push_back(dim.value);
      continue;
    }
    auto it = choices.dims.find(dim.symbol);
    concrete.push_back(!dim.symbol.empty() && it != choices.dims.end() ? it->second : 1);
  }
  return Shape(std::move(concrete));
}

Value RandomValue(const ValueInfo& info, const ShapeChoices& choices, uint32_t seed) {
  std::mt19937 rng(seed);
  if (info.type == DataType::kUndefined)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' has an unknown element type; pass it with --input ",
         info.name, "=file.npy");
  Tensor tensor = RandomTensor(info.name, info.type, ConcreteShape(info, choices), rng);
  if (info.kind == ValueInfo::Kind::kSequence) return Value(TensorSequence{tensor});
  return Value(tensor);
}

ShapeChoices ParseShapeChoices(const ParsedArgs& args) {
  ShapeChoices choices;
  for (const std::string& text : args.All("--dim")) {
    auto [symbol, value] = SplitAssignment(text, "--dim");
    choices.dims[symbol] = ParseDimValue(value, "--dim " + symbol);
  }
  for (const std::string& text : args.All("--shape")) {
    auto [name, dims_text] = SplitAssignment(text, "--shape");
    std::vector<int64_t> dims;
    size_t begin = 0;
    while (begin <= dims_text.size()) {
      const size_t end = std::min(dims_text.find('x', begin), dims_text.size());
      dims.push_back(ParseDimValue(dims_text.substr(begin, end - begin), "--shape " + name));
      begin = end + 1;
    }
    choices.shapes[name] = Shape(std::move(dims));
  }
  return choices;
}

Session::NamedValues BuildFeeds(const Session& session, const ParsedArgs& args, const ShapeChoices& defaults) {
  std::map<std::string, std::string> files;
  std::vector<std::string> named;
  for (const std::string& text : args.All("--input")) {
    files.insert(SplitAssignment(text, "--input"));
    named.push_back(SplitAssignment(text, "--input").first);
  }
  ShapeChoices choices = ParseShapeChoices(args);
  for (const auto& [name, shape] : choices.shapes) named.push_back(name);
  CheckNamesInputs(session, named, "--input/--shape");
  choices.dims.insert(defaults.dims.begin(), defaults.dims.end());  // keeps command-line values
  choices.shapes.insert(defaults.shapes.begin(), defaults.shapes.end());
  const uint32_t seed = static_cast<uint32_t>(args.IntOr("--seed", 0));

  Session::NamedValues feeds;
  for (size_t i = 0; i < session.inputs().size(); ++i) {
    const ValueInfo& info = session.inputs()[i];
    auto file = files.find(info.name);
    if (file != files.end()) {
      feeds.emplace_back(info.name, Value(ReadNpy(file->second)));
    } else {
      feeds.emplace_back(info.name, RandomValue(info, choices, seed + static_cast<uint32_t>(i)));
    }
  }
  return feeds;
}

}  // namespace tessera::cli
