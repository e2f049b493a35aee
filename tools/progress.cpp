#include "tools/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace sparsegen::cli {

ProgressLine::ProgressLine(std::string label, int total)
    : ProgressLine(std::move(label), total, isatty(STDERR_FILENO) != 0) {}

ProgressLine::ProgressLine(std::string label, int total, bool on)
    : label_(std::move(label)),
      total_(total),
      on_(on),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

ProgressLine::~ProgressLine() {
  clear();
}

std::string ProgressLine::duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long long>(std::llround(s));
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
}

void ProgressLine::update(int done, const std::string& note) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 24;
  const int fill = total_ > 0 ? kWidth * done / total_ : 0;
  std::string bar(static_cast<size_t>(fill), '#');
  bar.resize(kWidth, '.');
  const std::string eta =
      done > 0 && done < total_ ? duration(elapsed / done * (total_ - done)) : "-";
  std::string line = fmt::format("[{}] {}/{} {}  {} elapsed, ETA {}", bar, done, total_, label_,
                                 duration(elapsed), eta);
  if (!note.empty()) line += "  " + note;
  if (line.size() > 118) line.resize(118);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (on_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace sparsegen::cli
