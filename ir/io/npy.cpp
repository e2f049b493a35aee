#include "ir/io/npy.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/io/text_scanner.h"

namespace sparsegen {

static_assert(std::endian::native == std::endian::little, "sparsegen assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes

// The subset of Python literals an .npy header uses. Lists/tuples hold `items`.
struct PyValue {
  enum Kind { Str, Bool, Int, Tuple, List } kind = Str;
  std::string str;
  bool b = false;
  uint64_t i = 0;
  std::vector<PyValue> items;
};

// Recursive-descent parser of the header dict; errors give the byte offset in the file.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, int64_t base, const std::string& source)
      : s_(text), base_(base), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(SourceLoc{source_, 0, base_ + static_cast<int64_t>(pos_)},
                    "npy header: " + what);
  }

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string found() const {
    return pos_ < s_.size() ? fmt::format("'{}'", s_[pos_]) : std::string("end of header");
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}', found {}", c, found()));
  }

  PyValue value(int depth) {
    if (depth > 8) fail("nested too deeply");
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end of header");
    char c = s_[pos_];
    PyValue v;
    if (c == '\'' || c == '"') {
      ++pos_;
      size_t end = s_.find(c, pos_);
      if (end == std::string_view::npos) fail("unterminated string");
      v.kind = PyValue::Str;
      v.str = std::string(s_.substr(pos_, end - pos_));
      pos_ = end + 1;
    } else if (s_.substr(pos_, 4) == "True") {
      v.kind = PyValue::Bool;
      v.b = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "False") {
      v.kind = PyValue::Bool;
      pos_ += 5;
    } else if (c >= '0' && c <= '9') {
      v.kind = PyValue::Int;
      auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v.i);
      if (ec == std::errc::result_out_of_range) fail("integer overflows 64 bits");
      pos_ = static_cast<size_t>(p - s_.data());
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix (old files)
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      ++pos_;
      while (!eat(close)) {
        v.items.push_back(value(depth + 1));
        if (!eat(',')) {
          expect(close);
          break;
        }
      }
    } else {
      fail(fmt::format("unexpected {}", found()));
    }
    return v;
  }

  // {'key': value, ...}
  std::vector<std::pair<std::string, PyValue>> dict() {
    std::vector<std::pair<std::string, PyValue>> out;
    expect('{');
    while (!eat('}')) {
      PyValue key = value(1);
      if (key.kind != PyValue::Str) fail("dict keys must be strings");
      expect(':');
      out.emplace_back(key.str, value(1));
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip_ws();
    if (pos_ != s_.size()) fail(fmt::format("unexpected {} after the dict", found()));
    return out;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int64_t base_;
  const std::string& source_;
};

[[noreturn]] void npy_fail(const std::string& source, int64_t byte, const std::string& what) {
  throw UserError(SourceLoc{source, 0, byte}, what);
}

template <typename T>
T load_le(const std::byte* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if (swap) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(b[k], b[sizeof(T) - 1 - k]);
    std::memcpy(&v, b, sizeof(T));
  }
  return v;
}

}  // namespace

DenseMatrix parse_npy(std::span<const std::byte> data, const std::string& source_name) {
  auto fail_at = [&](int64_t byte, const std::string& what) { npy_fail(source_name, byte, what); };
  const uint64_t size = data.size();
  if (size < 10 || std::memcmp(data.data(), kMagic, 6) != 0)
    fail_at(0, "not a .npy file: missing the magic \"\\x93NUMPY\"");
  const auto major = static_cast<unsigned>(data[6]);
  const auto minor = static_cast<unsigned>(data[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail_at(6,
            fmt::format("unsupported .npy version {}.{} (supported: 1.0, 2.0, 3.0)", major, minor));
  uint64_t header_len = 0;
  uint64_t prefix = 0;
  if (major == 1) {
    uint16_t l;
    std::memcpy(&l, data.data() + 8, 2);
    header_len = l;
    prefix = 10;
  } else {
    if (size < 12) fail_at(8, "file ends inside the header length");
    uint32_t l;
    std::memcpy(&l, data.data() + 8, 4);
    header_len = l;
    prefix = 12;
  }
  if (header_len > size - prefix)
    fail_at(8, fmt::format("header length {} exceeds the {} bytes that follow it; truncated file",
                           header_len, size - prefix));
  std::string_view text(reinterpret_cast<const char*>(data.data()) + prefix, header_len);
  HeaderParser hp(text, static_cast<int64_t>(prefix), source_name);
  auto entries = hp.dict();

  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, v] : entries) {
    const PyValue** slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot)
      fail_at(static_cast<int64_t>(prefix),
              fmt::format("npy header: unexpected key '{}' (expected descr, fortran_order, shape)",
                          key));
    if (*slot) fail_at(static_cast<int64_t>(prefix), fmt::format("npy header: '{}' repeated", key));
    *slot = &v;
  }
  if (!descr || !fortran || !shape)
    fail_at(static_cast<int64_t>(prefix),
            fmt::format("npy header: missing '{}'", !descr     ? "descr"
                                                    : !fortran ? "fortran_order"
                                                               : "shape"));
  if (descr->kind != PyValue::Str)
    fail_at(static_cast<int64_t>(prefix),
            "structured (record) dtypes are not supported; save a plain float array");
  if (fortran->kind != PyValue::Bool)
    fail_at(static_cast<int64_t>(prefix), "npy header: fortran_order must be True or False");
  if (shape->kind != PyValue::Tuple)
    fail_at(static_cast<int64_t>(prefix), "npy header: shape must be a tuple");

  // descr: byte order + 'f' + size.
  const std::string& d = descr->str;
  int itemsize = 0;
  bool swap = false;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=') && d[1] == 'f' &&
      (d[2] == '2' || d[2] == '4' || d[2] == '8')) {
    itemsize = d[2] - '0';
    swap = d[0] == '>';
  } else {
    fail_at(static_cast<int64_t>(prefix),
            fmt::format("dtype '{}' is not supported; sparsegen reads float16 ('<f2'), float32 "
                        "('<f4') and float64 ('<f8') arrays",
                        d));
  }

  std::vector<uint64_t> dims;
  for (const PyValue& item : shape->items) {
    if (item.kind != PyValue::Int)
      fail_at(static_cast<int64_t>(prefix), "npy header: shape entries must be integers");
    dims.push_back(item.i);
  }
  if (dims.size() != 2) {
    std::string shown = "(";
    for (size_t k = 0; k < dims.size(); ++k) shown += fmt::format("{}{}", k ? ", " : "", dims[k]);
    shown += dims.size() == 1 ? ",)" : ")";
    fail_at(
        static_cast<int64_t>(prefix),
        fmt::format("array has shape {} ({}-D); a weight matrix must be 2-D{}", shown, dims.size(),
                    dims.size() == 1 ? " (reshape a vector to (1, n) or (n, 1) if you mean a "
                                       "matrix)"
                                     : ""));
  }
  const uint64_t rows = dims[0], cols = dims[1];
  const uint64_t avail = size - prefix - header_len;
  const int64_t data_off = static_cast<int64_t>(prefix + header_len);
  // Checked before any allocation: a lying shape cannot make us allocate more than the file holds.
  uint64_t need = 0;
  const bool overflow = __builtin_mul_overflow(rows, cols, &need) ||
                        __builtin_mul_overflow(need, static_cast<uint64_t>(itemsize), &need);
  if (overflow)
    fail_at(static_cast<int64_t>(prefix),
            fmt::format("shape ({}, {}) overflows 64-bit byte counts", rows, cols));
  if (need != avail)
    fail_at(data_off, fmt::format("shape ({}, {}) of '{}' needs {} bytes of data, the file has {} "
                                  "after the header ({})",
                                  rows, cols, d, need, avail,
                                  need > avail ? "truncated file" : "trailing bytes"));

  DenseMatrix m;
  m.rows = static_cast<int64_t>(rows);
  m.cols = static_cast<int64_t>(cols);
  m.source = source_name;
  const size_t n = static_cast<size_t>(rows * cols);
  m.data.resize(n);
  const std::byte* p = data.data() + data_off;
  const bool transpose = fortran->b;
  if (itemsize == 4 && !swap && !transpose) {  // the common case: a plain copy
    if (n) std::memcpy(m.data.data(), p, n * 4);
    return m;
  }
  for (size_t i = 0; i < n; ++i) {
    float v;
    if (itemsize == 4) {
      v = load_le<float>(p + 4 * i, swap);
    } else if (itemsize == 2) {
      v = half_bits_to_float(load_le<uint16_t>(p + 2 * i, swap));
    } else {
      double x = load_le<double>(p + 8 * i, swap);
      if (std::isfinite(x) && std::fabs(x) > 3.4028234663852886e38) {
        size_t r = transpose ? i % rows : i / cols, c = transpose ? i / rows : i % cols;
        fail_at(data_off + static_cast<int64_t>(8 * i),
                fmt::format("element ({}, {}) = {:g} is beyond the fp32 range", r, c, x));
      }
      v = static_cast<float>(x);
    }
    // Fortran order stores column by column: element i is (i % rows, i / rows).
    if (transpose)
      m.data[(i % rows) * cols + i / rows] = v;
    else
      m.data[i] = v;
  }
  return m;
}

DenseMatrix read_npy(const std::string& path) {
  MappedFile f(path);
  return parse_npy(std::as_bytes(std::span(f.text().data(), f.text().size())), path);
}

void write_npy(const std::string& path, const DenseMatrix& m) {
  std::string header = fmt::format(
      "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", m.rows, m.cols);
  // Pad with spaces so that magic + version + length + header (ending in '\n') is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  SG_ASSERT(header.size() <= 65535, "npy v1 header too long");
  const auto len = static_cast<uint16_t>(header.size());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError(SourceLoc{path}, fmt::format("cannot create: {}", std::strerror(errno)));
  const unsigned char version[2] = {1, 0};
  bool ok = std::fwrite(kMagic, 1, 6, f) == 6 && std::fwrite(version, 1, 2, f) == 2 &&
            std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            (m.data.empty() || std::fwrite(m.data.data(), 4, m.data.size(), f) == m.data.size());
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw UserError(SourceLoc{path}, "write failed (disk full or not writable?)");
}

}  // namespace sparsegen
