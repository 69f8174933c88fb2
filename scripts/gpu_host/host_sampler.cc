// A sampling profiler of host (CPU) time for machines without perf (the GPU host): preload it into any program,
//
//   g++ -O2 -shared -fPIC -o /tmp/libhost_sampler.so scripts/gpu_host/host_sampler.cc -ldl
//   HOST_SAMPLER_OUT=/tmp/samples.txt LD_PRELOAD=/tmp/libhost_sampler.so PROGRAM ARGS...
//   python3 scripts/gpu_host/host_sampler_report.py /tmp/samples.txt
//
// SIGPROF fires every HOST_SAMPLER_US microseconds of the process's CPU time (default 200, in practice no finer than
// the kernel's tick; all threads count),
// on whichever thread was running; the handler stores that thread's return addresses. At exit every sample is
// written as one line of `module+offset` frames (innermost first), for the report script to symbolize with
// addr2line. HOST_SAMPLER_START_S drops the samples of the first seconds of process CPU time (loading, first runs).
//
// The handler calls backtrace(), which is not formally async-signal-safe; it is called once before the timer
// starts so that its lazy initialisation (loading libgcc's unwinder) never happens inside the handler.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxSamples = 400000;

struct Sample {
  int depth;
  void* pcs[kMaxDepth];
};

Sample* g_samples = nullptr;
std::atomic<size_t> g_count{0};
double g_start_cpu_s = 0;  // samples before this much process CPU time are dropped

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);  // async-signal-safe
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void OnSignal(int, siginfo_t*, void*) {
  const int saved_errno = errno;
  if (g_start_cpu_s > 0 && CpuSeconds() < g_start_cpu_s) {
    errno = saved_errno;
    return;
  }
  const size_t i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) g_samples[i].depth = backtrace(g_samples[i].pcs, kMaxDepth);
  errno = saved_errno;
}

__attribute__((constructor)) void Start() {
  const char* out = std::getenv("HOST_SAMPLER_OUT");
  if (out == nullptr || *out == '\0') return;
  g_samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  if (g_samples == nullptr) return;
  void* warm[4];
  backtrace(warm, 4);
  const char* period = std::getenv("HOST_SAMPLER_US");
  const long us = period != nullptr ? std::atol(period) : 200;
  const char* start = std::getenv("HOST_SAMPLER_START_S");
  if (start != nullptr) g_start_cpu_s = std::atof(start);
  struct sigaction action {};
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGPROF, &action, nullptr);
  itimerval timer{};
  timer.it_interval.tv_usec = us;
  timer.it_value.tv_usec = us;
  setitimer(ITIMER_PROF, &timer, nullptr);
}

__attribute__((destructor)) void Stop() {
  if (g_samples == nullptr) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  FILE* f = std::fopen(std::getenv("HOST_SAMPLER_OUT"), "w");
  if (f == nullptr) return;
  const size_t n = std::min(g_count.load(), kMaxSamples);
  const double cpu_s = CpuSeconds() - g_start_cpu_s;
  std::fprintf(f, "# samples %zu (taken %zu) over %.2f s of process CPU time (%.0f us each)\n", n, g_count.load(), cpu_s,
               g_count.load() ? 1e6 * cpu_s / g_count.load() : 0.0);
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = g_samples[i];
    // Frame 0 is the handler, frame 1 the signal trampoline; frame 2 is where the thread was.
    for (int d = 2; d < s.depth; ++d) {
      Dl_info info{};
      const char* module = "?";
      unsigned long offset = reinterpret_cast<unsigned long>(s.pcs[d]);
      if (dladdr(s.pcs[d], &info) != 0 && info.dli_fname != nullptr) {
        module = info.dli_fname;
        offset -= reinterpret_cast<unsigned long>(info.dli_fbase);
      }
      // Return addresses point after the call: step back into it, except for the interrupted frame.
      if (d > 2 && offset > 0) --offset;
      std::fprintf(f, "%s%s+%lx", d > 2 ? " " : "", module, offset);
    }
    std::fputc('\n', f);
  }
  std::fclose(f);
}

}  // namespace
