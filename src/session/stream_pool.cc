#include "session/stream_pool.h"

#include "tessera/status.h"

namespace tessera {

namespace {

Stream* Find(const std::map<MemoryInfo, std::unique_ptr<Stream>>& streams, const MemoryInfo& info) {
  auto it = streams.find(info);
  return it == streams.end() ? nullptr : it->second.get();
}

}  // namespace

std::vector<Stream*> StreamPool::Set::all() const {
  std::vector<Stream*> out;
  for (const auto* map : {&copy_in, &compute, &copy_out})
    for (const auto& [info, stream] : *map) out.push_back(stream.get());
  return out;
}

void StreamPool::Set::Synchronize() const {
  for (Stream* s : all()) s->Synchronize();
}

namespace {

// Whether events of `a`'s EP can order work on `b`: the same kind of device from the same vendor.
bool SameDeviceKind(const Stream& a, const Stream& b) {
  return a.memory_info().device_type == b.memory_info().device_type &&
         a.memory_info().vendor_id == b.memory_info().vendor_id;
}

}  // namespace

void StreamPool::Set::WaitFor(Stream& caller) const {
  std::unique_ptr<Event> queued = caller.CreateEvent();
  queued->Record(caller);
  bool on_device = false, on_host = false;  // a set without streams runs on the host: it waits there
  for (Stream* s : all()) {
    const bool same = SameDeviceKind(caller, *s);
    if (same) queued->Wait(*s);
    on_device = on_device || same;
    on_host = on_host || !same;
  }
  if (on_host || !on_device) queued->Synchronize();
}

void StreamPool::Set::SignalTo(Stream& caller) const {
  for (Stream* s : all()) {
    if (!SameDeviceKind(caller, *s)) {
      s->Synchronize();
      continue;
    }
    std::unique_ptr<Event> done = s->CreateEvent();
    done->Record(*s);
    done->Wait(caller);
  }
}

CallerStreamJoin::CallerStreamJoin(const StreamPool::Set& set, Stream* caller) : set_(set), caller_(caller) {
  if (caller_ != nullptr) set_.WaitFor(*caller_);
}

void CallerStreamJoin::Done() {
  if (caller_ == nullptr) return;
  Stream* caller = caller_;
  caller_ = nullptr;
  set_.SignalTo(*caller);
}

CallerStreamJoin::~CallerStreamJoin() {
  try {
    Done();
  } catch (...) {  // the run's own error is the one reported; a stream error shows at the caller's next wait
  }
}

StreamPool::Lease::~Lease() {
  if (pool_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  --set_->runs;
}

void StreamPool::Initialize(const std::vector<ExecutionProvider*>& eps, const PlanServices& base) {
  base_ = base;
  for (ExecutionProvider* ep : eps) {
    const MemoryInfo info = ep->memory_info();
    bool seen = false;
    for (const StreamEp& s : stream_eps_) seen = seen || s.memory == info;
    if (!seen) stream_eps_.push_back({info, ep});
  }
  auto primary = std::make_unique<Set>();
  std::vector<StreamEp> with_streams;
  for (const StreamEp& s : stream_eps_) {
    std::unique_ptr<Stream> compute = s.ep->CreateStream();
    if (compute == nullptr) continue;
    primary->compute[s.memory] = std::move(compute);
    if (std::unique_ptr<Stream> in = s.ep->CreateCopyStream()) primary->copy_in[s.memory] = std::move(in);
    if (std::unique_ptr<Stream> out = s.ep->CreateCopyStream()) primary->copy_out[s.memory] = std::move(out);
    with_streams.push_back(s);
  }
  stream_eps_ = std::move(with_streams);
  FillServices(*primary);
  sets_.push_back(std::move(primary));
}

void StreamPool::FillServices(Set& set) {
  set.services = base_;
  set.services.stream_for = [&set](const MemoryInfo& info) { return Find(set.compute, info); };
  set.services.copy_stream_for = [&set](const MemoryInfo& src, const MemoryInfo& dst) -> Stream* {
    Stream* src_stream = Find(set.compute, src);
    Stream* dst_stream = Find(set.compute, dst);
    if (src_stream != nullptr && dst_stream != nullptr) return nullptr;  // two devices: synchronous
    Stream* copy = dst_stream != nullptr ? Find(set.copy_in, dst) : Find(set.copy_out, src);
    if (copy != nullptr) return copy;
    return src_stream != nullptr ? src_stream : dst_stream;
  };
  set.services.allocator_on = [this, &set](const MemoryInfo& info, Stream* use) {
    return View(info, use, Find(set.compute, info));
  };
}

AllocatorPtr StreamPool::View(const MemoryInfo& info, Stream* use, Stream* release) {
  AllocatorPtr base = base_.allocator_for(info);
  if (use == nullptr || release == nullptr) return base;  // host memory: its device users hold it (DataTransfer)
  std::lock_guard<std::mutex> lock(views_mutex_);
  std::shared_ptr<StreamAllocator>& view = views_[{info, use}];
  if (view == nullptr) view = std::make_shared<StreamAllocator>(base, use, release, cache_bytes_);
  return view;
}

std::unique_ptr<StreamPool::Set> StreamPool::NewSet() {
  const Set& first = primary();
  auto set = std::make_unique<Set>();
  for (const StreamEp& s : stream_eps_) {
    std::unique_ptr<Stream> compute = s.ep->CreateStream();
    if (compute == nullptr)
      Fail(ErrorCode::kRuntime, s.ep->type(), " gave a stream for its first set of streams but not for another");
    set->remap.streams.push_back({Find(first.compute, s.memory), compute.get()});
    set->compute[s.memory] = std::move(compute);
    for (auto [from, to] : {std::pair{&first.copy_in, &set->copy_in}, std::pair{&first.copy_out, &set->copy_out}}) {
      Stream* primary_copy = Find(*from, s.memory);
      if (primary_copy == nullptr) continue;
      std::unique_ptr<Stream> copy = s.ep->CreateCopyStream();
      if (copy == nullptr)
        Fail(ErrorCode::kRuntime, s.ep->type(), " gave copy streams for its first set of streams but not for another");
      set->remap.streams.push_back({primary_copy, copy.get()});
      (*to)[s.memory] = std::move(copy);
    }
  }
  FillServices(*set);
  set->remap.services = &set->services;
  // The plan's steps hold views naming the primary's streams: each maps to the view of the same memory on the
  // corresponding stream of this set, released on this set's compute stream.
  std::vector<std::pair<std::pair<MemoryInfo, Stream*>, std::shared_ptr<StreamAllocator>>> primary_views;
  {
    std::lock_guard<std::mutex> lock(views_mutex_);
    for (const auto& [key, view] : views_) primary_views.push_back({key, view});
  }
  for (const auto& [key, view] : primary_views) {
    const auto& [info, use] = key;
    bool named_by_primary = false;
    for (const auto& [from, to] : set->remap.streams) named_by_primary = named_by_primary || from == use;
    if (!named_by_primary) continue;  // a view of another set
    set->remap.allocators.push_back({view.get(), View(info, set->remap.Map(use), Find(set->compute, info))});
  }
  return set;
}

StreamPool::Lease StreamPool::Acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  Set* chosen = nullptr;
  for (const auto& set : sets_)
    if (set->runs == 0) {
      chosen = set.get();
      break;
    }
  if (chosen == nullptr && sets_.size() < max_sets_ && has_streams()) {
    sets_.push_back(NewSet());
    chosen = sets_.back().get();
  }
  if (chosen == nullptr)
    for (const auto& set : sets_)
      if (chosen == nullptr || set->runs < chosen->runs) chosen = set.get();
  ++chosen->runs;
  return Lease(*this, *chosen);
}

void StreamPool::Synchronize() const {
  std::vector<const Set*> sets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& set : sets_) sets.push_back(set.get());
  }
  for (const Set* set : sets) set->Synchronize();
}

size_t StreamPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sets_.size();
}

void StreamPool::Detach() {
  std::lock_guard<std::mutex> lock(views_mutex_);
  for (auto& [key, view] : views_) view->Detach();
}

size_t StreamPool::TrimCaches() {
  std::lock_guard<std::mutex> lock(views_mutex_);
  size_t bytes = 0;
  for (auto& [key, view] : views_) bytes += view->Trim();
  return bytes;
}

}  // namespace tessera
