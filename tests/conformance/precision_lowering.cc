#include "precision_lowering.h"

#include <cstring>

namespace tessera::conformance {
namespace {

constexpr int32_t kOnnxFloat = onnx::TensorProto::FLOAT;

int32_t OnnxType(DataType half) {
  return half == DataType::kFloat16 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::BFLOAT16;
}

uint16_t HalfBits(float v, DataType half) {
  return half == DataType::kFloat16 ? ToFloat16(v).bits : ToBFloat16(v).bits;
}

bool MentionsFloat(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: return type.tensor_type().elem_type() == kOnnxFloat;
    case onnx::TypeProto::kSequenceType: return MentionsFloat(type.sequence_type().elem_type());
    case onnx::TypeProto::kOptionalType: return MentionsFloat(type.optional_type().elem_type());
    default: return false;
  }
}

void LowerType(onnx::TypeProto& type, int32_t half) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      if (type.tensor_type().elem_type() == kOnnxFloat) type.mutable_tensor_type()->set_elem_type(half);
      break;
    case onnx::TypeProto::kSequenceType: LowerType(*type.mutable_sequence_type()->mutable_elem_type(), half); break;
    case onnx::TypeProto::kOptionalType: LowerType(*type.mutable_optional_type()->mutable_elem_type(), half); break;
    default: break;
  }
}

// A float32 TensorProto (float_data or raw_data) rewritten as `half` in raw_data.
void LowerTensorProto(onnx::TensorProto& t, DataType half) {
  if (t.data_type() != kOnnxFloat) return;
  std::vector<float> values;
  if (t.has_raw_data()) {
    values.resize(t.raw_data().size() / sizeof(float));
    std::memcpy(values.data(), t.raw_data().data(), values.size() * sizeof(float));
  } else {
    values.assign(t.float_data().begin(), t.float_data().end());
  }
  std::string raw(values.size() * sizeof(uint16_t), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = HalfBits(values[i], half);
    std::memcpy(raw.data() + i * sizeof(uint16_t), &bits, sizeof(bits));
  }
  t.clear_float_data();
  t.set_raw_data(std::move(raw));
  t.set_data_type(OnnxType(half));
}

void LowerGraph(onnx::GraphProto& graph, DataType half);

void LowerNode(onnx::NodeProto& node, DataType half) {
  const int32_t half_type = OnnxType(half);
  for (onnx::AttributeProto& a : *node.mutable_attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::TENSOR: LowerTensorProto(*a.mutable_t(), half); break;
      case onnx::AttributeProto::TENSORS:
        for (onnx::TensorProto& t : *a.mutable_tensors()) LowerTensorProto(t, half);
        break;
      case onnx::AttributeProto::GRAPH: LowerGraph(*a.mutable_g(), half); break;
      case onnx::AttributeProto::GRAPHS:
        for (onnx::GraphProto& g : *a.mutable_graphs()) LowerGraph(g, half);
        break;
      case onnx::AttributeProto::TYPE_PROTO: LowerType(*a.mutable_tp(), half_type); break;
      case onnx::AttributeProto::INT:
        // Element-type attributes: Cast/CastLike targets, dtype of generators (RandomNormal, EyeLike, ...).
        if ((a.name() == "to" || a.name() == "dtype" || a.name() == "output_dtype") && a.i() == kOnnxFloat)
          a.set_i(half_type);
        break;
      default: break;
    }
  }
  // Generators whose output type defaults to float32 when the attribute is absent.
  auto has_attribute = [&node](const std::string& name) {
    for (const auto& a : node.attribute())
      if (a.name() == name) return true;
    return false;
  };
  if ((node.op_type() == "RandomNormal" || node.op_type() == "RandomUniform") && !has_attribute("dtype")) {
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name("dtype");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(half_type);
  }
  if (node.op_type() == "ConstantOfShape" && !has_attribute("value")) {
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(kOnnxFloat);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_float_data(0.0f);
    LowerTensorProto(*a->mutable_t(), half);
  }
  // Constant's float-valued forms produce float32: give it the lowered tensor instead.
  if (node.op_type() == "Constant") {
    for (int i = 0; i < node.attribute_size(); ++i) {
      onnx::AttributeProto& a = *node.mutable_attribute(i);
      if (a.name() != "value_float" && a.name() != "value_floats") continue;
      onnx::TensorProto t;
      t.set_data_type(kOnnxFloat);
      if (a.name() == "value_float") {
        t.add_float_data(a.f());
      } else {
        t.add_dims(a.floats_size());
        for (float f : a.floats()) t.add_float_data(f);
      }
      LowerTensorProto(t, half);
      a.Clear();
      a.set_name("value");
      a.set_type(onnx::AttributeProto::TENSOR);
      *a.mutable_t() = std::move(t);
    }
  }
}

void LowerGraph(onnx::GraphProto& graph, DataType half) {
  const int32_t half_type = OnnxType(half);
  for (auto& v : *graph.mutable_input()) LowerType(*v.mutable_type(), half_type);
  for (auto& v : *graph.mutable_output()) LowerType(*v.mutable_type(), half_type);
  for (auto& v : *graph.mutable_value_info()) LowerType(*v.mutable_type(), half_type);
  for (auto& t : *graph.mutable_initializer()) LowerTensorProto(t, half);
  for (auto& n : *graph.mutable_node()) LowerNode(n, half);
}

Tensor Convert(const Tensor& t, DataType to) {
  Tensor out = Tensor::Allocate(to, t.shape());
  const int64_t n = t.NumElements();
  if (t.type() == DataType::kFloat) {
    const float* in = t.Data<float>();
    for (int64_t i = 0; i < n; ++i) {
      if (to == DataType::kFloat16) out.Data<Float16>()[i] = ToFloat16(in[i]);
      else out.Data<BFloat16>()[i] = ToBFloat16(in[i]);
    }
  } else {
    float* o = out.Data<float>();
    for (int64_t i = 0; i < n; ++i)
      o[i] = t.type() == DataType::kFloat16 ? ToFloat(t.Data<Float16>()[i]) : ToFloat(t.Data<BFloat16>()[i]);
  }
  return out;
}

template <typename Fn>
Value MapTensors(const Value& value, Fn&& fn) {
  if (value.is_tensor()) return fn(value.tensor());
  if (value.is_sequence()) {
    TensorSequence out;
    for (const Tensor& t : value.sequence()) out.push_back(fn(t));
    return Value(std::move(out));
  }
  return value;
}

}  // namespace

bool LowerModelPrecision(onnx::ModelProto& model, DataType half) {
  bool any = false;
  for (const auto& v : model.graph().input()) any |= MentionsFloat(v.type());
  for (const auto& v : model.graph().output()) any |= MentionsFloat(v.type());
  if (!any) return false;
  LowerGraph(*model.mutable_graph(), half);
  return true;
}

Value LowerValue(const Value& value, DataType half) {
  return MapTensors(value, [half](const Tensor& t) { return t.type() == DataType::kFloat ? Convert(t, half) : t; });
}

Value WidenValue(const Value& value) {
  return MapTensors(value, [](const Tensor& t) {
    return t.type() == DataType::kFloat16 || t.type() == DataType::kBFloat16 ? Convert(t, DataType::kFloat) : t;
  });
}

Tolerance LoweredTolerance(DataType half) {
  // float16 keeps 11 significant bits (relative rounding 4.9e-4), bfloat16 8 (3.9e-3); inputs, weights and
  // results are each rounded once and kernels round between internal steps, so allow about 20 roundings.
  return half == DataType::kFloat16 ? Tolerance{1e-2, 1e-3} : Tolerance{8e-2, 1e-2};
}

}  // namespace tessera::conformance
