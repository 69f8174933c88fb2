// copy_tensors_on_a_stream EP: batched copies between host and device memory queued on streams (one CopyTensors
// call moves several tensors), ordered across two streams by an event instead of a host wait, then checked.
#include <cstdlib>
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: copy_tensors_on_a_stream EP\n";
    return 2;
  }
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    const tessera::EpDevice* device = nullptr;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == argv[1]) device = d;
    if (device == nullptr) throw std::runtime_error(std::string("no EP device ").append(argv[1]));
    std::unique_ptr<tessera::Stream> upload = env.CreateStream(*device), download = env.CreateStream(*device);
    if (!upload) throw std::runtime_error(std::string(argv[1]).append(" has no streams: its copies are synchronous"));
    tessera::AllocatorPtr memory = env.CreateSharedAllocator(*device, tessera::MemoryType::kDefault, nullptr);
    // Pinned (host-accessible) staging where the device has it: copies from it are asynchronous.
    tessera::AllocatorPtr staging = device->host_accessible_memory
        ? env.CreateSharedAllocator(*device, tessera::MemoryType::kHostAccessible, nullptr)
        : tessera::CreateHostAllocator();

    std::vector<tessera::Tensor> host, on_device, back;
    for (int i = 0; i < 3; ++i) {
      const tessera::Shape shape{1024 * (i + 1)};
      host.push_back(tessera::Tensor::Allocate(tessera::DataType::kFloat, shape, staging));
      for (int64_t k = 0; k < shape.NumElements(); ++k) host.back().Data<float>()[k] = static_cast<float>(i * 10000 + k);
      on_device.push_back(tessera::Tensor::Allocate(tessera::DataType::kFloat, shape, memory));
      back.push_back(tessera::Tensor::Allocate(tessera::DataType::kFloat, shape, staging));
    }
    env.CopyTensors(host, on_device, upload.get());  // one call, three copies, queued
    std::unique_ptr<tessera::Event> uploaded = upload->CreateEvent();
    uploaded->Record(*upload);
    uploaded->Wait(*download);  // the download stream waits on the device, the host does not
    env.CopyTensors(on_device, back, download.get());
    download->Synchronize();  // the one host wait
    for (size_t i = 0; i < host.size(); ++i)
      if (host[i].ToVector<float>() != back[i].ToVector<float>()) throw std::runtime_error("copy " + std::to_string(i) + " differs");
    std::cout << "3 tensors up on one stream, down on another after an event: round trip matches\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
