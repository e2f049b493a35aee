// Fast, line-oriented scanning of whole text files for the matrix readers (.mtx, .smtx).
//
// A file is mapped (or read) once and handed out as one std::string_view; lines are views into it
// with their 1-based line numbers; tokens are whitespace-separated views within a line; numbers
// are parsed with std::from_chars (no locale, no allocation). Nothing here throws on bad text:
// the callers decide what is an error and phrase it (they know what they expected).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen {

// The bytes of a file, memory-mapped when the file is a regular file (read otherwise). Throws
// UserError naming the path when it cannot be opened or read.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view text() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // Drops the pages wholly inside [p, p + n) (a range of text()) from the process's resident
  // memory: they stay in the page cache, and a later read faults them back in. A reader that
  // copies a large file once calls it behind its copy, so the mapping never holds more than the
  // piece in flight (a 65M-nonzero CSR container otherwise peaked at twice its size while
  // loading). No-op for a file that was read rather than mapped.
  void release(const void* p, size_t n) const;

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // non-null when mmap'ed
  std::string owned_;    // the contents when not mmap'ed
};

// True for the characters that separate tokens: space, tab, CR, VT, FF. ('\n' ends a line.)
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// A line without its terminator ("\n"; a "\r" before it is left in the view and counts as space).
struct Line {
  std::string_view text;
  int64_t number = 0;  // 1-based
  size_t offset = 0;   // byte offset of the line's first character in the scanned text
};

// Yields the lines of `text` in order. A final line without '\n' is still a line; an empty text
// has no lines, and a text ending in '\n' has no extra empty line after it.
class LineReader {
 public:
  explicit LineReader(std::string_view text, int64_t first_line_number = 1)
      : text_(text), next_number_(first_line_number) {}

  // Stores the next line in `line`; false at the end of the text.
  bool next(Line& line);
  // Line number the next call to next() will return (one past the last line at the end).
  int64_t next_number() const { return next_number_; }
  // Byte offset of the next line's start (text.size() at the end).
  size_t position() const { return pos_; }
  // The rest of the text, from the next line on.
  std::string_view rest() const { return text_.substr(pos_); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t next_number_;
};

// Splits one line into tokens separated by is_space() characters and, optionally, one extra
// separator character (',' for the .smtx size line).
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view line, char extra_separator = '\0')
      : p_(line.data()), end_(line.data() + line.size()), extra_(extra_separator) {}

  // The next token, or an empty view when only separators remain.
  std::string_view next() {
    skip();
    const char* b = p_;
    while (p_ < end_ && !is_sep(*p_)) ++p_;
    return {b, static_cast<size_t>(p_ - b)};
  }
  // True when only separators remain.
  bool done() {
    skip();
    return p_ == end_;
  }
  // The unread remainder of the line, starting at the next token.
  std::string_view rest() {
    skip();
    return {p_, static_cast<size_t>(end_ - p_)};
  }

 private:
  bool is_sep(char c) const { return is_space(c) || (extra_ != '\0' && c == extra_); }
  void skip() {
    while (p_ < end_ && is_sep(*p_)) ++p_;
  }
  const char* p_;
  const char* end_;
  char extra_;
};

// True when the line holds only is_space() characters (or nothing).
bool is_blank(std::string_view line);
// The line without leading and trailing is_space() characters.
std::string_view trim(std::string_view s);
// ASCII case-insensitive equality.
bool iequals(std::string_view a, std::string_view b);

enum class NumberStatus { Ok, Invalid, OutOfRange };

// Parses a whole token as a base-10 int64 ("42", "-7", "+3"). OutOfRange when it is a valid
// integer that int64 cannot hold; Invalid for anything else (including "1.0", "inf", "").
NumberStatus parse_int64(std::string_view token, int64_t& out);

// Parses a whole token as a double: decimal or scientific ("1", "-2.5", "+1.5e3", "12.", ".5",
// "1E-3"), and "nan", "inf", "infinity" in any case with an optional sign. OutOfRange only on
// overflow (|value| beyond the double range, e.g. "1e310"); underflow yields the nearest
// representable value (0 or a subnormal), as strtod's value would.
NumberStatus parse_double(std::string_view token, double& out);

// A token made safe and short for an error message: quoted, at most ~40 characters, with
// non-printable bytes escaped as \xNN. An empty token reads as "end of line".
std::string describe_token(std::string_view token);

// Splits `text` into at most `parts` pieces of roughly equal size whose boundaries fall just
// after a '\n', so every piece starts at the beginning of a line. Pieces smaller than
// `min_piece_bytes` are not created. Always returns at least one piece (possibly empty).
std::vector<std::string_view> split_at_lines(std::string_view text, size_t parts,
                                             size_t min_piece_bytes);

}  // namespace sparsegen
