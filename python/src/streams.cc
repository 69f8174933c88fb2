// OrtSyncStream (a device stream of an EP device, with its native handle: a cudaStream_t for the CUDA EP) and
// copy_tensors(src, dst, stream): batched copies between any two memories a registered EP can copy between,
// queued on the stream (or complete on return without one), as Environment::CopyTensors.
#include "bindings.h"

namespace tessera::python {

std::shared_ptr<PySyncStream> CreateSyncStream(const std::string& ep_name, uint32_t ordinal) {
  auto runtime = GetRuntime();
  const EpDevice* device = FindEpDevice(*runtime, ep_name, ordinal);
  if (device == nullptr)
    Fail(ErrorCode::kInvalidArgument, "create_sync_stream: no EP device ", ep_name, " with ordinal ", ordinal);
  std::unique_ptr<Stream> stream = runtime->env().CreateStream(*device);
  if (!stream)
    Fail(ErrorCode::kInvalidArgument, "create_sync_stream: ", ep_name, " has no streams (its work completes in order)");
  auto result = std::make_shared<PySyncStream>();
  result->runtime = std::move(runtime);
  result->stream = std::move(stream);
  return result;
}

namespace {

std::vector<Tensor> Tensors(const std::vector<PyOrtValue*>& values, const char* what) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i] || !values[i]->value.is_tensor())
      Fail(ErrorCode::kInvalidArgument, "copy_tensors: ", what, "[", i, "] is not a tensor OrtValue");
    tensors.push_back(values[i]->tensor());
  }
  return tensors;
}

}  // namespace

void BindStreams(py::module_& m) {
  py::class_<PySyncStream, std::shared_ptr<PySyncStream>>(m, "OrtSyncStream",
                                                          "A stream of an EP device (EpDevice.create_sync_stream()).")
      .def("get_handle",
           [](const PySyncStream& s) { return reinterpret_cast<uintptr_t>(s.stream->native_handle()); },
           "The native stream (a cudaStream_t for the CUDA EP) as an integer, 0 when there is none.")
      .def("synchronize", [](PySyncStream& s) {
        py::gil_scoped_release release;
        s.stream->Synchronize();
      })
      .def_property_readonly("memory_info", [](const PySyncStream& s) { return s.stream->memory_info(); });
  m.def(
      "copy_tensors",
      [](const std::vector<PyOrtValue*>& src, const std::vector<PyOrtValue*>& dst,
         const std::shared_ptr<PySyncStream>& stream) {
        if (src.size() != dst.size())
          Fail(ErrorCode::kInvalidArgument, "copy_tensors: ", src.size(), " sources but ", dst.size(), " destinations");
        const std::vector<Tensor> from = Tensors(src, "src");
        std::vector<Tensor> to = Tensors(dst, "dst");
        auto runtime = GetRuntime();
        py::gil_scoped_release release;
        runtime->env().CopyTensors(from, to, stream ? stream->stream.get() : nullptr);
      },
      py::arg("src"), py::arg("dst"), py::arg("stream") = nullptr,
      "Copies src[i] into dst[i] (same type and element count). With a stream the copies are queued on it "
      "(OrtSyncStream.synchronize() waits for them); without, they are complete on return.");
}

}  // namespace tessera::python
