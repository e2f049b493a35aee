#include "ir/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace sparsegen {

ProgressLine::ProgressLine(std::string label, int total)
    : ProgressLine(std::move(label), total, isatty(STDERR_FILENO) != 0) {}

ProgressLine::ProgressLine(std::string label, int total, bool on, std::FILE* out)
    : label_(std::move(label)),
      total_(total),
      on_(on),
      out_(out),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {
  // A line wider than the terminal wraps, and "\r" then erases only its last row.
  winsize ws{};
  if (on_ && ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
    width_ = std::min<size_t>(width_, ws.ws_col - 1u);
}

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

std::string ProgressLine::line(int done, const std::string& note, double elapsed,
                               size_t width) const {
  constexpr int kWidth = 24;
  const int fill = total_ > 0 ? kWidth * std::clamp(done, 0, total_) / total_ : 0;
  std::string bar(static_cast<size_t>(fill), '#');
  bar.resize(kWidth, '.');
  std::string eta = "-";
  if (done > 0 && done < total_) {
    double left = elapsed / done * (total_ - done);
    if (time_limit_s_ > 0) left = std::min(left, std::max(0.0, time_limit_s_ - elapsed));
    eta = duration(left);
  }
  std::string s = fmt::format("[{}] {}/{} {}  {} elapsed, ETA {}", bar, done, total_, label_,
                              duration(elapsed), eta);
  if (!note.empty()) s += "  " + note;
  for (char& c : s)  // a newline or escape in a name would break the line
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (s.size() > width) {
    size_t cut = width;  // not inside a UTF-8 sequence
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
  }
  return s;
}

void ProgressLine::update(int done, const std::string& note) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  // Throttled, except the first draw after a clear() and the one that reaches the total.
  const bool reached = done >= total_ && last_done_ < total_;
  if (drawn_ && !reached && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  last_done_ = done;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "\r\033[K%s", line(done, note, elapsed, width_).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (on_ && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace sparsegen
