#include "tensor_proto_io.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::conformance {
namespace {

// Copies `values` (a repeated proto field) into the tensor's elements, converting each with `convert`.
template <typename T, typename Field, typename Convert>
void CopyTypedField(const Field& values, Tensor& tensor, const std::string& label, Convert convert) {
  if (static_cast<int64_t>(values.size()) != tensor.NumElements())
    Fail(ErrorCode::kInvalidModel, label, ": ", values.size(), " values for shape ", tensor.shape().ToString());
  T* out = static_cast<T*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) out[i] = convert(values[static_cast<int>(i)]);
}

template <typename T, typename Field>
void CopyCast(const Field& values, Tensor& tensor, const std::string& label) {
  CopyTypedField<T>(values, tensor, label, [](auto v) { return static_cast<T>(v); });
}

// Complex numbers are stored as interleaved (real, imaginary) pairs of the component type.
template <typename T, typename Field>
void CopyComplex(const Field& values, Tensor& tensor, const std::string& label) {
  if (static_cast<int64_t>(values.size()) != 2 * tensor.NumElements())
    Fail(ErrorCode::kInvalidModel, label, ": ", values.size(), " components for complex shape ",
         tensor.shape().ToString());
  T* out = static_cast<T*>(tensor.raw_data());
  for (int i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

void CopyRawData(const onnx::TensorProto& proto, Tensor& tensor, const std::string& label) {
  if (tensor.type() == DataType::kString) Fail(ErrorCode::kInvalidModel, label, ": string tensor with raw_data");
  if (proto.raw_data().size() != tensor.SizeInBytes())
    Fail(ErrorCode::kInvalidModel, label, ": raw_data has ", proto.raw_data().size(), " bytes, shape ",
         tensor.shape().ToString(), " of ", DataTypeName(tensor.type()), " needs ", tensor.SizeInBytes());
  if (tensor.SizeInBytes() > 0) std::memcpy(tensor.raw_data(), proto.raw_data().data(), tensor.SizeInBytes());
}

void CopyTypedData(const onnx::TensorProto& proto, Tensor& tensor, const std::string& label) {
  switch (tensor.type()) {
    case DataType::kFloat: return CopyCast<float>(proto.float_data(), tensor, label);
    case DataType::kDouble: return CopyCast<double>(proto.double_data(), tensor, label);
    case DataType::kInt64: return CopyCast<int64_t>(proto.int64_data(), tensor, label);
    case DataType::kInt32: return CopyCast<int32_t>(proto.int32_data(), tensor, label);
    case DataType::kInt16: return CopyCast<int16_t>(proto.int32_data(), tensor, label);
    case DataType::kInt8: return CopyCast<int8_t>(proto.int32_data(), tensor, label);
    case DataType::kUInt16: return CopyCast<uint16_t>(proto.int32_data(), tensor, label);
    case DataType::kUInt8: return CopyCast<uint8_t>(proto.int32_data(), tensor, label);
    case DataType::kBool:
      return CopyTypedField<bool>(proto.int32_data(), tensor, label, [](int32_t v) { return v != 0; });
    case DataType::kUInt32: return CopyCast<uint32_t>(proto.uint64_data(), tensor, label);
    case DataType::kUInt64: return CopyCast<uint64_t>(proto.uint64_data(), tensor, label);
    case DataType::kFloat16:
      return CopyTypedField<Float16>(proto.int32_data(), tensor, label,
                                     [](int32_t v) { return Float16{static_cast<uint16_t>(v)}; });
    case DataType::kBFloat16:
      return CopyTypedField<BFloat16>(proto.int32_data(), tensor, label,
                                      [](int32_t v) { return BFloat16{static_cast<uint16_t>(v)}; });
    case DataType::kString:
      return CopyTypedField<std::string>(proto.string_data(), tensor, label, [](const std::string& s) { return s; });
    case DataType::kComplex64: return CopyComplex<float>(proto.float_data(), tensor, label);
    case DataType::kComplex128: return CopyComplex<double>(proto.double_data(), tensor, label);
    case DataType::kUndefined: break;
  }
  Fail(ErrorCode::kInvalidModel, label, ": tensor has no data type");
}

std::string LabelFor(const std::string& name, const std::string& fallback) { return name.empty() ? fallback : name; }

}  // namespace

Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& label) {
  if (!IsKnownDataType(proto.data_type()) || proto.data_type() == 0)
    Fail(ErrorCode::kInvalidModel, label, ": unknown tensor data type ", proto.data_type());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    Fail(ErrorCode::kInvalidModel, label, ": external tensor data is not supported in test data");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t dim : dims)
    if (dim < 0) Fail(ErrorCode::kInvalidModel, label, ": negative dimension ", dim);
  Tensor tensor = Tensor::Allocate(static_cast<DataType>(proto.data_type()), Shape(std::move(dims)));
  if (proto.has_raw_data()) {
    CopyRawData(proto, tensor, label);
  } else {
    CopyTypedData(proto, tensor, label);
  }
  return tensor;
}

Value ValueFromSequenceProto(const onnx::SequenceProto& proto, const std::string& label) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.tensor_values_size() == 0 &&
      proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    Fail(ErrorCode::kNotImplemented, label, ": only sequences of tensors are supported (elem_type ", proto.elem_type(),
         ")");
  TensorSequence sequence;
  for (int i = 0; i < proto.tensor_values_size(); ++i)
    sequence.push_back(TensorFromProto(proto.tensor_values(i), label + "[" + std::to_string(i) + "]"));
  return Value(std::move(sequence));
}

Value ValueFromOptionalProto(const onnx::OptionalProto& proto, const std::string& label) {
  if (proto.has_tensor_value()) return Value(TensorFromProto(proto.tensor_value(), label));
  if (proto.has_sequence_value()) return ValueFromSequenceProto(proto.sequence_value(), label);
  if (proto.elem_type() == onnx::OptionalProto::UNDEFINED) return Value();
  Fail(ErrorCode::kNotImplemented, label, ": optional of elem_type ", proto.elem_type(), " is not supported");
}

void ReadProtoFile(const std::filesystem::path& path, google::protobuf::MessageLite& message) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(ErrorCode::kIo, "cannot open '", path.string(), "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!message.ParseFromString(bytes.str()))
    Fail(ErrorCode::kInvalidModel, "'", path.string(), "' is not a valid ", message.GetTypeName());
}

Value ReadTestValue(const std::filesystem::path& path, const onnx::TypeProto& type) {
  const std::string fallback = path.filename().string();
  if (type.has_sequence_type()) {
    onnx::SequenceProto proto;
    ReadProtoFile(path, proto);
    return ValueFromSequenceProto(proto, LabelFor(proto.name(), fallback));
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto proto;
    ReadProtoFile(path, proto);
    return ValueFromOptionalProto(proto, LabelFor(proto.name(), fallback));
  }
  if (!type.has_tensor_type())
    Fail(ErrorCode::kNotImplemented, "'", path.string(), "': only tensor, sequence and optional values are supported");
  onnx::TensorProto proto;
  ReadProtoFile(path, proto);
  // numpy has no bfloat16: the ONNX generator stores bfloat16 test data as uint16 bit patterns.
  const int declared = type.tensor_type().elem_type();
  if (proto.data_type() == onnx::TensorProto::UINT16 && declared == onnx::TensorProto::BFLOAT16)
    proto.set_data_type(declared);
  return Value(TensorFromProto(proto, LabelFor(proto.name(), fallback)));
}

}  // namespace tessera::conformance
