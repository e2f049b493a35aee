#include "ir/io/text_scanner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ir/diagnostics.h"

namespace sparsegen {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// Reads a non-regular file (pipe, device) to the end.
std::string read_all(int fd, const std::string& path) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UserError(SourceLoc{path}, "cannot read file: " + errno_text(errno));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

void MappedFile::release(const void* p, size_t n) const {
  if (map_ == nullptr || n == 0) return;
  const auto* c = static_cast<const char*>(p);
  SG_ASSERT(c >= data_ && c + n <= data_ + size_, "MappedFile::release: range outside the mapping");
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(c) + page - 1) & ~(page - 1);
  const uintptr_t e = reinterpret_cast<uintptr_t>(c + n) & ~(page - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);  // a hint: errors ignored
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(SourceLoc{path}, "cannot open file: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw UserError(SourceLoc{path}, "cannot stat file: " + errno_text(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw UserError(SourceLoc{path}, "expected a file, found a directory");
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    size_ = static_cast<size_t>(st.st_size);
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      map_ = m;
      data_ = static_cast<const char*>(m);
      ::madvise(m, size_, MADV_SEQUENTIAL);
      ::close(fd);
      return;
    }
    size_ = 0;  // fall back to reading
  }
  try {
    owned_ = read_all(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  data_ = owned_.data();
  size_ = owned_.size();
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

bool LineReader::next(Line& line) {
  if (pos_ >= text_.size()) return false;
  const char* begin = text_.data() + pos_;
  size_t left = text_.size() - pos_;
  const void* nl = std::memchr(begin, '\n', left);
  size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : left;
  line.text = std::string_view(begin, len);
  line.number = next_number_++;
  line.offset = pos_;
  pos_ += nl ? len + 1 : len;
  return true;
}

bool is_blank(std::string_view line) {
  for (char c : line)
    if (!is_space(c)) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

NumberStatus parse_int64(std::string_view token, int64_t& out) {
  const char* b = token.data();
  const char* e = b + token.size();
  // from_chars takes '-' but not '+'; "+-3" must stay invalid.
  if (b < e && *b == '+') {
    ++b;
    if (b < e && *b == '-') return NumberStatus::Invalid;
  }
  if (b == e) return NumberStatus::Invalid;
  auto [p, ec] = std::from_chars(b, e, out);
  if (ec == std::errc::result_out_of_range) {
    // from_chars consumed a full run of digits; only a whole-token integer is "out of range".
    return p == e ? NumberStatus::OutOfRange : NumberStatus::Invalid;
  }
  if (ec != std::errc() || p != e) return NumberStatus::Invalid;
  return NumberStatus::Ok;
}

NumberStatus parse_double(std::string_view token, double& out) {
  const char* b = token.data();
  const char* e = b + token.size();
  if (b < e && *b == '+') {
    ++b;
    if (b < e && (*b == '-' || *b == '+')) return NumberStatus::Invalid;
  }
  if (b == e) return NumberStatus::Invalid;
  auto [p, ec] = std::from_chars(b, e, out, std::chars_format::general);
  if (p != e) return NumberStatus::Invalid;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports both overflow and underflow here without a value. Let strtod decide
    // which (it returns HUGE_VAL on overflow and the rounded tiny value on underflow).
    std::string copy(b, e);
    errno = 0;
    double v = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(v)) return NumberStatus::OutOfRange;
    out = v;
    return NumberStatus::Ok;
  }
  if (ec != std::errc()) return NumberStatus::Invalid;
  return NumberStatus::Ok;
}

std::string describe_token(std::string_view token) {
  if (token.empty()) return "end of line";
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < token.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out += token.size() > kMax ? "...'" : "'";
  return out;
}

std::vector<std::string_view> split_at_lines(std::string_view text, size_t parts,
                                             size_t min_piece_bytes) {
  std::vector<std::string_view> pieces;
  if (parts < 1) parts = 1;
  if (min_piece_bytes > 0 && text.size() / min_piece_bytes < parts)
    parts = std::max<size_t>(1, text.size() / min_piece_bytes);
  size_t begin = 0;
  for (size_t k = 1; k < parts && begin < text.size(); ++k) {
    size_t target = text.size() / parts * k;
    if (target <= begin) continue;
    size_t nl = text.find('\n', target);
    if (nl == std::string_view::npos) break;
    pieces.push_back(text.substr(begin, nl + 1 - begin));
    begin = nl + 1;
  }
  pieces.push_back(text.substr(begin));
  return pieces;
}

}  // namespace sparsegen
