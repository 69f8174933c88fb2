#include "tessera/environment.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>

#include "core/logging.h"
#include "providers/cpu/cpu_ep.h"
#include "session/environment_impl.h"

namespace tessera {

void Environment::Impl::Register(const std::string& name, void* library, std::unique_ptr<EpFactory> factory) {
  auto ep = std::make_unique<RegisteredEp>();
  ep->registration_name = name;
  ep->library = library;
  for (const HardwareDevice& found : factory->DiscoverHardware()) {
    // One processor found by two plugins (the CUDA and the Vulkan EP on one GPU) is one hardware device: same PCI
    // bus id. The first description stays; the later one adds the metadata keys it lacks.
    if (HardwareDevice* same = FindByPciBusId(found)) {
      for (const auto& [key, value] : found.metadata) same->metadata.emplace(key, value);
      continue;
    }
    hardware.push_back(std::make_unique<HardwareDevice>(found));
    ep->added_hardware.push_back(hardware.back().get());
  }
  std::vector<const HardwareDevice*> all;
  for (const auto& h : hardware) all.push_back(h.get());
  for (EpDevice& d : factory->GetEpDevices(all)) {
    d.factory = factory.get();
    ep->devices.push_back(std::make_unique<EpDevice>(std::move(d)));
  }
  ep->transfer = factory->CreateDataTransfer();
  ep->factory = std::move(factory);
  Log(LogLevel::kInfo, "registered EP '", ep->factory->name(), "' as '", name, "' with ", ep->devices.size(),
      " device(s)");
  eps.push_back(std::move(ep));
}

HardwareDevice* Environment::Impl::FindByPciBusId(const HardwareDevice& device) const {
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  auto it = device.metadata.find("pci_bus_id");
  if (it == device.metadata.end() || it->second.empty()) return nullptr;
  const std::string bus = lower(it->second);
  for (const auto& h : hardware) {
    auto other = h->metadata.find("pci_bus_id");
    if (h->type == device.type && h->vendor_id == device.vendor_id && other != h->metadata.end() &&
        lower(other->second) == bus)
      return h.get();
  }
  return nullptr;
}

DataTransfer* Environment::Impl::FindTransfer(const MemoryInfo& src, const MemoryInfo& dst) const {
  // Prefer a device EP's transfer (it knows its streams), then the host transfer.
  for (auto it = eps.rbegin(); it != eps.rend(); ++it)
    if ((*it)->transfer && (*it)->transfer->CanCopy(src, dst)) return (*it)->transfer.get();
  return nullptr;
}

DataTransfer* Environment::Impl::FindRegionTransfer(const MemoryInfo& src, const MemoryInfo& dst) const {
  for (auto it = eps.rbegin(); it != eps.rend(); ++it)
    if ((*it)->transfer && (*it)->transfer->CanCopyRegions(src, dst)) return (*it)->transfer.get();
  return nullptr;
}

AllocatorPtr Environment::Impl::SharedAllocator(const MemoryInfo& info) const {
  auto it = shared_allocators.find(info);
  return it == shared_allocators.end() ? nullptr : it->second;
}

Environment::Environment(LogLevel log_level) : impl_(std::make_unique<Impl>()) {
  impl_->log_level = log_level;
  if (log_level < LogThreshold()) SetLogThreshold(log_level);
  for (const HardwareDevice& h : DiscoverHostHardware()) impl_->hardware.push_back(std::make_unique<HardwareDevice>(h));
  impl_->Register("cpu", nullptr, CreateCpuEpFactory());
}

Environment::~Environment() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->shared_allocators.clear();
  while (!impl_->eps.empty()) {
    std::unique_ptr<RegisteredEp> ep = std::move(impl_->eps.back());
    impl_->eps.pop_back();
    void* library = ep->library;
    ep.reset();  // the factory's code lives in the library: destroy it first
    if (library != nullptr) dlclose(library);
  }
}

void Environment::RegisterEpLibrary(const std::string& registration_name, const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto& ep : impl_->eps)
    if (ep->registration_name == registration_name)
      Fail(ErrorCode::kInvalidArgument, "an EP library is already registered as '", registration_name, "'");
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) Fail(ErrorCode::kIo, "cannot load EP library '", path.string(), "': ", dlerror());
  auto create = reinterpret_cast<CreateEpFactoryFn>(dlsym(library, TESSERA_EP_ENTRY_POINT));
  if (create == nullptr) {
    dlclose(library);
    Fail(ErrorCode::kInvalidArgument, "EP library '", path.string(), "' does not export ", TESSERA_EP_ENTRY_POINT);
  }
  std::unique_ptr<EpFactory> factory;
  try {
    factory.reset(create(TESSERA_EP_API_VERSION, registration_name.c_str()));
  } catch (...) {
    dlclose(library);
    throw;
  }
  if (!factory) {
    dlclose(library);
    Fail(ErrorCode::kInvalidArgument, "EP library '", path.string(), "' does not support EP API version ",
         TESSERA_EP_API_VERSION);
  }
  impl_->Register(registration_name, library, std::move(factory));
}

void Environment::UnregisterEpLibrary(const std::string& registration_name) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& eps = impl_->eps;
  auto it = std::find_if(eps.begin(), eps.end(), [&](const auto& ep) { return ep->registration_name == registration_name; });
  if (it == eps.end() || (*it)->library == nullptr)
    Fail(ErrorCode::kInvalidArgument, "no EP library is registered as '", registration_name, "'");
  for (const auto& device : (*it)->devices) {
    impl_->shared_allocators.erase(device->device_memory);
    if (device->host_accessible_memory) impl_->shared_allocators.erase(*device->host_accessible_memory);
  }
  void* library = (*it)->library;
  const std::vector<const HardwareDevice*> added = (*it)->added_hardware;
  eps.erase(it);
  // Its hardware devices go too, unless another EP still drives them; registering the library again finds them
  // anew (they are not listed twice).
  auto& hardware = impl_->hardware;
  for (const HardwareDevice* h : added) {
    const bool in_use = std::any_of(eps.begin(), eps.end(), [&](const auto& ep) {
      return std::any_of(ep->devices.begin(), ep->devices.end(), [&](const auto& d) { return d->device == h; });
    });
    if (!in_use) std::erase_if(hardware, [&](const auto& owned) { return owned.get() == h; });
  }
  dlclose(library);
}

void Environment::RegisterEpFactory(const std::string& registration_name, std::unique_ptr<EpFactory> factory) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!factory) Fail(ErrorCode::kInvalidArgument, "RegisterEpFactory: null factory");
  impl_->Register(registration_name, nullptr, std::move(factory));
}

std::vector<const HardwareDevice*> Environment::GetHardwareDevices() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<const HardwareDevice*> out;
  for (const auto& h : impl_->hardware) out.push_back(h.get());
  return out;
}

std::vector<const EpDevice*> Environment::GetEpDevices() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<const EpDevice*> out;
  for (const auto& ep : impl_->eps)
    for (const auto& d : ep->devices) out.push_back(d.get());
  return out;
}

EpFactory* Environment::FindFactory(const std::string& ep_name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto& ep : impl_->eps)
    if (ep->factory->name() == ep_name) return ep->factory.get();
  return nullptr;
}

AllocatorPtr Environment::CreateSharedAllocator(const EpDevice& device, MemoryType type, const ArenaOptions* arena_options) {
  const MemoryInfo info = type == MemoryType::kDefault ? device.device_memory
                          : device.host_accessible_memory ? *device.host_accessible_memory
                                                          : MemoryInfo();
  if (type == MemoryType::kHostAccessible && !device.host_accessible_memory)
    Fail(ErrorCode::kInvalidArgument, "EP device ", device.ep_name, " has no host-accessible memory");
  AllocatorPtr raw = device.factory->CreateAllocator(info);
  if (!raw) Fail(ErrorCode::kInvalidArgument, device.ep_name, " cannot allocate ", info.ToString());
  AllocatorPtr allocator = arena_options ? std::make_shared<Arena>(raw, *arena_options) : raw;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->shared_allocators[info] = allocator;
  return allocator;
}

AllocatorPtr Environment::GetSharedAllocator(const MemoryInfo& info) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->SharedAllocator(info);
}

void Environment::ReleaseSharedAllocator(const MemoryInfo& info) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->shared_allocators.erase(info) == 0)
    Fail(ErrorCode::kInvalidArgument, "no shared allocator for ", info.ToString());
}

void Environment::CopyTensors(std::span<const Tensor> src, std::span<Tensor> dst, Stream* stream) {
  if (src.size() != dst.size())
    Fail(ErrorCode::kInvalidArgument, "CopyTensors: ", src.size(), " sources but ", dst.size(), " destinations");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i].type() != dst[i].type() || src[i].NumElements() != dst[i].NumElements())
      Fail(ErrorCode::kInvalidArgument, "CopyTensors: pair ", i, ": source ", src[i].Describe(), " and destination ",
           dst[i].Describe(), " differ in type or element count");
    DataTransfer* transfer;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      transfer = impl_->FindTransfer(src[i].memory_info(), dst[i].memory_info());
    }
    if (transfer == nullptr)
      Fail(ErrorCode::kNotImplemented, "CopyTensors: no registered EP copies ", src[i].memory_info().ToString(), " -> ",
           dst[i].memory_info().ToString());
    CopyPair pair{&src[i], &dst[i]};
    transfer->Copy({&pair, 1}, stream);
  }
}

bool Environment::CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->FindRegionTransfer(src, dst) != nullptr;
}

void Environment::CopyTensorRegions(std::span<const CopyRegion> regions, Stream* stream) {
  for (size_t i = 0; i < regions.size(); ++i) {
    const CopyRegion& r = regions[i];
    if (r.src == nullptr || r.dst == nullptr)
      Fail(ErrorCode::kInvalidArgument, "CopyTensorRegions: region ", i, " has no ", r.src == nullptr ? "source" : "destination");
    if (r.rows == 0 || r.row_bytes == 0) continue;
    // The last row ends at offset + (rows - 1) * pitch + row_bytes; rows may not overlap one another.
    const auto check = [&](const Tensor& t, size_t offset, size_t pitch, const char* side) {
      if (r.rows > 1 && pitch < r.row_bytes)
        Fail(ErrorCode::kInvalidArgument, "CopyTensorRegions: region ", i, ": the ", side, " pitch ", pitch,
             " is shorter than a row (", r.row_bytes, " bytes)");
      const size_t size = t.SizeInBytes();
      const bool fits = offset <= size && (r.rows - 1) <= (size - offset) / std::max<size_t>(pitch, 1) &&
                        r.row_bytes <= size - offset - (r.rows - 1) * pitch;
      if (!fits)
        Fail(ErrorCode::kInvalidArgument, "CopyTensorRegions: region ", i, " (", r.rows, " rows of ", r.row_bytes,
             " bytes, pitch ", pitch, ", offset ", offset, ") runs past the ", side, " ", t.Describe(), " (", size,
             " bytes)");
    };
    check(*r.src, r.src_offset, r.src_pitch, "source");
    check(*r.dst, r.dst_offset, r.dst_pitch, "destination");
  }
  // Consecutive regions between the same two memories go to their transfer in one call.
  for (size_t begin = 0; begin < regions.size();) {
    const MemoryInfo& from = regions[begin].src->memory_info();
    const MemoryInfo& to = regions[begin].dst->memory_info();
    size_t end = begin + 1;
    while (end < regions.size() && regions[end].src->memory_info() == from && regions[end].dst->memory_info() == to)
      ++end;
    DataTransfer* transfer;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      transfer = impl_->FindRegionTransfer(from, to);
    }
    if (transfer == nullptr)
      Fail(ErrorCode::kNotImplemented, "CopyTensorRegions: no registered EP copies regions ", from.ToString(), " -> ",
           to.ToString(), " (CanCopyRegions says which memories can; CopyTensors copies whole tensors)");
    transfer->CopyRegions(regions.subspan(begin, end - begin), stream);
    begin = end;
  }
}

std::unique_ptr<Stream> Environment::CreateStream(const EpDevice& device) {
  return device.factory->CreateStream(device.device_memory);
}

void Environment::SetGlobalThreadPools(int intra_op_threads, int inter_op_threads) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->global_intra_op_pool)
    Fail(ErrorCode::kInvalidArgument, "SetGlobalThreadPools: the global thread pools are already set (",
         impl_->global_intra_op_pool->num_threads(), " intra-op threads)");
  if (impl_->sessions_created.load() > 0)
    Fail(ErrorCode::kInvalidArgument, "SetGlobalThreadPools: ", impl_->sessions_created.load(),
         " session(s) were already created on this Environment; set the global thread pools before the first one");
  impl_->global_intra_op_pool = ThreadPool::Shared(intra_op_threads);
  impl_->global_inter_op_threads = inter_op_threads;
}

const ThreadPool* Environment::global_intra_op_pool() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->global_intra_op_pool ? &*impl_->global_intra_op_pool : nullptr;
}

int Environment::global_inter_op_threads() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->global_inter_op_threads;
}

LogLevel Environment::log_level() const { return impl_->log_level; }

}  // namespace tessera
