/* LD_PRELOAD helper for a native backtrace where no debugger is installed (the GPU host):
 * on SIGSEGV/SIGBUS/SIGABRT it prints each frame as "module+offset" to stderr, then re-raises.
 * Symbolize with `addr2line -f -C -e MODULE OFFSET`. Build: cc -shared -fPIC -o segv_trace.so
 * segv_trace.c -ldl. A process that installs its own handler later (Python's faulthandler)
 * replaces this one: run Python without -X faulthandler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_signal(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  char line[1024];
  int len = snprintf(line, sizeof line, "segv_trace: signal %d, %d frames\n", sig, n);
  write(2, line, (size_t)len);
  for (int i = 0; i < n; ++i) {
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(frames[i], &info) && info.dli_fname) {
      len = snprintf(line, sizeof line, "segv_trace: #%d %s+0x%lx %s\n", i, info.dli_fname,
                     (unsigned long)((char*)frames[i] - (char*)info.dli_fbase),
                     info.dli_sname ? info.dli_sname : "?");
    } else {
      len = snprintf(line, sizeof line, "segv_trace: #%d %p\n", i, frames[i]);
    }
    write(2, line, (size_t)len);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGABRT, &sa, NULL);
}
