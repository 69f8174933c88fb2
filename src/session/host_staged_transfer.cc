#include "session/host_staged_transfer.h"

#include <vector>

#include "tessera/status.h"

namespace tessera {

HostStagedTransfer::HostStagedTransfer(MemoryInfo src, MemoryInfo dst, DataTransfer* to_host, DataTransfer* from_host,
                                       AllocatorPtr host)
    : src_(std::move(src)), dst_(std::move(dst)), to_host_(to_host), from_host_(from_host), host_(std::move(host)) {}

bool HostStagedTransfer::CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const {
  return src == src_ && dst == dst_;
}

void HostStagedTransfer::Copy(std::span<const CopyPair> pairs, Stream* stream) {
  for (const CopyPair& pair : pairs)
    if (!CanCopy(pair.src->memory_info(), pair.dst->memory_info()))
      Fail(ErrorCode::kInvalidArgument, "copy through host memory from ", src_.ToString(), " to ", dst_.ToString(),
           " was given ", pair.src->Describe(), " -> ", pair.dst->Describe());
  if (pairs.empty()) return;
  if (stream != nullptr) stream->Synchronize();
  std::vector<Tensor> staged;
  staged.reserve(pairs.size());
  std::vector<CopyPair> down, up;
  for (const CopyPair& pair : pairs) {
    staged.push_back(Tensor::Allocate(pair.src->type(), pair.src->shape(), host_));
    down.push_back({pair.src, &staged.back()});
    up.push_back({&staged.back(), pair.dst});
  }
  to_host_->Copy(down, nullptr);
  from_host_->Copy(up, nullptr);
}

}  // namespace tessera
