// `tessera devices`: what this machine offers to sessions.
#include <cstdio>
#include <iostream>

#include "cli_session.h"
#include "commands.h"
#include "table.h"

namespace tessera::cli {
namespace {

constexpr const char* kDevicesUsage =
    "usage: tessera devices [--plugin NAME=PATH]... [--ep NAME] [--verbose]\n"
    "Lists hardware devices, EP devices (an EP paired with a device) and the memory each EP device uses.\n";

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", value);
  return text;
}

std::string Trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string JoinMetadata(const std::map<std::string, std::string>& metadata) {
  std::string joined;
  for (const auto& [key, value] : metadata) joined += (joined.empty() ? "" : ", ") + key + "=" + Trimmed(value);
  return joined;
}

std::string DescribeHardware(const HardwareDevice* device) {
  if (device == nullptr) return "-";
  std::string text = std::string(DeviceTypeName(device->type)) + ":" + std::to_string(device->ordinal);
  auto name = device->metadata.find("name");
  return name == device->metadata.end() ? text + " (" + device->vendor + ")"
                                        : text + " (" + Trimmed(name->second) + ")";
}

void PrintHardwareDevices(const Environment& env) {
  Table table({"#", "type", "vendor id", "device id", "vendor", "metadata"});
  size_t index = 0;
  for (const HardwareDevice* device : env.GetHardwareDevices()) {
    table.AddRow({std::to_string(index++), DeviceTypeName(device->type), Hex(device->vendor_id), Hex(device->device_id),
                  device->vendor, JoinMetadata(device->metadata)});
  }
  std::cout << "Hardware devices\n";
  table.Print(std::cout);
}

void PrintEpDevices(const Environment& env) {
  Table table({"#", "ep", "ep vendor", "device", "device memory", "host-accessible memory"});
  size_t index = 0;
  for (const EpDevice* device : env.GetEpDevices()) {
    const std::string host = device->host_accessible_memory ? device->host_accessible_memory->ToString() : "-";
    table.AddRow({std::to_string(index++), device->ep_name, device->ep_vendor, DescribeHardware(device->device),
                  device->device_memory.ToString(), host});
  }
  std::cout << "\nEP devices\n";
  table.Print(std::cout);
}

}  // namespace

int DevicesCommand(std::span<const std::string> args) {
  const ParsedArgs parsed = ParseArgs(args, kSessionValueOptions, kSessionFlags);
  if (parsed.Has("--help")) {
    std::cout << kDevicesUsage;
    return 0;
  }
  if (!parsed.positional.empty()) throw UsageError("devices takes no positional arguments");
  std::unique_ptr<Environment> env = CreateEnvironment(parsed);
  PrintHardwareDevices(*env);
  PrintEpDevices(*env);
  return 0;
}

}  // namespace tessera::cli
