// A one-line progress bar on stderr for jobs of many items (gen-model, tune-model): items done of
// the total, elapsed time and an ETA from the mean time per item so far. Drawn only when stderr
// is a terminal (or when forced on), redrawn at most every 100 ms, cleared when done, so logs and
// pipes never see control characters.
#pragma once

#include <chrono>
#include <string>

namespace sparsegen::cli {

class ProgressLine {
 public:
  // `label`: what is counted ("tensors"); on: whether to draw (default: stderr is a terminal).
  explicit ProgressLine(std::string label, int total);
  ProgressLine(std::string label, int total, bool on);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Items done so far and a short note on the current one (e.g. the tensor name).
  void update(int done, const std::string& note = "");
  // Removes the line (before printing anything else to stderr).
  void clear();
  bool on() const { return on_; }

  // "1m05s", "42s", "1h02m": for the ETA and summaries.
  static std::string duration(double seconds);

 private:
  std::string label_;
  int total_;
  bool on_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace sparsegen::cli
