#include "providers/cuda/cuda_transfer.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_graph.h"
#include "providers/cuda/cuda_stream.h"
#include "providers/cuda/kernels/copy_buffers.h"

namespace tessera::cuda {

namespace {

bool IsCuda(const MemoryInfo& info) { return IsCudaDeviceMemory(info) || IsCudaPinnedMemory(info); }

void CheckPair(const CudaDataTransfer& transfer, const Tensor& src, const Tensor& dst) {
  if (!transfer.CanCopy(src.memory_info(), dst.memory_info()))
    Fail(ErrorCode::kInvalidArgument, "CUDA EP cannot copy ", src.Describe(), " to ", dst.Describe());
  if (src.type() == DataType::kString || dst.type() == DataType::kString)
    Fail(ErrorCode::kInvalidArgument, "CUDA memory cannot hold string tensors (copy of ", src.Describe(), ")");
  if (src.type() != dst.type() || src.NumElements() != dst.NumElements())
    Fail(ErrorCode::kInvalidArgument, "copy from ", src.Describe(), " to ", dst.Describe(),
         ": type or element count differs");
}

// Both sides are device memory of two different GPUs.
bool IsPeerCopy(const MemoryInfo& src, const MemoryInfo& dst) {
  return IsCudaDeviceMemory(src) && IsCudaDeviceMemory(dst) && src.device_id != dst.device_id;
}

// Lets each of the two GPUs read the other's memory directly (NVLink or PCIe peer-to-peer) the first time they
// copy between each other, where the topology allows it; elsewhere cudaMemcpyPeer stages through host memory
// itself. Thread-safe; a pair is tried once.
void EnablePeerAccess(int a, int b) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried.insert({std::min(a, b), std::max(a, b)}).second) return;
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) continue;
    DeviceGuard guard(from);
    const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();  // enabled elsewhere: fine
    else CheckCuda(status, "cudaDeviceEnablePeerAccess(", to, ") on GPU ", from);
  }
}

void CopyOne(const Tensor& src, Tensor& dst, cudaStream_t stream, bool async) {
  const size_t bytes = src.SizeInBytes();
  if (bytes == 0) return;
  const MemoryInfo& from = src.memory_info();
  const MemoryInfo& to = dst.memory_info();
  if (IsPeerCopy(from, to)) {
    const int src_device = OrdinalOf(from), dst_device = OrdinalOf(to);
    EnablePeerAccess(src_device, dst_device);
    const cudaError_t status =
        async ? cudaMemcpyPeerAsync(dst.raw_data(), dst_device, src.raw_data(), src_device, bytes, stream)
              : cudaMemcpyPeer(dst.raw_data(), dst_device, src.raw_data(), src_device, bytes);
    CheckCuda(status, "peer copy of ", src, " to ", dst);
    return;
  }
  // A synchronous copy while this thread captures a whole run is not part of the graph (the executor copies host
  // values computed from shapes that way, into buffers the graph keeps): the legacy stream's calls are allowed then.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool outside_capture = !async && WholeRunCaptureOnThisThread();
  if (outside_capture) cudaThreadExchangeStreamCaptureMode(&mode);
  // Unified addressing tells CUDA the direction from the pointers.
  cudaError_t status = async ? cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDefault, stream)
                             : cudaMemcpy(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDefault);
  // cudaMemcpy may return before the data has landed (pageable host -> device: once staged; device ->
  // device: once queued). A synchronous copy promises the data is in place, and the session's
  // non-blocking streams are not ordered after the legacy stream, so wait for it.
  if (!async && status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
  if (outside_capture) cudaThreadExchangeStreamCaptureMode(&mode);
  CheckCuda(status, "copy of ", src, " to ", dst);
}

// A GPU taking part in the copy, made current so that CUDA attributes the work to it.
int DeviceOf(const Tensor& src, const Tensor& dst) {
  return IsCuda(dst.memory_info()) ? OrdinalOf(dst.memory_info()) : OrdinalOf(src.memory_info());
}

// Copies within one GPU's memory of at most this size go into one launch::CopyBuffers launch per batch when a Copy
// has several; larger ones (bandwidth-bound, where the launch cost does not matter) take cudaMemcpyAsync.
constexpr size_t kBatchedCopyMaxBytes = size_t{4} << 20;

bool Batchable(const CopyPair& pair) {
  const MemoryInfo& from = pair.src->memory_info();
  const MemoryInfo& to = pair.dst->memory_info();
  const size_t bytes = pair.src->SizeInBytes();
  return IsCudaDeviceMemory(from) && IsCudaDeviceMemory(to) && from.device_id == to.device_id && bytes > 0 &&
         bytes <= kBatchedCopyMaxBytes;
}

// Queues the batchable pairs (Batchable) on `stream` as launch::CopyBuffers launches of up to kMaxBufferCopies
// each, per GPU, when there are at least two of them; returns the pairs left for CopyOne.
std::vector<const CopyPair*> QueueBatches(std::span<const CopyPair> pairs, cudaStream_t stream) {
  std::vector<const CopyPair*> rest;
  std::vector<const CopyPair*> batchable;
  for (const CopyPair& pair : pairs) (Batchable(pair) ? batchable : rest).push_back(&pair);
  if (batchable.size() < 2) {
    rest.insert(rest.end(), batchable.begin(), batchable.end());
    return rest;
  }
  std::stable_sort(batchable.begin(), batchable.end(), [](const CopyPair* a, const CopyPair* b) {
    return a->src->memory_info().device_id < b->src->memory_info().device_id;
  });
  for (size_t begin = 0; begin < batchable.size();) {
    const auto device = batchable[begin]->src->memory_info().device_id;
    launch::BufferCopies copies;
    size_t end = begin;
    while (end < batchable.size() && copies.count < launch::kMaxBufferCopies &&
           batchable[end]->src->memory_info().device_id == device) {
      const CopyPair& pair = *batchable[end++];
      copies.src[copies.count] = pair.src->raw_data();
      copies.dst[copies.count] = pair.dst->raw_data();
      copies.bytes[copies.count] = static_cast<int64_t>(pair.src->SizeInBytes());
      ++copies.count;
    }
    DeviceGuard guard(OrdinalOf(batchable[begin]->src->memory_info()));
    CheckCuda(launch::CopyBuffers(copies, stream), "batched copy of ", copies.count, " device buffers, the first ",
              batchable[begin]->src->Describe());
    begin = end;
  }
  return rest;
}

// Runs `queue` (which queues copies on `native`, `stream`'s CUDA stream), then keeps `kept` alive until the stream
// has passed the copies (a stream this EP made: CudaStream::KeepUntilDone) or, on a CUDA stream of another library,
// waits for them. Copies queued before a failure may still read or write the tensors: they finish first.
void QueueCopies(Stream* stream, cudaStream_t native, std::vector<Tensor> kept, const std::function<void()>& queue) {
  try {
    queue();
  } catch (...) {
    if (cudaStreamSynchronize(native) != cudaSuccess) cudaGetLastError();
    throw;
  }
  if (auto* owner = dynamic_cast<CudaStream*>(stream)) owner->KeepUntilDone(std::move(kept));
  else CheckCuda(cudaStreamSynchronize(native), "waiting for copies on a stream this EP did not create");
}

}  // namespace

bool CudaDataTransfer::CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const {
  const bool src_ok = IsCuda(src) || src.IsHostReadable();
  const bool dst_ok = IsCuda(dst) || dst.IsHostReadable();
  return (IsCuda(src) || IsCuda(dst)) && src_ok && dst_ok;
}

void CudaDataTransfer::Copy(std::span<const CopyPair> pairs, Stream* stream) {
  for (const CopyPair& pair : pairs) CheckPair(*this, *pair.src, *pair.dst);
  if (pairs.empty()) return;
  const cudaStream_t native = NativeStream(stream, "CUDA copy");
  if (stream == nullptr) {
    for (const CopyPair& pair : pairs) {
      DeviceGuard guard(DeviceOf(*pair.src, *pair.dst));
      CopyOne(*pair.src, *pair.dst, nullptr, false);
    }
    return;
  }
  std::vector<Tensor> kept;
  kept.reserve(pairs.size() * 2);
  for (const CopyPair& pair : pairs) {
    kept.push_back(*pair.src);
    kept.push_back(*pair.dst);
  }
  QueueCopies(stream, native, std::move(kept), [&] {
    for (const CopyPair* pair : QueueBatches(pairs, native)) {
      DeviceGuard guard(DeviceOf(*pair->src, *pair->dst));
      CopyOne(*pair->src, *pair->dst, native, true);
    }
  });
}

bool CudaDataTransfer::CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const {
  return CanCopy(src, dst) && !IsPeerCopy(src, dst);
}

void CudaDataTransfer::CopyRegions(std::span<const CopyRegion> regions, Stream* stream) {
  for (const CopyRegion& r : regions) {
    if (!CanCopyRegions(r.src->memory_info(), r.dst->memory_info()))
      Fail(ErrorCode::kInvalidArgument, "CUDA EP cannot copy regions of ", r.src->Describe(), " to ", r.dst->Describe());
    if (r.src->type() == DataType::kString || r.dst->type() == DataType::kString)
      Fail(ErrorCode::kInvalidArgument, "CUDA memory cannot hold string tensors (regions of ", r.src->Describe(), ")");
  }
  if (regions.empty()) return;
  const cudaStream_t native = NativeStream(stream, "CUDA region copy");
  const auto copy = [&](const CopyRegion& r, bool async) {
    if (r.rows == 0 || r.row_bytes == 0) return;
    DeviceGuard guard(DeviceOf(*r.src, *r.dst));
    void* to = static_cast<uint8_t*>(r.dst->raw_data()) + r.dst_offset;
    const void* from = static_cast<const uint8_t*>(r.src->raw_data()) + r.src_offset;
    // A single row has no pitch to speak of: cudaMemcpy2D wants pitches of at least a row's width anyway.
    const size_t dst_pitch = r.rows == 1 ? r.row_bytes : r.dst_pitch, src_pitch = r.rows == 1 ? r.row_bytes : r.src_pitch;
    const cudaError_t status =
        async ? cudaMemcpy2DAsync(to, dst_pitch, from, src_pitch, r.row_bytes, r.rows, cudaMemcpyDefault, native)
              : cudaMemcpy2D(to, dst_pitch, from, src_pitch, r.row_bytes, r.rows, cudaMemcpyDefault);
    CheckCuda(status, "copy of ", r.rows, " rows of ", r.row_bytes, " bytes from ", *r.src, " to ", *r.dst);
  };
  if (stream == nullptr) {
    for (const CopyRegion& r : regions) copy(r, false);
    // As CopyOne: the copies may have returned before the data landed.
    CheckCuda(cudaStreamSynchronize(cudaStreamLegacy), "waiting for region copies");
    return;
  }
  std::vector<Tensor> kept;
  kept.reserve(regions.size() * 2);
  for (const CopyRegion& r : regions) {
    kept.push_back(*r.src);
    kept.push_back(*r.dst);
  }
  QueueCopies(stream, native, std::move(kept), [&] {
    for (const CopyRegion& r : regions) copy(r, true);
  });
}

}  // namespace tessera::cuda
