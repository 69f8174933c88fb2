// An NVTX injection library for tests: the same entry point Nsight Systems uses. Loaded by the NVTX loader of
// any module that emits NVTX when NVTX_INJECTION64_PATH names this file, it takes over the core range calls
// (nvtxRangePushA, nvtxRangePushEx with an ASCII message, nvtxRangePop) and appends one line per call to the
// file named by TESSERA_NVTX_RECORD:
//
//   <thread id> push <message>
//   <thread id> pop
//
// Lines are written and flushed as the calls happen, so the record is complete even when the process ends
// abruptly. Other NVTX calls (markers, names, domains) keep NVTX's no-op behaviour.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::mutex record_mutex;
std::FILE* record = nullptr;

long ThreadId() { return static_cast<long>(syscall(SYS_gettid)); }

void Write(const char* event, const char* message) {
  std::lock_guard<std::mutex> lock(record_mutex);
  if (record == nullptr) return;
  if (message != nullptr)
    std::fprintf(record, "%ld %s %s\n", ThreadId(), event, message);
  else
    std::fprintf(record, "%ld %s\n", ThreadId(), event);
  std::fflush(record);
}

int RangePushA(const char* message) {
  Write("push", message != nullptr ? message : "");
  return 0;
}

int RangePushEx(const nvtxEventAttributes_t* attributes) {
  const bool ascii = attributes != nullptr && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
  Write("push", ascii && attributes->message.ascii != nullptr ? attributes->message.ascii : "");
  return 0;
}

int RangePop() {
  Write("pop", nullptr);
  return 0;
}

// Opens the record once per process (several modules may each initialize NVTX and call in here).
bool OpenRecord() {
  std::lock_guard<std::mutex> lock(record_mutex);
  if (record != nullptr) return true;
  const char* path = std::getenv("TESSERA_NVTX_RECORD");
  if (path == nullptr || *path == '\0') return false;
  record = std::fopen(path, "a");
  return record != nullptr;
}

}  // namespace

// The NVTX loader's entry point: returns 1 when the core callbacks are installed, 0 to leave NVTX as no-ops.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (get_table == nullptr || !OpenRecord()) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 || table == nullptr) return 0;
  if (size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&RangePushA);
  *table[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&RangePushEx);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&RangePop);
  return 1;
}
