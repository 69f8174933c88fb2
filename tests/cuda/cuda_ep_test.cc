// The CUDA EP plugin's device-facing pieces: discovery, memory, copies, streams, events, options.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <fstream>
#include <numeric>

#include "cuda/cuda_test_util.h"

namespace tessera::test {
namespace {

using CudaEpTest = CudaTest;

std::vector<float> Iota(size_t n, float start = 0.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

cudaMemoryType PointerKind(const void* p) {
  cudaPointerAttributes attributes{};
  EXPECT_EQ(cudaPointerGetAttributes(&attributes, p), cudaSuccess);
  return attributes.type;
}

std::string ErrorOf(const std::function<void()>& fn, ErrorCode expected_code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected_code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST_F(CudaEpTest, DiscoversEveryGpuWithPciIdsAndMetadata) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  std::vector<const HardwareDevice*> gpus;
  for (const HardwareDevice* d : TestEnv().GetHardwareDevices())
    if (d->type == DeviceType::kGpu && d->vendor_id == 0x10de) gpus.push_back(d);
  ASSERT_EQ(static_cast<int>(gpus.size()), count);
  for (const HardwareDevice* gpu : gpus) {
    cudaDeviceProp props{};
    ASSERT_EQ(cudaGetDeviceProperties(&props, static_cast<int>(gpu->ordinal)), cudaSuccess);
    EXPECT_EQ(gpu->metadata.at("name"), props.name);
    EXPECT_EQ(gpu->metadata.at("memory_bytes"), std::to_string(props.totalGlobalMem));
    EXPECT_EQ(gpu->metadata.at("compute_capability"), std::to_string(props.major) + "." + std::to_string(props.minor));
    std::string bus = gpu->metadata.at("pci_bus_id");
    for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::ifstream sysfs("/sys/bus/pci/devices/" + bus + "/device");
    if (sysfs) {
      std::string product;
      sysfs >> product;
      EXPECT_EQ(gpu->device_id, std::stoul(product, nullptr, 16)) << bus;
      EXPECT_NE(gpu->device_id, 0u);
    }
    std::cout << "GPU " << gpu->ordinal << ": " << gpu->metadata.at("name") << " pci " << bus << " product 0x"
              << std::hex << gpu->device_id << std::dec << " cc " << gpu->metadata.at("compute_capability") << "\n";
  }
}

TEST_F(CudaEpTest, EpDeviceDescribesDeviceAndPinnedMemory) {
  const EpDevice& device = CudaDevice();
  EXPECT_EQ(device.ep_name, "CUDAExecutionProvider");
  const MemoryInfo& memory = device.device_memory;
  EXPECT_EQ(memory.name, "Cuda");
  EXPECT_EQ(memory.device_type, DeviceType::kGpu);
  EXPECT_EQ(memory.vendor_id, 0x10deu);
  EXPECT_EQ(memory.device_id, device.device->ordinal);
  EXPECT_EQ(memory.memory_type, MemoryType::kDefault);
  EXPECT_EQ(memory.alignment, 256u);
  ASSERT_TRUE(device.host_accessible_memory.has_value());
  EXPECT_EQ(device.host_accessible_memory->name, "CudaPinned");
  EXPECT_EQ(device.host_accessible_memory->memory_type, MemoryType::kHostAccessible);
  EXPECT_TRUE(device.host_accessible_memory->IsHostReadable());
  EXPECT_FALSE(memory.IsHostReadable());
}

TEST_F(CudaEpTest, AllocatorsHandOutDeviceAndPinnedMemory) {
  AllocatorPtr raw = CudaFactory().CreateAllocator(CudaDevice().device_memory);
  ASSERT_NE(raw, nullptr);
  void* p = raw->Allocate(1000);
  EXPECT_EQ(PointerKind(p), cudaMemoryTypeDevice);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_GE(raw->Stats().bytes_in_use, 1000u);
  raw->Free(p);
  EXPECT_EQ(raw->Stats().bytes_in_use, 0u);
  void* zero = raw->Allocate(0);
  EXPECT_NE(zero, nullptr);
  raw->Free(zero);

  AllocatorPtr pinned = CudaFactory().CreateAllocator(*CudaDevice().host_accessible_memory);
  float* host = static_cast<float*>(pinned->Allocate(64 * sizeof(float)));
  EXPECT_EQ(PointerKind(host), cudaMemoryTypeHost);
  host[63] = 1.5f;  // host-readable and writable
  EXPECT_EQ(host[63], 1.5f);
  pinned->Free(host);
  EXPECT_EQ(CudaFactory().CreateAllocator(MemoryInfo::Host()), nullptr);
}

TEST_F(CudaEpTest, ImpossibleAllocationIsOutOfMemoryNamingGpuAndSize) {
  AllocatorPtr raw = CudaFactory().CreateAllocator(CudaDevice().device_memory);
  const std::string message = ErrorOf([&] { raw->Allocate(size_t{1} << 50); }, ErrorCode::kOutOfMemory);
  EXPECT_NE(message.find("1125899906842624 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("GPU 0"), std::string::npos) << message;
  EXPECT_NE(message.find("cudaMalloc"), std::string::npos) << message;
  void* p = raw->Allocate(4096);  // the allocator (and CUDA) still work
  raw->Free(p);
}

TEST_F(CudaEpTest, ArenaOverCudaHonoursItsLimit) {
  ArenaOptions options;
  options.max_bytes = size_t{4} << 20;
  Arena arena(CudaFactory().CreateAllocator(CudaDevice().device_memory), options);
  void* a = arena.Allocate(size_t{2} << 20);
  EXPECT_THROW(arena.Allocate(size_t{8} << 20), Error);
  arena.Free(a);
  void* b = arena.Allocate(size_t{3} << 20);
  EXPECT_EQ(PointerKind(b), cudaMemoryTypeDevice);
  arena.Free(b);
}

TEST_F(CudaEpTest, CopiesRoundTripSynchronously) {
  const Tensor host = Tensor::FromVector<float>({4, 5}, Iota(20, -3.0f));
  Tensor device = ToCuda(host);
  EXPECT_EQ(device.memory_info(), CudaDevice().device_memory);
  Tensor device2 = Tensor::Allocate(DataType::kFloat, host.shape(), CudaDeviceAllocator());
  TestEnv().CopyTensors({&device, 1}, {&device2, 1}, nullptr);  // device -> device
  Tensor pinned = Tensor::Allocate(DataType::kFloat, host.shape(), CudaPinnedAllocator());
  TestEnv().CopyTensors({&device2, 1}, {&pinned, 1}, nullptr);  // device -> pinned
  EXPECT_EQ(pinned.ToVector<float>(), host.ToVector<float>());
  Tensor device3 = Tensor::Allocate(DataType::kFloat, host.shape(), CudaDeviceAllocator());
  TestEnv().CopyTensors({&pinned, 1}, {&device3, 1}, nullptr);  // pinned -> device
  EXPECT_EQ(ToHost(device3).ToVector<float>(), host.ToVector<float>());
}

TEST_F(CudaEpTest, CopiesOnAStreamArriveAfterSynchronize) {
  std::unique_ptr<Stream> stream = TestEnv().CreateStream(CudaDevice());
  ASSERT_NE(stream, nullptr);
  EXPECT_NE(stream->native_handle(), nullptr);
  EXPECT_EQ(stream->memory_info(), CudaDevice().device_memory);
  constexpr int64_t kCount = 1 << 22;  // 16 MiB: long enough for the copies to be truly asynchronous
  Tensor back = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
  {
    // The source tensors go out of scope before the stream has run: the transfer keeps them alive.
    Tensor pinned = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
    float* values = pinned.Data<float>();
    for (int64_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(i % 1000);
    Tensor device = Tensor::Allocate(DataType::kFloat, {kCount}, CudaDeviceAllocator());
    TestEnv().CopyTensors({&pinned, 1}, {&device, 1}, stream.get());
    TestEnv().CopyTensors({&device, 1}, {&back, 1}, stream.get());
  }
  stream->Synchronize();
  const float* out = back.Data<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < kCount; ++i) wrong += out[i] != static_cast<float>(i % 1000);
  EXPECT_EQ(wrong, 0);
}

// Many copies within the GPU's memory in one CopyTensors on a stream: those of at most 4 MiB go as batched copy
// launches (48 per launch; 16-byte words where addresses and sizes allow, bytes otherwise), larger ones by
// cudaMemcpyAsync; every byte arrives, and each source is read where it is (a view at an odd offset included).
TEST_F(CudaEpTest, ManyDeviceCopiesOnAStreamArriveExactly) {
  std::unique_ptr<Stream> stream = TestEnv().CreateStream(CudaDevice());
  std::vector<int64_t> sizes = {1, 3, 15, 16, 17, 4096, 100003, int64_t{1} << 20, int64_t{4} << 20, (int64_t{4} << 20) + 16};
  for (int i = 0; i < 60; ++i) sizes.push_back(16 * (i + 1) + (i % 3));  // more than one launch's worth
  std::vector<Tensor> expected, sources, targets;
  uint32_t state = 7;
  for (size_t c = 0; c < sizes.size(); ++c) {
    std::vector<uint8_t> bytes(static_cast<size_t>(sizes[c]));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    Tensor host = Tensor::FromVector<uint8_t>({sizes[c]}, bytes);
    if (c == 6) {  // a view one byte into a device buffer: neither address nor size a multiple of 16
      Tensor base = Tensor::Allocate(DataType::kUInt8, {sizes[c] + 1}, CudaDeviceAllocator());
      Tensor view = Tensor::Share(DataType::kUInt8, {sizes[c]}, base.buffer(), static_cast<char*>(base.raw_data()) + 1,
                                  static_cast<size_t>(sizes[c]), base.memory_info());
      TestEnv().CopyTensors({&host, 1}, {&view, 1}, nullptr);
      sources.push_back(view);
    } else {
      sources.push_back(ToCuda(host));
    }
    expected.push_back(host);
    targets.push_back(Tensor::Allocate(DataType::kUInt8, {sizes[c]}, CudaDeviceAllocator()));
  }
  TestEnv().CopyTensors(sources, targets, stream.get());
  stream->Synchronize();
  for (size_t c = 0; c < sizes.size(); ++c)
    EXPECT_EQ(ToHost(targets[c]).ToVector<uint8_t>(), expected[c].ToVector<uint8_t>()) << "copy " << c << " of "
                                                                                        << sizes[c] << " bytes";
}

// An application's cudaEvent orders a Tessera stream's later work (Stream::WaitNative), and a Tessera event's native
// point orders the application's own stream (Event::native_point): upload (application) -> copy (Tessera) ->
// download (application), no host wait between them. The 64 MiB upload takes milliseconds: a copy that did not
// wait for it would read stale data.
TEST_F(CudaEpTest, NativeSyncPointsOrderApplicationAndTesseraStreams) {
  constexpr int64_t kCount = int64_t{1} << 24;
  cudaStream_t app = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t uploaded = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming), cudaSuccess);
  Tensor source = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
  for (int64_t i = 0; i < kCount; ++i) source.Data<float>()[i] = static_cast<float>(i % 1013);
  Tensor x = Tensor::Allocate(DataType::kFloat, {kCount}, CudaDeviceAllocator());
  Tensor y = Tensor::Allocate(DataType::kFloat, {kCount}, CudaDeviceAllocator());
  // On the application's (non-blocking) stream: a cudaMemset on the legacy stream is not ordered before the upload.
  ASSERT_EQ(cudaMemsetAsync(x.raw_data(), 0, x.SizeInBytes(), app), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(x.raw_data(), source.raw_data(), x.SizeInBytes(), cudaMemcpyHostToDevice, app), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(uploaded, app), cudaSuccess);
  std::unique_ptr<Stream> stream = TestEnv().CreateStream(CudaDevice());
  stream->WaitNative({uploaded, 0});
  TestEnv().CopyTensors({&x, 1}, {&y, 1}, stream.get());
  std::unique_ptr<Event> copied = stream->CreateEvent();
  copied->Record(*stream);
  const NativeSyncPoint point = copied->native_point();
  ASSERT_NE(point.handle, nullptr);
  ASSERT_EQ(cudaStreamWaitEvent(app, static_cast<cudaEvent_t>(point.handle), 0), cudaSuccess);
  Tensor back = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
  ASSERT_EQ(cudaMemcpyAsync(back.raw_data(), y.raw_data(), y.SizeInBytes(), cudaMemcpyDeviceToHost, app), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(app), cudaSuccess);
  int64_t wrong = 0;
  for (int64_t i = 0; i < kCount; ++i) wrong += back.Data<float>()[i] != static_cast<float>(i % 1013);
  EXPECT_EQ(wrong, 0);
  const std::string error = ErrorOf([&] { stream->WaitNative({}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(error.find("cudaEvent_t"), std::string::npos) << error;
  stream->Synchronize();
  cudaEventDestroy(uploaded);
  cudaStreamDestroy(app);
}

TEST_F(CudaEpTest, EventsOrderWorkAcrossStreams) {
  std::unique_ptr<Stream> producer = TestEnv().CreateStream(CudaDevice());
  std::unique_ptr<Stream> consumer = TestEnv().CreateStream(CudaDevice());
  constexpr int64_t kCount = 1 << 23;
  Tensor source = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
  float* values = source.Data<float>();
  for (int64_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(i % 977);
  Tensor a = Tensor::Allocate(DataType::kFloat, {kCount}, CudaDeviceAllocator());
  Tensor b = Tensor::Allocate(DataType::kFloat, {kCount}, CudaDeviceAllocator());
  Tensor result = Tensor::Allocate(DataType::kFloat, {kCount}, CudaPinnedAllocator());
  TestEnv().CopyTensors({&source, 1}, {&a, 1}, producer.get());
  TestEnv().CopyTensors({&a, 1}, {&b, 1}, producer.get());
  std::unique_ptr<Event> done = producer->CreateEvent();
  done->Record(*producer);
  done->Wait(*consumer);
  TestEnv().CopyTensors({&b, 1}, {&result, 1}, consumer.get());
  consumer->Synchronize();
  int64_t wrong = 0;
  for (int64_t i = 0; i < kCount; ++i) wrong += result.Data<float>()[i] != static_cast<float>(i % 977);
  EXPECT_EQ(wrong, 0);
  done->Synchronize();
  producer->CreateEvent()->Synchronize();  // a never-recorded event is complete
}

TEST_F(CudaEpTest, TransferRejectsPairsItCannotCopy) {
  std::unique_ptr<DataTransfer> transfer = CudaFactory().CreateDataTransfer();
  const MemoryInfo device = CudaDevice().device_memory;
  EXPECT_TRUE(transfer->CanCopy(MemoryInfo::Host(), device));
  EXPECT_TRUE(transfer->CanCopy(device, MemoryInfo::Host()));
  EXPECT_TRUE(transfer->CanCopy(device, device));
  EXPECT_TRUE(transfer->CanCopy(*CudaDevice().host_accessible_memory, device));
  EXPECT_FALSE(transfer->CanCopy(MemoryInfo::Host(), MemoryInfo::Host()));
  const Tensor host = Tensor::FromVector<float>({3}, {1, 2, 3});
  Tensor wrong = Tensor::Allocate(DataType::kFloat, {4}, CudaDeviceAllocator());
  CopyPair pair{&host, &wrong};
  ErrorOf([&] { transfer->Copy({&pair, 1}, nullptr); }, ErrorCode::kInvalidArgument);
}

TEST_F(CudaEpTest, ProviderOptionsAreValidatedNamingTheKey) {
  const ProviderOptions all = {{"device_id", std::to_string(CudaDevice().device->ordinal)},
                               {"gpu_mem_limit", "1073741824"},
                               {"arena_extend_strategy", "kSameAsRequested"},
                               {"cudnn_conv_algo_search", "HEURISTIC"},
                               {"do_copy_in_default_stream", "1"},
                               {"cudnn_conv_use_max_workspace", "0"},
                               {"cudnn_conv1d_pad_to_nc1d", "1"},
                               {"enable_cuda_graph", "0"},
                               {"enable_skip_layer_norm_strict_mode", "0"},
                               {"use_tf32", "0"},
                               {"prefer_nhwc", "0"},
                               {"library_warmup", "0"}};
  EXPECT_NE(CudaFactory().CreateEp(CudaDevice(), all), nullptr);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"no_such_option", "1"},         {"device_id", "-1"},           {"device_id", "99"},
      {"gpu_mem_limit", "lots"},       {"arena_extend_strategy", "x"}, {"cudnn_conv_algo_search", "FAST"},
      {"do_copy_in_default_stream", "2"}, {"use_tf32", "yes"},        {"user_compute_stream", "0xzz"},
      {"prefer_nhwc", ""},                {"library_warmup", "2"}};
  for (const auto& [key, value] : bad) {
    const std::string message =
        ErrorOf([&] { CudaFactory().CreateEp(CudaDevice(), {{key, value}}); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find(key), std::string::npos) << message;
  }
  // Through a session too.
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"cudnn_conv_algo_search", "SLOW"}});
  OpTester relu("Relu");
  relu.Input("X", RandomTensor(DataType::kFloat, {2}, 1)).OutputName("Y");
  const std::string model = relu.SerializedModel();
  const std::string message =
      ErrorOf([&] { Session(TestEnv(), model.data(), model.size(), options); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("cudnn_conv_algo_search"), std::string::npos) << message;
}

// The first CUDA EP of a process starts cuDNN's and cuBLASLt's warm-up calls on threads of its own (ctest runs
// each test in a process of its own, so this test's first session is that EP): a session destroyed while they may
// still run waits for them, and the sessions after it -- convolution and product, with the warm-up on and off --
// give the CPU EP's results.
TEST_F(CudaEpTest, LibraryWarmupLeavesTheLibrariesToTheSessions) {
  OpTester conv("Conv", 11);
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 12, 12}, 31);
  conv.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.Input("X", x).Input("W", RandomTensor(DataType::kFloat, {4, 3, 3, 3}, 32), true).OutputName("Y");
  const std::string conv_model = conv.SerializedModel();
  { Session first(TestEnv(), conv_model.data(), conv_model.size(), SessionOptions{}); }  // gone during the warm-up
  const std::vector<Tensor> expected = conv.RunOn("cpu");
  for (const char* warmup : {"1", "0"}) {
    const std::vector<Tensor> actual =
        RunOnCuda(conv_model, {{"X", x}}, {{"library_warmup", warmup}, {"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "") << "library_warmup " << warmup;
  }
  OpTester matmul("MatMul", 13);
  const Tensor a = RandomTensor(DataType::kFloat, {16, 32}, 33), b = RandomTensor(DataType::kFloat, {32, 24}, 34);
  matmul.Input("A", a).Input("B", b, true).OutputName("Y");
  const std::vector<Tensor> product = matmul.RunOn("cpu");
  const std::vector<Tensor> actual = RunOnCuda(matmul.SerializedModel(), {{"A", a}}, {{"use_tf32", "0"}});
  EXPECT_EQ(CompareTensors(product[0], actual[0], 1e-4, 1e-4), "");
}

// Runs Relu through a session whose EP computes on `user`; synchronizing `user` alone makes the result
// ready.
void RunReluOnUserStream(cudaStream_t user, const ProviderOptions& options) {
  OpTester relu("Relu");
  const Tensor x = RandomTensor(DataType::kFloat, {64, 64}, 7);
  relu.Input("X", x).OutputName("Y");
  const std::string model = relu.SerializedModel();
  SessionOptions session_options;
  session_options.AddProvider(kCudaEpName, options);
  Session session(TestEnv(), model.data(), model.size(), session_options);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("X", ToCuda(x));
  binding.BindOutput("Y", CudaDevice().device_memory);
  RunOptions async;
  async.synchronize = false;
  session.Run(binding, async);
  ASSERT_EQ(cudaStreamSynchronize(user), cudaSuccess);
  std::vector<float> expected;
  for (float v : x.Span<float>()) expected.push_back(std::max(v, 0.0f));
  EXPECT_EQ(ToHost(binding.BoundOutputs()[0].tensor()).ToVector<float>(), expected);
}

TEST_F(CudaEpTest, UserComputeStreamIsUsedWithoutBeingOwned) {
  cudaStream_t user = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
  const ProviderOptions options = {{"user_compute_stream", std::to_string(reinterpret_cast<uintptr_t>(user))}};
  {
    std::unique_ptr<ExecutionProvider> ep = CudaFactory().CreateEp(CudaDevice(), options);
    std::unique_ptr<Stream> stream = ep->CreateStream();
    EXPECT_EQ(stream->native_handle(), static_cast<void*>(user));
  }
  EXPECT_EQ(cudaStreamQuery(user), cudaSuccess);  // the wrapper did not destroy the stream
  RunReluOnUserStream(user, options);
  EXPECT_EQ(cudaStreamDestroy(user), cudaSuccess);
}

}  // namespace
}  // namespace tessera::test
