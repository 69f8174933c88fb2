// DLPack exchange: OrtValue.__dlpack__ / __dlpack_device__ (producer) and tessera.from_dlpack
// (consumer), sharing memory with NumPy, PyTorch, CuPy and any other DLPack library.
//
// The structs below follow the public DLPack specification (dlpack.h, ABI of v0.x): a producer
// hands out a PyCapsule named "dltensor" holding a DLManagedTensor; the consumer renames it to
// "used_dltensor" and calls the tensor's deleter once it no longer needs the memory. Devices:
// host memory is kDLCPU, CUDA memory kDLCUDA, CUDA pinned memory kDLCUDAHost, and other devices (the
// simulated testing device) kDLExtDev with the device ordinal as id.
#include <numeric>

#include "bindings.h"

namespace tessera::python {

namespace {

enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLExtDev = 12 };
enum DLDataTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";
constexpr const char* kCudaEp = "CUDAExecutionProvider";

struct TypeCode {
  DataType type;
  DLDataType dl;
};
constexpr TypeCode kTypeCodes[] = {
    {DataType::kFloat, {kDLFloat, 32, 1}},   {DataType::kDouble, {kDLFloat, 64, 1}},
    {DataType::kFloat16, {kDLFloat, 16, 1}}, {DataType::kBFloat16, {kDLBfloat, 16, 1}},
    {DataType::kInt8, {kDLInt, 8, 1}},       {DataType::kInt16, {kDLInt, 16, 1}},
    {DataType::kInt32, {kDLInt, 32, 1}},     {DataType::kInt64, {kDLInt, 64, 1}},
    {DataType::kUInt8, {kDLUInt, 8, 1}},     {DataType::kUInt16, {kDLUInt, 16, 1}},
    {DataType::kUInt32, {kDLUInt, 32, 1}},   {DataType::kUInt64, {kDLUInt, 64, 1}},
    {DataType::kBool, {kDLBool, 8, 1}},      {DataType::kComplex64, {kDLComplex, 64, 1}},
    {DataType::kComplex128, {kDLComplex, 128, 1}},
};

DLDataType DlTypeOf(DataType type) {
  for (const TypeCode& c : kTypeCodes)
    if (c.type == type) return c.dl;
  Fail(ErrorCode::kInvalidArgument, "DLPack cannot describe element type ", DataTypeName(type));
}

DataType DataTypeOfDl(DLDataType dl) {
  if (dl.lanes != 1) Fail(ErrorCode::kInvalidArgument, "from_dlpack: vector element types (lanes ", dl.lanes, ") are not supported");
  for (const TypeCode& c : kTypeCodes)
    if (c.dl.code == dl.code && c.dl.bits == dl.bits) return c.type;
  Fail(ErrorCode::kInvalidArgument, "from_dlpack: unsupported DLPack type code ", int{dl.code}, " with ", int{dl.bits},
       " bits");
}

bool IsCudaMemory(Runtime& runtime, const MemoryInfo& info) {
  const EpDevice* owner = EpDeviceOwning(runtime, info);
  return owner != nullptr && owner->ep_name == kCudaEp;
}

DLDevice DlDeviceOf(Runtime& runtime, const MemoryInfo& info) {
  const auto id = static_cast<int32_t>(info.device_id);
  if (info.device_type == DeviceType::kCpu) return {kDLCPU, 0};
  const bool cuda = IsCudaMemory(runtime, info);
  if (info.memory_type == MemoryType::kHostAccessible) return {cuda ? kDLCUDAHost : kDLCPU, 0};
  return {cuda ? kDLCUDA : kDLExtDev, id};
}

MemoryInfo MemoryInfoOfDl(Runtime& runtime, DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return MemoryInfo::Host();
    case kDLCUDAHost: {
      const EpDevice* cuda = FindEpDevice(runtime, kCudaEp, 0);
      return cuda && cuda->host_accessible_memory ? *cuda->host_accessible_memory : MemoryInfo::Host();
    }
    case kDLCUDA: {
      if (const EpDevice* cuda = FindEpDevice(runtime, kCudaEp, static_cast<uint32_t>(device.device_id)))
        return cuda->device_memory;
      Fail(ErrorCode::kNotImplemented, "from_dlpack: the tensor is on CUDA device ", device.device_id,
           ", but no CUDA execution provider drives it (is libtessera_cuda.so registered?)");
    }
    case kDLExtDev:
      for (const EpDevice* d : runtime.env().GetEpDevices())
        if (!d->device_memory.IsHostReadable() && d->ep_name != kCudaEp &&
            d->device->ordinal == static_cast<uint32_t>(device.device_id))
          return d->device_memory;
      Fail(ErrorCode::kNotImplemented, "from_dlpack: no registered device matches kDLExtDev id ", device.device_id);
    default: break;
  }
  Fail(ErrorCode::kNotImplemented, "from_dlpack: unsupported DLPack device type ", device.device_type);
}

// ---- producer ---------------------------------------------------------------------------------------

// Owns what a DLManagedTensor handed to a consumer points at.
struct ExportContext {
  Tensor tensor;                  // shares the buffer
  PyObject* owner = nullptr;      // the OrtValue, when the tensor borrows memory it keeps alive
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

void DeleteExport(DLManagedTensor* managed) {
  auto* context = static_cast<ExportContext*>(managed->manager_ctx);
  if (context->owner != nullptr && Py_IsInitialized()) {
    py::gil_scoped_acquire gil;  // consumers may release the tensor from any thread
    Py_DECREF(context->owner);
  }
  delete context;
}

void DestroyUnconsumedCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // renamed by a consumer, which owns it now
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

py::capsule ToDlpack(const py::object& self_object) {
  const PyOrtValue& self = self_object.cast<const PyOrtValue&>();
  const Tensor& tensor = self.tensor();
  auto context = std::make_unique<ExportContext>();
  context->tensor = tensor;
  context->shape = tensor.shape().dims();
  context->strides.assign(context->shape.size(), 1);
  for (size_t i = context->shape.size(); i-- > 1;)
    context->strides[i - 1] = context->strides[i] * std::max<int64_t>(context->shape[i], 1);
  DLTensor& dl = context->managed.dl_tensor;
  dl.data = context->tensor.raw_data();
  dl.device = DlDeviceOf(*self.runtime, tensor.memory_info());
  dl.ndim = static_cast<int32_t>(context->shape.size());
  dl.dtype = DlTypeOf(tensor.type());
  dl.shape = context->shape.data();
  dl.strides = context->strides.data();
  dl.byte_offset = 0;
  context->managed.manager_ctx = context.get();
  context->managed.deleter = &DeleteExport;
  if (tensor.is_borrowed()) {
    context->owner = self_object.ptr();
    Py_INCREF(context->owner);
  }
  PyObject* capsule = PyCapsule_New(&context->managed, kCapsuleName, &DestroyUnconsumedCapsule);
  if (capsule == nullptr) {
    Py_XDECREF(context->owner);
    throw py::error_already_set();
  }
  context.release();  // owned by the capsule (or its consumer) from here on
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::tuple DlpackDevice(const PyOrtValue& self) {
  const DLDevice device = DlDeviceOf(*self.runtime, self.tensor().memory_info());
  return py::make_tuple(device.device_type, device.device_id);
}

// ---- consumer ---------------------------------------------------------------------------------------

// Zero-size tensors hold no element: any strides describe them (producers give zeros or placeholders).
bool IsCompactRowMajor(const DLTensor& dl) {
  if (dl.strides == nullptr) return true;
  for (int32_t i = 0; i < dl.ndim; ++i)
    if (dl.shape[i] == 0) return true;
  int64_t expected = 1;
  for (int32_t i = dl.ndim; i-- > 0;) {
    if (dl.shape[i] != 1 && dl.strides[i] != expected) return false;
    expected *= dl.shape[i];
  }
  return true;
}

py::object FromDlpack(const py::object& source, bool is_bool_tensor) {
  py::object capsule = source;
  if (!PyCapsule_CheckExact(source.ptr())) {
    if (!py::hasattr(source, "__dlpack__"))
      throw py::type_error("from_dlpack expects an object with __dlpack__ or a DLPack capsule");
    capsule = source.attr("__dlpack__")();
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (managed == nullptr) {
    PyErr_Clear();
    Fail(ErrorCode::kInvalidArgument, "from_dlpack: the capsule is not an unconsumed \"dltensor\"");
  }
  const DLTensor& dl = managed->dl_tensor;
  std::shared_ptr<Runtime> runtime = GetRuntime();
  if (!IsCompactRowMajor(dl))
    Fail(ErrorCode::kInvalidArgument, "from_dlpack: only contiguous row-major tensors can be shared (make the source "
                                      "contiguous first)");
  DataType type = DataTypeOfDl(dl.dtype);
  if (is_bool_tensor && type == DataType::kUInt8) type = DataType::kBool;
  const MemoryInfo where = MemoryInfoOfDl(*runtime, dl.device);
  const Shape shape(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim));
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  const Tensor tensor = Tensor::Wrap(type, shape, data, static_cast<size_t>(shape.NumElements()) * SizeOf(type), where);
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  py::capsule owner(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter != nullptr) m->deleter(m);
  });
  return py::cast(PyOrtValue{runtime, Value(tensor), owner});
}

}  // namespace

void BindDlpack(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<PyOrtValue>>(m.attr("OrtValue"));
  cls.def(
         "__dlpack__",
         [](const py::object& self, const py::object& /*stream*/, const py::object& /*max_version*/,
            const py::object& /*dl_device*/, const py::object& /*copy*/) { return ToDlpack(self); },
         py::arg("stream") = py::none(), py::kw_only(), py::arg("max_version") = py::none(),
         py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
         "A DLPack capsule sharing this value's memory. Values made by Tessera are complete when returned, so "
         "`stream` needs no synchronization and is ignored.")
      .def("__dlpack_device__", &DlpackDevice)
      .def("to_dlpack", &ToDlpack)
      .def_static(
          "from_dlpack", [](const py::object& data, bool is_bool) { return FromDlpack(data, is_bool); },
          py::arg("data"), py::arg("is_bool_tensor") = false);
  m.def(
      "is_dlpack_uint8_tensor",
      [](const py::capsule& capsule) {
        auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
        if (managed == nullptr) {
          PyErr_Clear();
          Fail(ErrorCode::kInvalidArgument, "is_dlpack_uint8_tensor: the capsule is not an unconsumed \"dltensor\"");
        }
        const DLDataType& t = managed->dl_tensor.dtype;
        return t.code == kDLUInt && t.bits == 8 && t.lanes == 1;
      },
      py::arg("dlpack"),
      "Whether a DLPack capsule holds uint8 elements (onnxruntime's test for capsules that may carry booleans).");
  m.def("from_dlpack", &FromDlpack, py::arg("data"), py::arg("is_bool_tensor") = false,
        "An OrtValue sharing the memory of a DLPack producer (numpy >= 1.22, torch, cupy, ...) or capsule.");
}

}  // namespace tessera::python
