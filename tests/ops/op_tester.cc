#include "ops/op_tester.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML=1)

#include <cmath>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "test_env.h"

namespace tessera::test {
namespace {

// Calls fn(T{}) for the C++ element type of `type`.
template <typename Fn>
void VisitElementType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat: return fn(float{});
    case DataType::kDouble: return fn(double{});
    case DataType::kInt8: return fn(int8_t{});
    case DataType::kInt16: return fn(int16_t{});
    case DataType::kInt32: return fn(int32_t{});
    case DataType::kInt64: return fn(int64_t{});
    case DataType::kUInt8: return fn(uint8_t{});
    case DataType::kUInt16: return fn(uint16_t{});
    case DataType::kUInt32: return fn(uint32_t{});
    case DataType::kUInt64: return fn(uint64_t{});
    case DataType::kBool: return fn(bool{});
    case DataType::kFloat16: return fn(Float16{});
    case DataType::kBFloat16: return fn(BFloat16{});
    case DataType::kString: return fn(std::string{});
    default: Fail(ErrorCode::kNotImplemented, "op tester: unsupported element type ", DataTypeName(type));
  }
}

// Reproducible across standard libraries (std::uniform_real_distribution is not).
class UniformSource {
 public:
  explicit UniformSource(uint32_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  double Next() {  // in [0, 1)
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<double>(state_ >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return ToFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return ToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::to_string(std::lround(v));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::lround(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
double ToDouble(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return ToFloat(v);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
std::string ElementToString(const T& v) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, std::string>) {
    os << '"' << v << '"';
  } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    os.precision(9);
    os << ToDouble(v);
  } else {
    os << +v;
  }
  return os.str();
}

std::string IndexString(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.rank());
  for (size_t d = shape.rank(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream os;
  os << '[';
  for (size_t d = 0; d < index.size(); ++d) os << (d ? "," : "") << index[d];
  os << ']';
  return os.str();
}

template <typename T>
bool ElementsMatch(const T& e, const T& a, double absolute, double relative) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    const double de = ToDouble(e), da = ToDouble(a);
    if (std::isnan(de) || std::isnan(da)) return std::isnan(de) && std::isnan(da);
    if (de == da) return true;  // also equal infinities
    if (std::isinf(de) || std::isinf(da)) return false;
    return std::fabs(da - de) <= absolute + relative * std::fabs(de);
  } else {
    return e == a;
  }
}

template <typename T>
std::string CompareElements(const Tensor& expected, const Tensor& actual, double absolute, double relative) {
  constexpr int kMaxReported = 5;
  const T* e = expected.Data<T>();
  const T* a = actual.Data<T>();
  std::ostringstream os;
  int64_t mismatches = 0;
  const int64_t count = expected.NumElements();
  for (int64_t i = 0; i < count; ++i) {
    if (ElementsMatch(e[i], a[i], absolute, relative)) continue;
    if (mismatches++ < kMaxReported) {
      os << "\n  at " << IndexString(i, expected.shape()) << ": expected " << ElementToString(e[i]) << ", got "
         << ElementToString(a[i]);
    }
  }
  if (mismatches == 0) return "";
  std::ostringstream head;
  head << mismatches << " of " << count << " elements differ (tolerance abs " << absolute << ", rel "
       << relative << "):" << os.str();
  return head.str();
}

onnx::TensorProto ToTensorProto(const std::string& name, const Tensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.type()));
  for (int64_t d : tensor.shape().dims()) proto.add_dims(d);
  if (tensor.type() == DataType::kString) {
    for (const std::string& s : tensor.Span<std::string>()) proto.add_string_data(s);
  } else {
    proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.SizeInBytes()));
  }
  return proto;
}

void SetTensorType(onnx::ValueInfoProto& info, DataType type, const Shape* shape) {
  onnx::TypeProto_Tensor* tensor_type = info.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(type));
  if (shape == nullptr) return;
  onnx::TensorShapeProto* shape_proto = tensor_type->mutable_shape();
  for (int64_t d : shape->dims()) shape_proto->add_dim()->set_dim_value(d);
}

// Tolerances used when the test does not set any, by the element type compared.
std::pair<double, double> DefaultTolerance(DataType type) {
  switch (type) {
    case DataType::kDouble: return {1e-10, 1e-9};
    case DataType::kFloat16: return {1e-3, 2e-3};
    case DataType::kBFloat16: return {1e-2, 1e-2};
    default: return {1e-5, 1e-4};
  }
}

}  // namespace

Tensor RandomTensor(DataType type, const Shape& shape, uint32_t seed, double lo, double hi) {
  Tensor tensor = Tensor::Allocate(type, shape);
  UniformSource source(seed);
  VisitElementType(type, [&](auto tag) {
    using T = decltype(tag);
    T* data = tensor.Data<T>();
    const int64_t count = tensor.NumElements();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = source.Next() < 0.5;
      } else {
        data[i] = FromDouble<T>(lo + (hi - lo) * source.Next());
      }
    }
  });
  return tensor;
}

std::string CompareTensors(const Tensor& expected, const Tensor& actual, double absolute, double relative) {
  if (!actual.defined()) return "the output is missing";
  if (expected.type() != actual.type()) {
    return std::string("type differs: expected ") + DataTypeName(expected.type()) + ", got " +
           DataTypeName(actual.type());
  }
  if (expected.shape() != actual.shape()) {
    return "shape differs: expected " + expected.shape().ToString() + ", got " + actual.shape().ToString();
  }
  if (!actual.memory_info().IsHostReadable()) return "the output is not in host memory: " + actual.Describe();
  std::string result;
  VisitElementType(expected.type(), [&](auto tag) {
    result = CompareElements<decltype(tag)>(expected, actual, absolute, relative);
  });
  return result;
}

struct OpTester::Impl {
  struct InputSpec {
    std::string name;  // empty: omitted optional input
    Tensor value;
    bool constant = false;
  };
  struct OutputSpec {
    std::string name;
    std::optional<Tensor> expected;
  };

  std::string op_type, domain;
  int opset = 0;
  std::vector<onnx::AttributeProto> attributes;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::optional<std::pair<double, double>> tolerance;
  std::optional<std::string> expected_failure;

  onnx::AttributeProto& NewAttribute(const std::string& name, onnx::AttributeProto_AttributeType type) {
    onnx::AttributeProto& attribute = attributes.emplace_back();
    attribute.set_name(name);
    attribute.set_type(type);
    return attribute;
  }

  std::string Label(const std::string& ep) const { return op_type + " (opset " + std::to_string(opset) + ") on " + ep; }

  std::pair<double, double> ToleranceFor(DataType type) const { return tolerance ? *tolerance : DefaultTolerance(type); }

  onnx::ModelProto BuildModel() const;
  std::vector<Tensor> Execute(const std::string& ep) const;
  void CheckOutputs(const std::string& ep, const std::vector<Tensor>& actual) const;
};

onnx::ModelProto OpTester::Impl::BuildModel() const {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("tessera-op-tester");
  onnx::OperatorSetIdProto* opset_import = model.add_opset_import();
  opset_import->set_domain(domain);
  opset_import->set_version(opset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(op_type + "_test");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op_type);
  node->set_domain(domain);
  node->set_name(op_type + "_node");
  for (const onnx::AttributeProto& attribute : attributes) *node->add_attribute() = attribute;
  for (const InputSpec& input : inputs) {
    node->add_input(input.name);
    if (input.name.empty()) continue;
    if (input.constant) {
      *graph->add_initializer() = ToTensorProto(input.name, input.value);
    } else {
      onnx::ValueInfoProto* info = graph->add_input();
      info->set_name(input.name);
      SetTensorType(*info, input.value.type(), &input.value.shape());
    }
  }
  for (const OutputSpec& output : outputs) {
    node->add_output(output.name);
    if (output.name.empty()) continue;  // an optional output left out
    onnx::ValueInfoProto* info = graph->add_output();
    info->set_name(output.name);
    if (output.expected) SetTensorType(*info, output.expected->type(), nullptr);
  }
  return model;
}

std::vector<Tensor> OpTester::Impl::Execute(const std::string& ep) const {
  const std::string bytes = BuildModel().SerializeAsString();
  Session session(TestEnv(), bytes.data(), bytes.size(), OptionsFor(ep));
  Session::NamedValues feeds;
  for (const InputSpec& input : inputs) {
    if (!input.name.empty() && !input.constant) feeds.emplace_back(input.name, input.value);
  }
  std::vector<std::string> names;
  for (const OutputSpec& output : outputs)
    if (!output.name.empty()) names.push_back(output.name);
  std::vector<Value> produced = session.Run(feeds, names);
  std::vector<Tensor> result;  // one per output spec; an undefined tensor for an omitted output
  size_t next = 0;
  for (const OutputSpec& output : outputs)
    result.push_back(output.name.empty() || next >= produced.size() ? Tensor() : produced[next++].tensor());
  return result;
}

void OpTester::Impl::CheckOutputs(const std::string& ep, const std::vector<Tensor>& actual) const {
  if (actual.size() != outputs.size()) {
    ADD_FAILURE() << Label(ep) << ": expected " << outputs.size() << " outputs, got " << actual.size();
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].expected) continue;
    const Tensor& expected = *outputs[i].expected;
    const auto [absolute, relative] = ToleranceFor(expected.type());
    const std::string difference = CompareTensors(expected, actual[i], absolute, relative);
    if (!difference.empty()) ADD_FAILURE() << Label(ep) << ", output '" << outputs[i].name << "': " << difference;
  }
}

OpTester::OpTester(std::string op_type, int opset, std::string domain) : impl_(std::make_shared<Impl>()) {
  impl_->op_type = std::move(op_type);
  impl_->opset = opset;
  impl_->domain = std::move(domain);
}

OpTester& OpTester::Attr(const std::string& name, int64_t value) {
  impl_->NewAttribute(name, onnx::AttributeProto::INT).set_i(value);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, float value) {
  impl_->NewAttribute(name, onnx::AttributeProto::FLOAT).set_f(value);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, const std::string& value) {
  impl_->NewAttribute(name, onnx::AttributeProto::STRING).set_s(value);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& attribute = impl_->NewAttribute(name, onnx::AttributeProto::INTS);
  for (int64_t v : values) attribute.add_ints(v);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto& attribute = impl_->NewAttribute(name, onnx::AttributeProto::FLOATS);
  for (float v : values) attribute.add_floats(v);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, const std::vector<std::string>& values) {
  onnx::AttributeProto& attribute = impl_->NewAttribute(name, onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) attribute.add_strings(v);
  return *this;
}

OpTester& OpTester::Attr(const std::string& name, const Tensor& value) {
  *impl_->NewAttribute(name, onnx::AttributeProto::TENSOR).mutable_t() = ToTensorProto("", value);
  return *this;
}

OpTester& OpTester::Input(const std::string& name, const Tensor& value, bool constant) {
  impl_->inputs.push_back({name, value, constant});
  return *this;
}

OpTester& OpTester::OmittedInput() {
  impl_->inputs.push_back({"", Tensor(), false});
  return *this;
}

OpTester& OpTester::Output(const std::string& name, const Tensor& expected) {
  impl_->outputs.push_back({name, expected});
  return *this;
}

OpTester& OpTester::OmittedOutput() {
  impl_->outputs.push_back({"", std::nullopt});
  return *this;
}

OpTester& OpTester::OutputName(const std::string& name) {
  impl_->outputs.push_back({name, std::nullopt});
  return *this;
}

OpTester& OpTester::Tolerance(double absolute, double relative) {
  impl_->tolerance = std::make_pair(absolute, relative);
  return *this;
}

OpTester& OpTester::ExpectFailure(const std::string& message_part) {
  impl_->expected_failure = message_part;
  return *this;
}

void OpTester::Run(const std::vector<std::string>& eps) {
  for (const std::string& ep : eps) {
    std::vector<Tensor> actual;
    try {
      actual = impl_->Execute(ep);
    } catch (const std::exception& e) {
      const std::string message = e.what();
      if (!impl_->expected_failure) {
        ADD_FAILURE() << impl_->Label(ep) << " failed: " << message;
      } else if (message.find(*impl_->expected_failure) == std::string::npos) {
        ADD_FAILURE() << impl_->Label(ep) << " failed as expected, but the message does not contain '"
                      << *impl_->expected_failure << "': " << message;
      }
      continue;
    }
    if (impl_->expected_failure) {
      ADD_FAILURE() << impl_->Label(ep) << " succeeded, but a failure containing '" << *impl_->expected_failure
                    << "' was expected";
      continue;
    }
    impl_->CheckOutputs(ep, actual);
  }
}

void OpTester::CompareWithCpu(const std::vector<std::string>& eps) {
  std::vector<Tensor> reference;
  try {
    reference = impl_->Execute("cpu");
  } catch (const std::exception& e) {
    ADD_FAILURE() << impl_->Label("cpu") << " failed: " << e.what();
    return;
  }
  for (const std::string& ep : eps) {
    std::vector<Tensor> actual;
    try {
      actual = impl_->Execute(ep);
    } catch (const std::exception& e) {
      ADD_FAILURE() << impl_->Label(ep) << " failed: " << e.what();
      continue;
    }
    if (actual.size() != reference.size()) {
      ADD_FAILURE() << impl_->Label(ep) << ": " << actual.size() << " outputs, but the CPU EP gave " << reference.size();
      continue;
    }
    for (size_t i = 0; i < reference.size(); ++i) {
      if (impl_->outputs[i].name.empty()) continue;
      const auto [absolute, relative] = impl_->ToleranceFor(reference[i].type());
      const std::string difference = CompareTensors(reference[i], actual[i], absolute, relative);
      if (!difference.empty()) {
        ADD_FAILURE() << impl_->Label(ep) << ", output '" << impl_->outputs[i].name
                      << "' differs from the CPU EP: " << difference;
      }
    }
  }
}

std::vector<Tensor> OpTester::RunOn(const std::string& ep) { return impl_->Execute(ep); }

std::string OpTester::SerializedModel() const { return impl_->BuildModel().SerializeAsString(); }

}  // namespace tessera::test
