// numpy <-> Tensor conversion. Numeric arrays are shared without copies whenever their layout allows;
// string tensors (std::string on the host) are always converted element by element.
#include "bindings.h"

namespace tessera::python {

namespace {

bool IsStringKind(char kind) { return kind == 'U' || kind == 'S' || kind == 'O'; }

py::module_ Numpy() { return py::module_::import("numpy"); }

Shape ShapeOfArray(const py::array& array) {
  std::vector<int64_t> dims(static_cast<size_t>(array.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(array.shape(static_cast<py::ssize_t>(i)));
  return Shape(std::move(dims));
}

Tensor StringTensorFromArray(const py::array& array) {
  Tensor tensor = Tensor::Allocate(DataType::kString, ShapeOfArray(array));
  std::string* out = tensor.Data<std::string>();
  const py::list items = array.attr("ravel")().attr("tolist")();
  for (size_t i = 0; i < items.size(); ++i) {
    const py::handle item = items[i];
    out[i] = py::isinstance<py::bytes>(item) ? item.cast<std::string>() : py::str(item).cast<std::string>();
  }
  return tensor;
}

py::array StringArrayFromTensor(const Tensor& tensor) {
  const std::string* strings = tensor.Data<std::string>();
  py::list items;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    PyObject* text = PyUnicode_DecodeUTF8(strings[i].data(), static_cast<py::ssize_t>(strings[i].size()), "strict");
    if (text == nullptr) {  // not UTF-8: hand back the bytes
      PyErr_Clear();
      items.append(py::bytes(strings[i]));
    } else {
      items.append(py::reinterpret_steal<py::object>(text));
    }
  }
  py::array flat = Numpy().attr("array")(items, py::arg("dtype") = py::dtype("O"));
  return flat.attr("reshape")(py::cast(tensor.shape().dims()));
}

}  // namespace

DataType DataTypeFromDtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (IsStringKind(kind)) return DataType::kString;
  switch (kind) {
    case 'b': return DataType::kBool;
    case 'f':
      if (size == 2) return DataType::kFloat16;
      if (size == 4) return DataType::kFloat;
      if (size == 8) return DataType::kDouble;
      break;
    case 'i':
      if (size == 1) return DataType::kInt8;
      if (size == 2) return DataType::kInt16;
      if (size == 4) return DataType::kInt32;
      if (size == 8) return DataType::kInt64;
      break;
    case 'u':
      if (size == 1) return DataType::kUInt8;
      if (size == 2) return DataType::kUInt16;
      if (size == 4) return DataType::kUInt32;
      if (size == 8) return DataType::kUInt64;
      break;
    case 'c':
      if (size == 8) return DataType::kComplex64;
      if (size == 16) return DataType::kComplex128;
      break;
    default: break;
  }
  Fail(ErrorCode::kInvalidArgument, "numpy dtype '", py::str(static_cast<const py::handle&>(dtype)).cast<std::string>(), "' has no ONNX element type");
}

DataType DataTypeFromObject(const py::handle& obj) {
  if (py::isinstance<py::int_>(obj) && !py::isinstance<py::bool_>(obj)) {  // an ONNX element type (TensorProto)
    const long number = obj.cast<long>();
    if (number < 1 || number > static_cast<long>(DataType::kBFloat16) ||
        DataTypeName(static_cast<DataType>(number)) == std::string("undefined"))
      Fail(ErrorCode::kInvalidArgument, "unknown ONNX element type ", number);
    return static_cast<DataType>(number);
  }
  if (py::isinstance<py::str>(obj)) {  // "tensor(float)" as onnxruntime's type strings
    std::string text = obj.cast<std::string>();
    if (text.starts_with("tensor(") && text.ends_with(")")) {
      text = text.substr(7, text.size() - 8);
      for (int t = 1; t <= static_cast<int>(DataType::kBFloat16); ++t)
        if (text == DataTypeName(static_cast<DataType>(t))) return static_cast<DataType>(t);
      Fail(ErrorCode::kInvalidArgument, "unknown element type '", obj.cast<std::string>(), "'");
    }
  }
  return DataTypeFromDtype(py::dtype::from_args(py::reinterpret_borrow<py::object>(obj)));
}

py::dtype DtypeFromDataType(DataType type) {
  switch (type) {
    case DataType::kFloat: return py::dtype("float32");
    case DataType::kDouble: return py::dtype("float64");
    case DataType::kFloat16: return py::dtype("float16");
    case DataType::kInt8: return py::dtype("int8");
    case DataType::kInt16: return py::dtype("int16");
    case DataType::kInt32: return py::dtype("int32");
    case DataType::kInt64: return py::dtype("int64");
    case DataType::kUInt8: return py::dtype("uint8");
    case DataType::kUInt16: return py::dtype("uint16");
    case DataType::kUInt32: return py::dtype("uint32");
    case DataType::kUInt64: return py::dtype("uint64");
    case DataType::kBool: return py::dtype("bool");
    case DataType::kComplex64: return py::dtype("complex64");
    case DataType::kComplex128: return py::dtype("complex128");
    case DataType::kString: return py::dtype("O");
    default: break;
  }
  Fail(ErrorCode::kNotImplemented, "element type ", DataTypeName(type), " has no numpy dtype");
}

Shape ShapeFromSequence(const py::handle& seq) {
  std::vector<int64_t> dims;
  for (const py::handle d : seq) {
    const int64_t dim = d.cast<int64_t>();
    if (dim < 0) Fail(ErrorCode::kInvalidArgument, "shape dimensions must be >= 0, got ", dim);
    dims.push_back(dim);
  }
  return Shape(std::move(dims));
}

Tensor HostTensorFromArray(const py::handle& obj, py::object& keepalive) {
  py::array array = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                                   : py::array(Numpy().attr("asarray")(obj));
  if (IsStringKind(array.dtype().kind())) return StringTensorFromArray(array);
  const DataType type = DataTypeFromDtype(array.dtype());
  const bool native_order = array.dtype().attr("isnative").cast<bool>();
  const bool usable = native_order && (array.flags() & py::array::c_style) &&
                      py::cast<bool>(array.attr("flags").attr("aligned"));
  if (!usable) {
    const py::object native = array.dtype().attr("newbyteorder")("=");
    array = Numpy().attr("require")(array, native, py::make_tuple("C", "A"));
  }
  keepalive = array;
  const Shape shape = ShapeOfArray(array);
  const size_t bytes = static_cast<size_t>(shape.NumElements()) * SizeOf(type);
  return Tensor::Wrap(type, shape, const_cast<void*>(array.data()), bytes, MemoryInfo::Host());
}

py::array ArrayViewOfHostTensor(const Tensor& tensor, py::handle base) {
  if (tensor.type() == DataType::kString) return StringArrayFromTensor(tensor);
  py::object owner = py::reinterpret_borrow<py::object>(base);
  if (!owner) owner = py::capsule(new Tensor(tensor), [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(DtypeFromDataType(tensor.type()), tensor.shape().dims(), tensor.raw_data(), owner);
}

py::array ArrayFromTensor(Runtime& runtime, const Tensor& tensor) {
  if (tensor.memory_info().IsHostReadable()) return ArrayViewOfHostTensor(tensor);
  Tensor host = Tensor::Allocate(tensor.type(), tensor.shape());
  {
    py::gil_scoped_release release;
    runtime.Copy(tensor, host);
  }
  return ArrayViewOfHostTensor(host);
}

}  // namespace tessera::python
