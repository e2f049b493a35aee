// Shared helpers for the test suites: where the data lives, running commands, error messages.
#pragma once

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// Runs `argv` (argv[0]: the program's path) with stdin, stdout and stderr on a new terminal of
// `columns` columns, with `env` added to the environment; returns everything it wrote (the
// terminal turns "\n" into "\r\n"), or rc -1 and why when it could not start.
inline CommandRun run_on_terminal(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& env = {},
                                  unsigned short columns = 80) {
  CommandRun r;
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = columns;
  int master = -1;
  std::fflush(nullptr);
  const pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0) {
    r.out = std::string("run_on_terminal: forkpty failed: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      r.out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: the program and its terminal are gone
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The lines of a terminal's output `out` that still show a progress bar (ir/progress_line.h):
// a bar followed by a newline, or left at the end, without being cleared first. Empty when every
// bar was cleared before the next line.
inline std::vector<std::string> lines_keeping_a_progress_bar(const std::string& out) {
  std::vector<std::string> bad;
  for (size_t start = 0; start <= out.size();) {
    const size_t nl = std::min(out.find('\n', start), out.size());
    std::string line = out.substr(start, nl - start);
    start = nl + 1;
    if (nl < out.size())
      while (!line.empty() && line.back() == '\r') line.pop_back();  // the terminal's "\r\n"
    // What stays visible: the text after the last carriage return, less an erase-line code.
    const size_t cr = line.rfind('\r');
    std::string visible = cr == std::string::npos ? line : line.substr(cr + 1);
    if (visible.rfind("\033[K", 0) == 0) visible.erase(0, 3);
    if (visible.find("elapsed, ETA") != std::string::npos) bad.push_back(visible);
  }
  return bad;
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

// Sets an environment variable for the scope, restoring the previous value (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace sparsegen::testing
