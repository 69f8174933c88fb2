// The built-in CPU execution provider: host memory, synchronous execution, oneDNN + own kernels.
#pragma once

#include "tessera/ep/ep_factory.h"

namespace tessera {

inline constexpr const char* kCpuEpName = "CPUExecutionProvider";

// The process-wide CPU kernel registry (built on first use).
const KernelRegistry& CpuKernelRegistry();

class CpuExecutionProvider : public ExecutionProvider {
 public:
  explicit CpuExecutionProvider(AllocatorPtr allocator);
  const std::string& type() const override;
  const KernelRegistry& kernels() const override { return CpuKernelRegistry(); }
  const MemoryInfo& memory_info() const override;
  AllocatorPtr allocator(MemoryType type) override;
  DataTransfer* data_transfer() override { return nullptr; }
  std::unique_ptr<Stream> CreateStream() override { return nullptr; }

 private:
  AllocatorPtr allocator_;
};

// The factory behind the CPU EP device (registered by every Environment).
std::unique_ptr<EpFactory> CreateCpuEpFactory();

}  // namespace tessera
