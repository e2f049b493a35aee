// A one-line progress bar on stderr for jobs of many items (gen-model, tune-model, calibrate,
// sparsegen-bench): items done of the total, elapsed time, an ETA from the mean time per item so
// far, and a note on the current item.
//
//   ProgressLine bar("cases", total);
//   bar.update(done, "llm 4096x4096 magnitude 70% N=8");
//   bar.clear();  // before printing anything else, on stdout or stderr
//   std::printf("...\n");
//
//   [##########..............] 12/30 cases  1m05s elapsed, ETA 1m37s  llm 4096x4096 ... N=8
//
// Drawn only when stderr is a terminal (or when forced on), so logs and pipes never see control
// characters; redrawn in place ("\r", erase line) at most every 100 ms, but at once after a
// clear(). The line is cut to the terminal's width so that it never wraps. Not thread-safe: one
// thread updates and prints. Its own target (sparsegen_progress), not part of the library.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace sparsegen {

class ProgressLine {
 public:
  // `label`: what is counted ("tensors"); drawn when stderr is a terminal.
  ProgressLine(std::string label, int total);
  // on: whether to draw at all; out: where (stderr; tests pass a file).
  ProgressLine(std::string label, int total, bool on, std::FILE* out = stderr);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Items done so far and a short note on the current one (e.g. the tensor name).
  void update(int done, const std::string& note = "");
  // Removes the line: call it before printing anything else, on stderr or stdout.
  void clear();
  bool on() const { return on_; }

  // A job that stops starting items this many seconds after the start (a budget or a time
  // limit): the ETA is at most what is left of it. <= 0: none.
  void set_time_limit(double seconds) { time_limit_s_ = seconds; }

  // The text of the line (no control characters), `width` columns at most: for tests.
  std::string line(int done, const std::string& note, double elapsed_s, size_t width) const;

  // "1m05s", "42s", "1h02m": for the ETA and summaries.
  static std::string duration(double seconds);

 private:
  std::string label_;
  int total_;
  bool on_;
  std::FILE* out_;
  size_t width_ = 118;  // columns drawn (the terminal's width less one)
  double time_limit_s_ = 0;
  bool drawn_ = false;
  int last_done_ = -1;  // `done` of the last draw
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace sparsegen
