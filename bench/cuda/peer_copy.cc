// tessera_peer_copy_bench PLUGIN [MIB]: copy bandwidth between GPU 0 and GPU 1 (issue 19). First the link's own
// figures with bare CUDA (cudaMemcpyPeerAsync before and after cudaDeviceEnablePeerAccess: staged through the
// host, then direct), then Tessera's Environment::CopyTensors between the two GPUs' memory infos on a Tessera
// stream, each direction; GB/s = bytes / time of 20 copies of MIB MiB (default 256) after 3 warm-up copies.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace {

constexpr int kCopies = 20;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// GB/s of kCopies cudaMemcpyPeerAsync of `bytes` from `src` (GPU from) to `dst` (GPU to), timed with events.
double BarePeer(void* dst, int to, const void* src, int from, size_t bytes) {
  Check(cudaSetDevice(from), "cudaSetDevice");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "cudaEventCreate");
  Check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) Check(cudaMemcpyPeerAsync(dst, to, src, from, bytes, stream), "warm-up copy");
  Check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < kCopies; ++i) Check(cudaMemcpyPeerAsync(dst, to, src, from, bytes, stream), "cudaMemcpyPeerAsync");
  Check(cudaEventRecord(stop, stream), "cudaEventRecord");
  Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return static_cast<double>(bytes) * kCopies / (ms * 1e-3) / 1e9;
}

// GB/s of kCopies Environment::CopyTensors from `src` to `dst` on a stream of `on`, timed on the host.
double TesseraCopy(tessera::Environment& env, const tessera::EpDevice& on, const tessera::Tensor& src,
                   tessera::Tensor& dst) {
  std::unique_ptr<tessera::Stream> stream = env.CreateStream(on);
  for (int i = 0; i < 3; ++i) env.CopyTensors({&src, 1}, {&dst, 1}, stream.get());
  stream->Synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCopies; ++i) env.CopyTensors({&src, 1}, {&dst, 1}, stream.get());
  stream->Synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(src.SizeInBytes()) * kCopies / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tessera_peer_copy_bench PATH/libtessera_cuda.so [MIB]\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(argc > 2 ? std::atoi(argv[2]) : 256) << 20;
  int count = 0;
  Check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 2) {
    std::printf("peer copies: this host has %d GPU(s); two are needed\n", count);
    return 0;
  }
  int can01 = 0, can10 = 0;
  Check(cudaDeviceCanAccessPeer(&can01, 0, 1), "cudaDeviceCanAccessPeer");
  Check(cudaDeviceCanAccessPeer(&can10, 1, 0), "cudaDeviceCanAccessPeer");
  void *a = nullptr, *b = nullptr;
  Check(cudaSetDevice(0), "cudaSetDevice");
  Check(cudaMalloc(&a, bytes), "cudaMalloc");
  Check(cudaSetDevice(1), "cudaSetDevice");
  Check(cudaMalloc(&b, bytes), "cudaMalloc");
  std::printf("copy of %zu MiB, %d copies; peer access possible: 0->1 %d, 1->0 %d\n", bytes >> 20, kCopies, can01,
              can10);
  std::printf("bare CUDA, peer access not enabled: 0->1 %.1f GB/s, 1->0 %.1f GB/s\n", BarePeer(b, 1, a, 0, bytes),
              BarePeer(a, 0, b, 1, bytes));
  if (can01 && can10) {
    Check(cudaSetDevice(0), "cudaSetDevice");
    Check(cudaDeviceEnablePeerAccess(1, 0), "cudaDeviceEnablePeerAccess");
    Check(cudaSetDevice(1), "cudaSetDevice");
    Check(cudaDeviceEnablePeerAccess(0, 0), "cudaDeviceEnablePeerAccess");
    std::printf("bare CUDA, peer access enabled:     0->1 %.1f GB/s, 1->0 %.1f GB/s\n", BarePeer(b, 1, a, 0, bytes),
                BarePeer(a, 0, b, 1, bytes));
  }
  cudaFree(a);
  cudaFree(b);

  tessera::Environment env;
  env.RegisterEpLibrary("cuda", argv[1]);
  std::vector<const tessera::EpDevice*> gpus;
  for (const tessera::EpDevice* d : env.GetEpDevices())
    if (d->ep_name == "CUDAExecutionProvider") gpus.push_back(d);
  const int64_t elements = static_cast<int64_t>(bytes / sizeof(float));
  tessera::Tensor t0 = tessera::Tensor::Allocate(tessera::DataType::kFloat, tessera::Shape({elements}),
                                                 env.CreateSharedAllocator(*gpus[0], tessera::MemoryType::kDefault, nullptr));
  tessera::Tensor t1 = tessera::Tensor::Allocate(tessera::DataType::kFloat, tessera::Shape({elements}),
                                                 env.CreateSharedAllocator(*gpus[1], tessera::MemoryType::kDefault, nullptr));
  std::printf("Tessera CopyTensors on a stream:   0->1 %.1f GB/s, 1->0 %.1f GB/s (GPU 0 peers: '%s')\n",
              TesseraCopy(env, *gpus[0], t0, t1), TesseraCopy(env, *gpus[1], t1, t0),
              gpus[0]->device->metadata.count("peer_access") ? gpus[0]->device->metadata.at("peer_access").c_str() : "?");
  return 0;
}
