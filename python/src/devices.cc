// Hardware devices, EP devices and memory infos; EP plugin registration; device-name resolution for
// OrtValues ("cpu", "cuda", "testing", "cuda_pinned", ...).
#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "bindings.h"

namespace tessera::python {

namespace {

constexpr const char* kPinnedSuffix = "_pinned";

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A snapshot of an EpDevice for Python (the Environment's object may go away with its plugin).
struct PyEpDevice {
  std::string ep_name, ep_vendor;
  HardwareDevice device;
  std::map<std::string, std::string> ep_metadata;
  ProviderOptions ep_options;
  MemoryInfo device_memory;
  std::optional<MemoryInfo> host_accessible_memory;
  int index = 0;  // among the EP devices of the same EP, in GetEpDevices order
};

std::vector<PyEpDevice> SnapshotEpDevices(Runtime& runtime) {
  std::vector<PyEpDevice> out;
  std::map<std::string, int> per_ep;
  for (const EpDevice* d : runtime.env().GetEpDevices())
    out.push_back({d->ep_name, d->ep_vendor, *d->device, d->ep_metadata, d->ep_options, d->device_memory,
                   d->host_accessible_memory, per_ep[d->ep_name]++});
  return out;
}

std::string AvailableDeviceNames(Runtime& runtime) {
  std::ostringstream names;
  names << "cpu";
  for (const EpDevice* d : runtime.env().GetEpDevices()) {
    const std::string name = ShortEpName(d->ep_name);
    if (name == "cpu") continue;
    names << ", " << name << ":" << d->device->ordinal;
    if (d->host_accessible_memory) names << ", " << name << kPinnedSuffix << ":" << d->device->ordinal;
  }
  return names.str();
}

std::string MemoryTypeName(MemoryType type) { return type == MemoryType::kDefault ? "default" : "host_accessible"; }

void BindMemoryInfo(py::module_& m) {
  py::enum_<MemoryType>(m, "OrtDeviceMemoryType")
      .value("DEFAULT", MemoryType::kDefault)
      .value("HOST_ACCESSIBLE", MemoryType::kHostAccessible);
  py::class_<MemoryInfo>(m, "MemoryInfo", "One memory space (device type, vendor, device ordinal, memory type).")
      .def_readonly("name", &MemoryInfo::name)
      .def_property_readonly("device_type", [](const MemoryInfo& i) { return std::string(DeviceTypeName(i.device_type)); })
      .def_readonly("vendor_id", &MemoryInfo::vendor_id)
      .def_readonly("device_id", &MemoryInfo::device_id)
      .def_property_readonly("memory_type", [](const MemoryInfo& i) { return MemoryTypeName(i.memory_type); })
      .def_readonly("alignment", &MemoryInfo::alignment)
      .def_property_readonly("is_host_readable", &MemoryInfo::IsHostReadable)
      .def("__eq__", [](const MemoryInfo& a, const MemoryInfo& b) { return a == b; })
      .def("__hash__", [](const MemoryInfo& i) {
        return py::hash(py::make_tuple(static_cast<int>(i.device_type), i.vendor_id, i.device_id,
                                       static_cast<int>(i.memory_type), i.alignment));
      })
      .def("__repr__", [](const MemoryInfo& i) { return "MemoryInfo(" + i.ToString() + ")"; });
}

void BindHardwareDevices(py::module_& m) {
  py::enum_<DeviceType>(m, "OrtHardwareDeviceType")
      .value("CPU", DeviceType::kCpu)
      .value("GPU", DeviceType::kGpu)
      .value("NPU", DeviceType::kNpu);
  py::class_<HardwareDevice>(m, "HardwareDevice", "A processor found on this machine.")
      .def_readonly("type", &HardwareDevice::type)
      .def_readonly("vendor_id", &HardwareDevice::vendor_id)
      .def_readonly("device_id", &HardwareDevice::device_id)
      .def_readonly("vendor", &HardwareDevice::vendor)
      .def_readonly("metadata", &HardwareDevice::metadata)
      .def_readonly("ordinal", &HardwareDevice::ordinal)
      .def("__repr__", [](const HardwareDevice& d) {
        std::ostringstream os;
        os << "HardwareDevice(" << DeviceTypeName(d.type) << ", vendor=" << d.vendor << " 0x" << std::hex << d.vendor_id
           << ", device_id=0x" << d.device_id << std::dec << ", ordinal=" << d.ordinal << ")";
        return os.str();
      });
  py::class_<PyEpDevice>(m, "EpDevice", "An execution provider paired with a hardware device it drives.")
      .def_readonly("ep_name", &PyEpDevice::ep_name)
      .def_readonly("ep_vendor", &PyEpDevice::ep_vendor)
      .def_readonly("device", &PyEpDevice::device)
      .def_readonly("ep_metadata", &PyEpDevice::ep_metadata)
      .def_readonly("ep_options", &PyEpDevice::ep_options)
      .def_readonly("device_memory_info", &PyEpDevice::device_memory)
      .def_readonly("host_accessible_memory_info", &PyEpDevice::host_accessible_memory)
      .def_readonly("index", &PyEpDevice::index)
      .def(
          "memory_info",
          [](const PyEpDevice& d, MemoryType type) -> std::optional<MemoryInfo> {
            return type == MemoryType::kDefault ? std::optional<MemoryInfo>(d.device_memory) : d.host_accessible_memory;
          },
          py::arg("memory_type") = MemoryType::kDefault)
      .def(
          "create_sync_stream", [](const PyEpDevice& d) { return CreateSyncStream(d.ep_name, d.device.ordinal); },
          "A stream of this device (OrtSyncStream) for copy_tensors and the caller's own work.")
      .def("__repr__", [](const PyEpDevice& d) {
        return "EpDevice(" + d.ep_name + ", " + DeviceTypeName(d.device.type) + ":" + std::to_string(d.device.ordinal) +
               ", " + d.device_memory.ToString() + ")";
      });
}

// The Python objects of `devices`, in their order; an EP's devices keep their index among that EP's devices.
py::list SnapshotOf(const std::vector<const EpDevice*>& devices) {
  py::list out;
  std::map<std::string, int> per_ep;
  for (const EpDevice* d : devices)
    out.append(PyEpDevice{d->ep_name, d->ep_vendor, *d->device, d->ep_metadata, d->ep_options, d->device_memory,
                          d->host_accessible_memory, per_ep[d->ep_name]++});
  return out;
}

}  // namespace

std::string ShortEpName(const std::string& ep_name) {
  const std::string suffix = "ExecutionProvider";
  std::string core = ep_name;
  if (core.size() > suffix.size() && core.ends_with(suffix)) core.resize(core.size() - suffix.size());
  return Lowercase(core);
}

const EpDevice* FindEpDevice(Runtime& runtime, const std::string& ep_name, uint32_t ordinal) {
  for (const EpDevice* d : runtime.env().GetEpDevices())
    if (d->ep_name == ep_name && d->device->ordinal == ordinal) return d;
  return nullptr;
}

const EpDevice* EpDeviceOwning(Runtime& runtime, const MemoryInfo& info) {
  for (const EpDevice* d : runtime.env().GetEpDevices())
    if (d->device_memory == info || (d->host_accessible_memory && *d->host_accessible_memory == info)) return d;
  return nullptr;
}

MemoryInfo MemoryInfoForDevice(Runtime& runtime, const std::string& device_type, int device_id) {
  std::string name = Lowercase(device_type);
  if (name == "cpu") return MemoryInfo::Host();
  if (name == "gpu") name = "cuda";
  const bool pinned = name.size() > std::string(kPinnedSuffix).size() && name.ends_with(kPinnedSuffix);
  if (pinned) name.resize(name.size() - std::string(kPinnedSuffix).size());
  if (device_id >= 0)
    for (const EpDevice* d : runtime.env().GetEpDevices()) {
      if (ShortEpName(d->ep_name) != name || d->device->ordinal != static_cast<uint32_t>(device_id)) continue;
      if (!pinned) return d->device_memory;
      if (d->host_accessible_memory) return *d->host_accessible_memory;
    }
  Fail(ErrorCode::kInvalidArgument, "unknown device '", device_type, "' with id ", device_id,
       " (available: ", AvailableDeviceNames(runtime), ")");
}

std::string DeviceNameOf(Runtime& runtime, const MemoryInfo& info) {
  if (info.IsHostReadable()) return "cpu";
  const EpDevice* owner = EpDeviceOwning(runtime, info);
  return owner ? ShortEpName(owner->ep_name) : Lowercase(info.name);
}

void BindDevices(py::module_& m) {
  BindMemoryInfo(m);
  BindHardwareDevices(m);
  m.def("get_hardware_devices", [] {
    std::vector<HardwareDevice> out;
    for (const HardwareDevice* h : GetRuntime()->env().GetHardwareDevices()) out.push_back(*h);
    return out;
  }, "Every processor found: the CPU, then the devices EP plugins discovered.");
  m.def("get_ep_devices", [] { return SnapshotEpDevices(*GetRuntime()); },
        "Every (execution provider, device) pair: the CPU EP first, then plugins in registration order.");
  m.def("_ep_names", [] {
    std::vector<std::string> names;
    for (const EpDevice* d : GetRuntime()->env().GetEpDevices())
      if (std::find(names.begin(), names.end(), d->ep_name) == names.end()) names.push_back(d->ep_name);
    return names;
  });
  // onnxruntime's create_and_register_allocator(_v2): a shared allocator (an arena unless `arena` is None and
  // `use_arena` is false) for one memory of the process, used by sessions with "session.use_env_allocators" = "1".
  m.def(
      "_create_shared_allocator",
      [](const std::string& device, int device_id, bool host_accessible, bool use_arena, const py::object& arena) {
        Runtime& runtime = *GetRuntime();
        const MemoryInfo info = MemoryInfoForDevice(runtime, device + (host_accessible ? "_pinned" : ""), device_id);
        const EpDevice* owner = EpDeviceOwning(runtime, info);
        if (owner == nullptr) Fail(ErrorCode::kInvalidArgument, "no EP device owns memory ", info.ToString());
        ArenaOptions options;
        if (!arena.is_none()) {
          const py::dict settings = arena.cast<py::dict>();
          const auto get = [&](const char* key) -> int64_t {
            return settings.contains(key) ? settings[key].cast<int64_t>() : -1;
          };
          if (get("max_mem") > 0) options.max_bytes = static_cast<size_t>(get("max_mem"));
          if (get("arena_extend_strategy") == 1) options.extend_strategy = ArenaExtendStrategy::kSameAsRequested;
          if (get("initial_chunk_size_bytes") > 0)
            options.initial_chunk_bytes = static_cast<size_t>(get("initial_chunk_size_bytes"));
          if (get("max_dead_bytes_per_chunk") > 0)
            options.max_dead_bytes_per_chunk = static_cast<size_t>(get("max_dead_bytes_per_chunk"));
        }
        const AllocatorPtr allocator = runtime.env().CreateSharedAllocator(
            *owner, host_accessible ? MemoryType::kHostAccessible : MemoryType::kDefault, use_arena ? &options : nullptr);
        return allocator->Info();
      },
      py::arg("device"), py::arg("device_id"), py::arg("host_accessible"), py::arg("use_arena"), py::arg("arena"));
  m.def("_release_shared_allocator", [](const MemoryInfo& info) { GetRuntime()->env().ReleaseSharedAllocator(info); },
        py::arg("memory_info"));
  m.def("register_execution_provider_library", [](const std::string& name, const std::string& path) {
    GetRuntime()->env().RegisterEpLibrary(name, path);
  }, py::arg("registration_name"), py::arg("path"), "Loads an EP plugin library (libtessera_<name>.so).");
  m.def("unregister_execution_provider_library", [](const std::string& name) {
    GetRuntime()->UnregisterEpLibrary(name);
  }, py::arg("registration_name"), "Unloads a plugin; its sessions and values must be gone first.");
}

EpSelectionDelegate PythonSelectionDelegate(py::object fn) {
  // Sessions copy their options (and this function) and may drop them without the GIL: the callable is released
  // under it.
  std::shared_ptr<py::object> callable(new py::object(std::move(fn)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [callable](const std::vector<const EpDevice*>& devices, const std::map<std::string, std::string>& model,
                    const std::map<std::string, std::string>& runtime, size_t max_selections) {
    py::gil_scoped_acquire gil;
    std::vector<const EpDevice*> chosen;
    try {
      const py::object result = (*callable)(SnapshotOf(devices), model, runtime, max_selections);
      std::map<std::string, int> per_ep;
      std::vector<std::pair<std::string, int>> keys;  // (ep_name, index) of each offered device
      for (const EpDevice* d : devices) keys.emplace_back(d->ep_name, per_ep[d->ep_name]++);
      for (const py::handle item : result) {
        if (!py::isinstance<PyEpDevice>(item))
          throw std::runtime_error("the delegate must return OrtEpDevice objects, got " +
                                   py::str(py::type::of(item)).cast<std::string>());
        const PyEpDevice& d = item.cast<const PyEpDevice&>();
        const auto it = std::find(keys.begin(), keys.end(), std::make_pair(d.ep_name, d.index));
        if (it == keys.end())
          throw std::runtime_error("the delegate returned EP device " + d.ep_name + " #" + std::to_string(d.index) +
                                   ", which it was not given");
        chosen.push_back(devices[static_cast<size_t>(it - keys.begin())]);
      }
    } catch (py::error_already_set& e) {
      throw std::runtime_error(e.what());
    }
    return chosen;
  };
}

}  // namespace tessera::python
