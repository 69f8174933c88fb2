// device_discovery [MODEL]: the EP-agnostic view of the machine -- hardware devices (PCI vendor and device ids,
// type, metadata), the EP devices that drive them with their memory infos -- and a session placed by a selection
// policy rather than by naming an EP. Register plugins with TESSERA_PLUGIN=PATH/libtessera_<ep>.so.
#include <cstdlib>
#include <iomanip>
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    std::cout << "hardware devices:\n";
    for (const tessera::HardwareDevice* h : env.GetHardwareDevices()) {
      std::cout << "  " << tessera::DeviceTypeName(h->type) << " " << h->vendor << " vendor 0x" << std::hex
                << h->vendor_id << " device 0x" << h->device_id << std::dec << " ordinal " << h->ordinal;
      if (auto name = h->metadata.find("name"); name != h->metadata.end()) std::cout << " \"" << name->second << "\"";
      std::cout << "\n";
    }
    std::cout << "EP devices:\n";
    for (const tessera::EpDevice* d : env.GetEpDevices()) {
      std::cout << "  " << d->ep_name << " on " << tessera::DeviceTypeName(d->device->type) << " " << d->device->ordinal
                << "\n    device memory: " << d->device_memory.ToString() << "\n";
      if (d->host_accessible_memory)
        std::cout << "    host-accessible memory: " << d->host_accessible_memory->ToString() << "\n";
    }
    if (argc > 1) {
      tessera::SessionOptions options;
      options.policy = tessera::EpSelectionPolicy::kPreferGpu;  // no EP named: GPUs first, then NPUs, then the CPU
      tessera::Session session(env, argv[1], options);
      std::cout << "prefer_gpu placed " << argv[1] << " on:";
      for (const std::string& ep : session.providers()) std::cout << " " << ep;
      std::cout << "\ninput '" << session.inputs()[0].name << "' is read from "
                << session.InputMemoryInfo(session.inputs()[0].name).ToString() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
