// The simulated device EP: hardware and memory descriptions, protected device memory, stream and
// event ordering, copies, provider options, and its kernels through one-node models.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "ops/op_tester.h"
#include "providers/testing/testing_stream.h"
#include "test_env.h"

namespace tessera {
namespace {

using test::TestEnv;

constexpr uint32_t kSimulatedVendor = 0xFFFE;

const EpDevice& TestingDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == test::kTestingEpName) return *d;
  throw Error(ErrorCode::kNotImplemented, "testing EP device not registered");
}

EpFactory& Factory() { return *TestingDevice().factory; }

std::unique_ptr<Stream> NewStream() { return Factory().CreateStream(TestingDevice().device_memory); }

testing_ep::TestingQueue& QueueOf(Stream& stream) {
  return *static_cast<testing_ep::TestingQueue*>(stream.native_handle());
}

// A device tensor from a fresh raw device allocator (kept alive by the tensor's buffer).
Tensor DeviceTensor(const Shape& shape) {
  return Tensor::Allocate(DataType::kFloat, shape, Factory().CreateAllocator(TestingDevice().device_memory));
}

std::vector<float> Iota(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

void CopySync(DataTransfer& transfer, const Tensor& src, Tensor& dst, Stream* stream = nullptr) {
  const CopyPair pair{&src, &dst};
  transfer.Copy({&pair, 1}, stream);
}

TEST(TestingEpTest, DiscoversOneSimulatedDevice) {
  int found = 0;
  for (const HardwareDevice* d : TestEnv().GetHardwareDevices()) {
    if (d->vendor_id != kSimulatedVendor) continue;
    ++found;
    EXPECT_EQ(d->type, DeviceType::kNpu);
    EXPECT_EQ(d->device_id, 0x0001u);
    EXPECT_EQ(d->vendor, "Tessera Simulated");
    EXPECT_EQ(d->metadata.at("name"), "Tessera simulated device");
    EXPECT_GT(std::stoull(d->metadata.at("memory_bytes")), 0u);
  }
  EXPECT_EQ(found, 1);
}

TEST(TestingEpTest, EpDeviceDescribesItsMemories) {
  const EpDevice& d = TestingDevice();
  ASSERT_NE(d.device, nullptr);
  EXPECT_EQ(d.device->vendor_id, kSimulatedVendor);
  EXPECT_EQ(d.device_memory.name, "Testing");
  EXPECT_EQ(d.device_memory.device_type, DeviceType::kNpu);
  EXPECT_EQ(d.device_memory.vendor_id, kSimulatedVendor);
  EXPECT_EQ(d.device_memory.device_id, 0u);
  EXPECT_EQ(d.device_memory.memory_type, MemoryType::kDefault);
  EXPECT_EQ(d.device_memory.alignment, 64u);
  EXPECT_FALSE(d.device_memory.IsHostReadable());
  ASSERT_TRUE(d.host_accessible_memory.has_value());
  EXPECT_EQ(d.host_accessible_memory->name, "TestingHostAccessible");
  EXPECT_EQ(d.host_accessible_memory->memory_type, MemoryType::kHostAccessible);
  EXPECT_EQ(d.host_accessible_memory->vendor_id, kSimulatedVendor);
  EXPECT_TRUE(d.host_accessible_memory->IsHostReadable());
  EXPECT_EQ(Factory().CreateAllocator(MemoryInfo::Host()), nullptr);
}

TEST(TestingEpDeathTest, HostCannotReadDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor device = DeviceTensor({16});
  const auto* p = static_cast<const volatile float*>(device.raw_data());
  EXPECT_DEATH({ [[maybe_unused]] float x = p[0]; }, "");
}

TEST(TestingEpTest, CanCopyOnlyPairsWithItsMemory) {
  auto transfer = Factory().CreateDataTransfer();
  const MemoryInfo host = MemoryInfo::Host();
  const MemoryInfo device = TestingDevice().device_memory;
  const MemoryInfo pinned = *TestingDevice().host_accessible_memory;
  MemoryInfo other_gpu{"Other", DeviceType::kGpu, 0x10de, 0, MemoryType::kDefault, 256, AllocatorType::kArena};
  EXPECT_TRUE(transfer->CanCopy(host, device));
  EXPECT_TRUE(transfer->CanCopy(device, host));
  EXPECT_TRUE(transfer->CanCopy(device, device));
  EXPECT_TRUE(transfer->CanCopy(pinned, device));
  EXPECT_TRUE(transfer->CanCopy(device, pinned));
  EXPECT_FALSE(transfer->CanCopy(host, host));
  EXPECT_FALSE(transfer->CanCopy(other_gpu, device));
  EXPECT_FALSE(transfer->CanCopy(device, other_gpu));
}

TEST(TestingEpTest, SynchronousCopiesRoundTrip) {
  auto transfer = Factory().CreateDataTransfer();
  const Tensor source = Tensor::FromVector<float>({2, 3}, Iota(6, 1.0f));
  Tensor device_a = DeviceTensor({2, 3});
  Tensor device_b = DeviceTensor({2, 3});
  Tensor back = Tensor::Allocate(DataType::kFloat, {2, 3});
  CopySync(*transfer, source, device_a);
  CopySync(*transfer, device_a, device_b);
  CopySync(*transfer, device_b, back);
  EXPECT_EQ(back.ToVector<float>(), Iota(6, 1.0f));
}

TEST(TestingEpTest, AsyncCopiesOnAStreamArriveAfterSynchronize) {
  auto transfer = Factory().CreateDataTransfer();
  auto stream = NewStream();
  ASSERT_NE(stream, nullptr);
  constexpr size_t n = 1 << 20;
  const Tensor source = Tensor::FromVector<float>({static_cast<int64_t>(n)}, Iota(n, 0.5f));
  auto pinned_allocator = Factory().CreateAllocator(*TestingDevice().host_accessible_memory);
  Tensor pinned = Tensor::Allocate(DataType::kFloat, {static_cast<int64_t>(n)}, pinned_allocator);
  Tensor device_a = DeviceTensor({static_cast<int64_t>(n)});
  Tensor device_b = DeviceTensor({static_cast<int64_t>(n)});
  Tensor back = Tensor::Allocate(DataType::kFloat, {static_cast<int64_t>(n)});
  std::fill(back.Data<float>(), back.Data<float>() + n, 0.0f);
  std::atomic<bool> release{false};
  QueueOf(*stream).Enqueue([&] {
    while (!release) std::this_thread::yield();
  });
  CopySync(*transfer, source, device_a, stream.get());
  CopySync(*transfer, device_a, device_b, stream.get());
  CopySync(*transfer, device_b, pinned, stream.get());
  CopySync(*transfer, pinned, back, stream.get());
  EXPECT_NE(back.Data<float>()[n - 1], source.Data<float>()[n - 1]) << "copies were queued, not done inline";
  release = true;
  stream->Synchronize();
  EXPECT_EQ(back.ToVector<float>(), source.ToVector<float>());
}

TEST(TestingEpTest, EventsOrderWorkAcrossStreams) {
  auto a = NewStream();
  auto b = NewStream();
  auto event = a->CreateEvent();
  int produced = 0;
  int seen = -1;
  QueueOf(*a).Enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    produced = 42;
  });
  event->Record(*a);
  event->Wait(*b);
  QueueOf(*b).Enqueue([&] { seen = produced; });
  b->Synchronize();
  EXPECT_EQ(seen, 42);
  a->Synchronize();
}

// A graph recording spreads to a stream that waits for one of its events (as a CUDA stream capture does). That
// stream's work enters the recording only where another stream waits for an event recorded after it, as late as
// the recorded dependencies allow: a reader that waits sees the side stream's copy, one that does not replays against
// the stale value (what a missing wait risks on a real device), and side-stream work that no stream of the
// recording waits for fails EndCapture (CUDA's unjoined capture).
TEST(TestingEpTest, RecordingsPlaceSideStreamWorkWhereItIsWaitedFor) {
  auto ep = Factory().CreateEp(TestingDevice(), {});
  DataTransfer& transfer = *ep->data_transfer();
  auto main = ep->CreateStream();
  auto side = ep->CreateStream();
  const Tensor values = Tensor::FromVector<float>({4}, {1.0f, 2.0f, 3.0f, 4.0f});
  const Tensor zeros = Tensor::FromVector<float>({4}, {0.0f, 0.0f, 0.0f, 0.0f});
  Tensor x = DeviceTensor({4}), y = DeviceTensor({4}), w = DeviceTensor({4});
  CopySync(transfer, values, x);
  int key = 0;
  for (const bool reader_waits : {true, false}) {
    ep->BeginCapture(*main, ++key);
    auto fork = main->CreateEvent();
    fork->Record(*main);
    fork->Wait(*side);
    CopySync(transfer, x, y, side.get());  // y = x on the side stream
    auto copied = side->CreateEvent();
    copied->Record(*side);
    if (reader_waits) copied->Wait(*main);
    CopySync(transfer, y, w, main.get());  // w = y on the main stream
    if (!reader_waits) copied->Wait(*main);  // joined back only at the end
    ep->EndCapture(*main, key);
    CopySync(transfer, zeros, y);
    CopySync(transfer, zeros, w);
    ep->ReplayGraph(*main, key);
    main->Synchronize();
    Tensor seen = Tensor::Allocate(DataType::kFloat, {4});
    CopySync(transfer, w, seen);
    EXPECT_EQ(seen.ToVector<float>(), (reader_waits ? values : zeros).ToVector<float>())
        << (reader_waits ? "the reader waited for the side stream's copy" : "the reader did not wait");
    ep->ReleaseGraph(key);
  }
  ep->BeginCapture(*main, ++key);
  auto fork = main->CreateEvent();
  fork->Record(*main);
  fork->Wait(*side);
  CopySync(transfer, x, y, side.get());  // never waited for
  EXPECT_THROW(ep->EndCapture(*main, key), Error);
}

TEST(TestingEpTest, EventSynchronizeBlocksTheHostUntilTheRecordedPoint) {
  auto stream = NewStream();
  auto event = stream->CreateEvent();
  event->Synchronize();  // never recorded: complete
  std::atomic<int> done{0};
  QueueOf(*stream).Enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done = 1;
  });
  event->Record(*stream);
  QueueOf(*stream).Enqueue([&] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  event->Synchronize();
  EXPECT_EQ(done.load(), 1);
  stream->Synchronize();
}

TEST(TestingEpTest, DeviceErrorIsRethrownAtTheNextSynchronize) {
  auto stream = NewStream();
  int after = 0;
  QueueOf(*stream).Enqueue([] { throw Error(ErrorCode::kRuntime, "simulated device fault"); });
  QueueOf(*stream).Enqueue([&] { after = 1; });
  try {
    stream->Synchronize();
    FAIL() << "expected the device error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("simulated device fault"), std::string::npos);
  }
  EXPECT_EQ(after, 1) << "the queue keeps running after an error";
  EXPECT_NO_THROW(stream->Synchronize()) << "an error is reported once";
}

TEST(TestingEpTest, UnknownProviderOptionIsRejectedByName) {
  try {
    Factory().CreateEp(TestingDevice(), {{"no_such_option", "1"}});
    FAIL() << "expected kInvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no_such_option"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Factory().CreateEp(TestingDevice(), {{"memory_limit_bytes", "lots"}}), Error);
}

TEST(TestingEpTest, ExecutionProviderDescribesItself) {
  auto ep = Factory().CreateEp(TestingDevice(), {});
  EXPECT_EQ(ep->type(), test::kTestingEpName);
  EXPECT_EQ(ep->memory_info(), TestingDevice().device_memory);
  EXPECT_EQ(ep->allocator(MemoryType::kDefault)->Info(), TestingDevice().device_memory);
  EXPECT_EQ(ep->allocator(MemoryType::kHostAccessible)->Info(), *TestingDevice().host_accessible_memory);
  ASSERT_NE(ep->data_transfer(), nullptr);
  EXPECT_NE(ep->CreateStream(), nullptr);
  for (const char* op : {"Add", "Mul", "Relu", "MatMul"}) EXPECT_TRUE(ep->kernels().HasOp(op, "")) << op;
}

TEST(TestingEpTest, FailAllocationsAfterThrowsOutOfMemory) {
  auto ep = Factory().CreateEp(TestingDevice(), {{"fail_allocations_after", "2"}});
  AllocatorPtr allocator = ep->allocator(MemoryType::kDefault);
  void* a = allocator->Allocate(100);
  void* b = allocator->Allocate(100);
  try {
    allocator->Allocate(100);
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
  }
  allocator->Free(a);
  allocator->Free(b);
}

TEST(TestingEpTest, MemoryLimitCapsTheArena) {
  auto ep = Factory().CreateEp(TestingDevice(), {{"memory_limit_bytes", "1048576"}});
  AllocatorPtr allocator = ep->allocator(MemoryType::kDefault);
  void* small = allocator->Allocate(512 * 1024);
  EXPECT_THROW(allocator->Allocate(1 << 20), Error);
  allocator->Free(small);
  void* whole = allocator->Allocate(1 << 20);
  allocator->Free(whole);
}

// ---- kernels through one-node models --------------------------------------------------------------

// task_delay_us makes a slower device: every task its streams run waits first (a lower bound, never flaky).
TEST(TestingEpTest, TaskDelaySlowsEveryTaskOfItsStreams) {
  auto ep = Factory().CreateEp(TestingDevice(), {{"task_delay_us", "2000"}});
  std::unique_ptr<Stream> stream = ep->CreateStream();
  std::atomic<int> ran{0};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) QueueOf(*stream).Enqueue([&] { ran.fetch_add(1); });
  stream->Synchronize();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::microseconds(6000));
  EXPECT_THROW(Factory().CreateEp(TestingDevice(), {{"task_delay_us", "-1"}}), Error);
  EXPECT_THROW(Factory().CreateEp(TestingDevice(), {{"task_delay_us", "soon"}}), Error);
}

TEST(TestingEpKernelTest, AddBroadcasts) {
  test::OpTester t("Add", 14);
  t.Input("A", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  t.Input("B", Tensor::FromVector<float>({3}, {10, 20, 30}));
  t.Output("C", Tensor::FromVector<float>({2, 3}, {11, 22, 33, 14, 25, 36}));
  t.Run({"testing"});
}

// Without CPU fallback the node must run on the device, and since device kernels reject host memory
// a correct result also shows that the session copied the feeds in and the output out.
TEST(TestingEpKernelTest, AddRunsOnTheDevice) {
  test::OpTester t("Add", 14);
  t.Input("A", Tensor::FromVector<float>({3}, {1, 2, 3}));
  t.Input("B", Tensor::FromVector<float>({1}, {0.5f}));
  t.OutputName("C");
  const std::string model = t.SerializedModel();
  SessionOptions options = test::OptionsFor("testing");
  options.disable_cpu_fallback = true;
  Session session(TestEnv(), model.data(), model.size(), options);
  int device_nodes = 0;
  for (const PartitionEntry& entry : session.Partition())
    if (!entry.is_copy && entry.ep == test::kTestingEpName) ++device_nodes;
  EXPECT_EQ(device_nodes, 1);
  const std::vector<Value> out =
      session.Run({{"A", Tensor::FromVector<float>({3}, {1, 2, 3})}, {"B", Tensor::FromVector<float>({1}, {0.5f})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
}

TEST(TestingEpKernelTest, MulBroadcastsBothWays) {
  test::OpTester t("Mul", 14);
  t.Input("A", Tensor::FromVector<float>({2, 1}, {2, 3}));
  t.Input("B", Tensor::FromVector<float>({1, 3}, {1, 10, 100}));
  t.Output("C", Tensor::FromVector<float>({2, 3}, {2, 20, 200, 3, 30, 300}));
  t.Run({"testing"});
}

TEST(TestingEpKernelTest, MulMatchesCpuOnRandomBroadcast) {
  test::OpTester t("Mul", 14);
  t.Input("A", test::RandomTensor(DataType::kFloat, {2, 1, 4, 5}, 1));
  t.Input("B", test::RandomTensor(DataType::kFloat, {3, 1, 5}, 2));
  t.OutputName("C");
  t.CompareWithCpu({"testing"});
}

TEST(TestingEpKernelTest, Relu) {
  test::OpTester t("Relu", 14);
  t.Input("X", Tensor::FromVector<float>({4}, {-1, 0, 2, -3}));
  t.Output("Y", Tensor::FromVector<float>({4}, {0, 0, 2, 0}));
  t.Run({"testing"});
}

TEST(TestingEpKernelTest, MatMul2D) {
  test::OpTester t("MatMul", 13);
  t.Input("A", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  t.Input("B", Tensor::FromVector<float>({3, 2}, {7, 8, 9, 10, 11, 12}));
  t.Output("Y", Tensor::FromVector<float>({2, 2}, {58, 64, 139, 154}));
  t.Run({"testing"});
}

TEST(TestingEpKernelTest, MatMulBatchedMatchesCpu) {
  test::OpTester t("MatMul", 13);
  t.Input("A", test::RandomTensor(DataType::kFloat, {3, 4, 5}, 3));
  t.Input("B", test::RandomTensor(DataType::kFloat, {3, 5, 6}, 4));
  t.OutputName("Y");
  t.Tolerance(1e-5, 1e-5);
  t.CompareWithCpu({"testing"});
}

}  // namespace
}  // namespace tessera
