// ProgressLine (ir/progress_line.h): silent off a terminal, and when drawing, every line is
// redrawn in place ("\r", erase line) and cleared without ever writing a newline.
#include "ir/progress_line.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace sparsegen {
namespace {

// What was written to `f` so far.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fseek(f, 0, SEEK_END);  // the next write appends
  return s;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

TEST(ProgressLine, SilentWhenStderrIsNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_GE(dup2(fileno(f), STDERR_FILENO), 0);  // stderr is now a file: not a terminal
  {
    ProgressLine bar("cases", 3);
    EXPECT_FALSE(bar.on());
    bar.update(0, "first");
    bar.update(3, "last");
    bar.clear();
  }
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressLine, ForcedOffWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine bar("cases", 2, false, f);
    bar.update(1, "x");
    bar.clear();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressLine, ForcedOnRedrawsInPlaceAndClears) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine bar("cases", 4, true, f);
    bar.update(0, "alpha");
    bar.update(1, "beta");  // within 100 ms of the last draw: skipped
    std::string s = contents(f);
    EXPECT_EQ(s.rfind("\r\033[K[........................] 0/4 cases  0s elapsed, ETA -  alpha", 0),
              0u)
        << s;
    EXPECT_EQ(s.find("beta"), std::string::npos) << s;
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    bar.update(2, "gamma");  // drawn again after 100 ms
    bar.clear();
    bar.update(2, "delta");  // the first draw after a clear() is never skipped
    bar.update(4, "omega");  // nor the one that reaches the total
    bar.update(4, "again");  // but staying at the total is throttled like the rest
    s = contents(f);
    EXPECT_NE(s.find("[############............] 2/4 cases"), std::string::npos) << s;
    EXPECT_NE(s.find("gamma"), std::string::npos) << s;
    EXPECT_NE(s.find("delta"), std::string::npos) << s;
    EXPECT_NE(s.find("[########################] 4/4 cases"), std::string::npos) << s;
    EXPECT_EQ(s.find("again"), std::string::npos) << s;
  }  // the destructor clears the line
  const std::string s = contents(f);
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;  // never a line of its own in a log
  // Draws: alpha, gamma, delta, omega; clears: the explicit one and the destructor's.
  EXPECT_EQ(count(s, "\r\033[K"), 6u) << s;
  EXPECT_EQ(s.substr(s.size() - 4), "\r\033[K") << s;  // ends cleared
  std::fclose(f);
}

TEST(ProgressLine, ClearWithoutADrawWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine bar("cases", 4, true, f);
    bar.clear();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressLine, LineShowsDoneElapsedEtaAndNote) {
  ProgressLine bar("tensors", 4, false);
  EXPECT_EQ(bar.line(1, "layers.0.q_proj", 10.0, 200),
            "[######..................] 1/4 tensors  10s elapsed, ETA 30s  layers.0.q_proj");
  EXPECT_EQ(bar.line(0, "", 3.0, 200), "[........................] 0/4 tensors  3s elapsed, ETA -");
  EXPECT_EQ(bar.line(4, "", 125.0, 200),
            "[########################] 4/4 tensors  2m05s elapsed, ETA -");
  // A time limit bounds the ETA: 30 s at this rate, but the job stops 15 s from the start.
  bar.set_time_limit(15);
  EXPECT_NE(bar.line(1, "", 10.0, 200).find("ETA 5s"), std::string::npos);
}

TEST(ProgressLine, LineIsCutToTheWidthAndHasNoControlCharacters) {
  ProgressLine bar("cases", 2, false);
  const std::string l = bar.line(1, "a\nb\033[31mc", 1.0, 200);
  EXPECT_NE(l.find("a?b?[31mc"), std::string::npos) << l;
  EXPECT_EQ(bar.line(1, std::string(300, 'x'), 1.0, 79).size(), 79u);
  // Never inside a UTF-8 sequence: "é" is 2 bytes; a cut through it drops it whole.
  const std::string head = bar.line(1, "", 1.0, 200) + "  ";
  const std::string cut = bar.line(1, "é", 1.0, head.size() + 1);
  EXPECT_EQ(cut, head);
}

TEST(ProgressLine, Durations) {
  EXPECT_EQ(ProgressLine::duration(0), "0s");
  EXPECT_EQ(ProgressLine::duration(59.4), "59s");
  EXPECT_EQ(ProgressLine::duration(65), "1m05s");
  EXPECT_EQ(ProgressLine::duration(3720), "1h02m");
  EXPECT_EQ(ProgressLine::duration(-1), "?");
}

}  // namespace
}  // namespace sparsegen
