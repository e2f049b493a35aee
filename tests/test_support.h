// Shared helpers for the test suites: where the data lives, running commands, error messages.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ir/diagnostics.h"

namespace sparsegen::testing {

// The third-party matrix folder (../shared/data), or $SPARSEGEN_DATA when set.
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("SPARSEGEN_DATA")) return env;
  return SPARSEGEN_DATA_DIR;
}

inline std::filesystem::path source_dir() {
  return SPARSEGEN_SOURCE_DIR;
}

// A shell command's exit status (-1 when it did not exit normally) and its standard output.
struct CommandRun {
  int rc = -1;
  std::string out;
};

// Runs `cmd` through the shell (redirect stderr in `cmd` to capture it too).
inline CommandRun run_command(const std::string& cmd) {
  CommandRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The message of the UserError that f() throws, or "<no error>".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace sparsegen::testing
