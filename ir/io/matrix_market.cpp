#include "ir/io/matrix_market.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/io/text_scanner.h"

namespace sparsegen {

namespace {

constexpr double kFloatMax = 3.4028234663852886e38;

// ---------------------------------------------------------------------------------------------
// Header

struct Header {
  MmFormat format = MmFormat::Coordinate;
  ValueField field = ValueField::Real;
  MmSymmetry symmetry = MmSymmetry::General;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t declared = 0;  // entries (coordinate) or values (array) the file must hold
  int64_t size_line = 0;
  std::string_view data;       // everything after the size line
  int64_t data_first_line = 0;  // line number of data's first line
  std::string_view text;        // the whole file

  bool mirrored() const { return symmetry != MmSymmetry::General; }
  // Number of the file's last line, for "found the end of the file" (counted only on error).
  int64_t last_line() const;
};

[[noreturn]] void fail(const std::string& source, int64_t line, const std::string& what) {
  throw UserError(SourceLoc{source, line}, what);
}

// Counts the lines of the whole text (for "end of file" messages): the number of the last line.
int64_t count_lines(std::string_view text) {
  if (text.empty()) return 1;
  int64_t n = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n'));
  return text.back() == '\n' ? n : n + 1;
}

int64_t Header::last_line() const { return count_lines(text); }

bool is_comment(std::string_view line) {
  std::string_view t = trim(line);
  return !t.empty() && t.front() == '%';
}

void parse_banner(const Line& line, const std::string& src, Header& h) {
  Tokenizer tok(line.text);
  std::string_view word = tok.next();
  if (!iequals(word, "%%MatrixMarket") && !iequals(word, "%MatrixMarket")) {
    fail(src, line.number,
         fmt::format("expected the '%%MatrixMarket' banner, found {}", describe_token(word)));
  }
  word = tok.next();
  if (iequals(word, "vector"))
    fail(src, line.number, "expected object 'matrix', found 'vector' (vectors are not supported)");
  if (!iequals(word, "matrix"))
    fail(src, line.number, fmt::format("expected object 'matrix', found {}", describe_token(word)));

  word = tok.next();
  if (iequals(word, "coordinate")) {
    h.format = MmFormat::Coordinate;
  } else if (iequals(word, "array")) {
    h.format = MmFormat::Array;
  } else {
    fail(src, line.number, fmt::format("expected format 'coordinate' or 'array', found {}",
                                       describe_token(word)));
  }

  word = tok.next();
  if (iequals(word, "real")) {
    h.field = ValueField::Real;
  } else if (iequals(word, "integer")) {
    h.field = ValueField::Integer;
  } else if (iequals(word, "complex")) {
    h.field = ValueField::Complex;
  } else if (iequals(word, "pattern")) {
    h.field = ValueField::Pattern;
  } else {
    fail(src, line.number,
         fmt::format("expected field 'real', 'integer', 'complex' or 'pattern', found {}",
                     describe_token(word)));
  }

  word = tok.next();
  if (iequals(word, "general")) {
    h.symmetry = MmSymmetry::General;
  } else if (iequals(word, "symmetric")) {
    h.symmetry = MmSymmetry::Symmetric;
  } else if (iequals(word, "skew-symmetric")) {
    h.symmetry = MmSymmetry::SkewSymmetric;
  } else if (iequals(word, "hermitian")) {
    // Hermitian means "mirror is the conjugate"; for non-complex fields that is symmetric.
    h.symmetry = h.field == ValueField::Complex ? MmSymmetry::Hermitian : MmSymmetry::Symmetric;
  } else {
    fail(src, line.number,
         fmt::format("expected symmetry 'general', 'symmetric', 'skew-symmetric' or 'hermitian', "
                     "found {}",
                     describe_token(word)));
  }
  if (!tok.done()) {
    fail(src, line.number, fmt::format("expected the end of the banner after the symmetry, found {}",
                                       describe_token(tok.next())));
  }
  if (h.format == MmFormat::Array && h.field == ValueField::Pattern)
    fail(src, line.number, "expected a field with values for format 'array', found 'pattern' "
                           "('array pattern' is not a valid combination)");
  if (h.field == ValueField::Pattern && h.symmetry == MmSymmetry::SkewSymmetric)
    fail(src, line.number, "expected a field with values for symmetry 'skew-symmetric', found "
                           "'pattern' (a pattern cannot be negated)");
}

int64_t parse_size(Tokenizer& tok, const char* what, const std::string& src, int64_t line,
                   int64_t limit, bool is_dimension) {
  std::string_view t = tok.next();
  int64_t v = 0;
  switch (parse_int64(t, v)) {
    case NumberStatus::Ok: break;
    case NumberStatus::OutOfRange:
      fail(src, line, fmt::format("{} {} does not fit in a 64-bit integer", what, describe_token(t)));
    case NumberStatus::Invalid:
      fail(src, line, fmt::format("expected the {} (a non-negative integer), found {}", what,
                                  describe_token(t)));
  }
  if (v < 0) fail(src, line, fmt::format("expected a non-negative {}, found {}", what, v));
  if (is_dimension && v > kMaxDimension) {
    fail(src, line, fmt::format("{} {} is not supported: sparsegen indexes rows and columns with "
                                "32-bit integers (at most {})",
                                what, v, kMaxDimension));
  }
  if (is_dimension && v > limit)
    fail(src, line, fmt::format("{} {} exceeds this reader's limit of {}", what, v, limit));
  return v;
}

Header parse_header(std::string_view text, const std::string& src,
                    const MatrixMarketOptions& opt) {
  Header h;
  h.text = text;
  LineReader lines(text);
  Line line;
  if (!lines.next(line)) fail(src, 1, "expected the '%%MatrixMarket' banner, found an empty file");
  if (is_blank(line.text))
    fail(src, 1, "expected the '%%MatrixMarket' banner on line 1, found a blank line");
  parse_banner(line, src, h);

  // Comments and blank lines until the size line.
  bool found = false;
  while (lines.next(line)) {
    if (is_blank(line.text) || is_comment(line.text)) continue;
    found = true;
    break;
  }
  if (!found) {
    const char* expected = h.format == MmFormat::Coordinate ? "'rows columns entries'"
                                                            : "'rows columns'";
    fail(src, h.last_line(), fmt::format("expected the size line {}, found the end of the file",
                                       expected));
  }
  h.size_line = line.number;
  Tokenizer tok(line.text);
  h.rows = parse_size(tok, "row count", src, line.number, opt.max_rows, true);
  h.cols = parse_size(tok, "column count", src, line.number, kMaxDimension, true);
  if (h.format == MmFormat::Coordinate)
    h.declared = parse_size(tok, "entry count", src, line.number, 0, false);
  if (!tok.done()) {
    fail(src, line.number,
         fmt::format("expected the end of the size line after {} numbers, found {}",
                     h.format == MmFormat::Coordinate ? 3 : 2, describe_token(tok.next())));
  }
  if (h.mirrored() && h.rows != h.cols) {
    fail(src, line.number, fmt::format("expected a square matrix for a {} file, found {}x{}",
                                       h.symmetry == MmSymmetry::SkewSymmetric ? "skew-symmetric"
                                       : h.symmetry == MmSymmetry::Hermitian   ? "hermitian"
                                                                               : "symmetric",
                                       h.rows, h.cols));
  }
  if (h.format == MmFormat::Array) {
    const int64_t n = h.rows;  // square whenever mirrored
    switch (h.symmetry) {
      case MmSymmetry::General: h.declared = h.rows * h.cols; break;  // < 2^62, no overflow
      case MmSymmetry::Symmetric:
      case MmSymmetry::Hermitian: h.declared = n * (n + 1) / 2; break;
      case MmSymmetry::SkewSymmetric: h.declared = n * (n - 1) / 2; break;
    }
  }
  h.data = lines.rest();
  h.data_first_line = lines.next_number();
  return h;
}

// ---------------------------------------------------------------------------------------------
// Entry locations without a line per entry: a piecewise map position -> line where the line grows
// by one per entry except at recorded checkpoints (blank/comment lines, chunk starts).

class GapMap {
 public:
  // Call with strictly increasing positions; records only where value != previous value + 1.
  void add(int64_t pos, int64_t value) {
    if (points_.empty() || value - points_.back().second != pos - points_.back().first)
      points_.emplace_back(pos, value);
  }
  int64_t operator()(int64_t pos) const {
    auto it = std::upper_bound(points_.begin(), points_.end(), pos,
                               [](int64_t p, const std::pair<int64_t, int64_t>& cp) {
                                 return p < cp.first;
                               });
    SG_ASSERT(it != points_.begin(), "GapMap lookup before the first position");
    --it;
    return it->second + (pos - it->first);
  }
  void append(const GapMap& other, int64_t pos_offset, int64_t value_offset) {
    for (const auto& [p, v] : other.points_) add(p + pos_offset, v + value_offset);
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> points_;
};

// ---------------------------------------------------------------------------------------------
// Coordinate data: parsed in pieces (one per thread), then stitched together in file order.

struct Piece {
  std::string_view text;
  std::vector<int32_t> row, col;
  std::vector<float> val, imag;
  GapMap lines;  // local entry index -> local line index (0-based within the piece)
  int64_t line_count = 0;
  int64_t off_diagonal = 0;
  Diagnostics diag;  // locations hold local line indices (0-based); rebased when merged
  int64_t inexact = 0;
  int64_t inexact_line = 0;
  std::string inexact_detail;
  // First error, if any: local line index, entries parsed before it, message.
  bool failed = false;
  int64_t error_line = 0;
  int64_t error_entries = 0;
  std::string error;
};

// An integer that fp32 holds exactly: |v| = m * 2^k with m < 2^24.
bool fits_fp32_exactly(int64_t v) {
  uint64_t a = v < 0 ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
  if (a == 0) return true;
  return (a >> std::countr_zero(a)) < (1ULL << 24);
}

// Shared per-field value parsing for coordinate and array lines. Returns false with `error` set.
struct ValueParser {
  ValueField field;
  const std::string* source;

  // Parses the value token(s) of one line into re/im. `diag_line` is the line number used in
  // warnings (local or absolute, the caller's convention).
  bool parse(Tokenizer& tok, float& re, float& im, int64_t diag_line, Diagnostics& diag,
             int64_t& inexact, int64_t& inexact_line, std::string& inexact_detail,
             std::string& error) const {
    switch (field) {
      case ValueField::Pattern: return true;
      case ValueField::Integer: {
        std::string_view t = tok.next();
        int64_t v = 0;
        NumberStatus st = parse_int64(t, v);
        if (st == NumberStatus::OutOfRange) {
          error = fmt::format("integer value {} does not fit in 64 bits", describe_token(t));
          return false;
        }
        if (st != NumberStatus::Ok) {
          error = fmt::format("expected an integer value, found {}", describe_token(t));
          return false;
        }
        re = static_cast<float>(v);
        if (!fits_fp32_exactly(v)) {
          if (inexact++ == 0) {
            inexact_line = diag_line;
            inexact_detail = fmt::format("integer {} stored as {:.9g} in fp32", v, re);
          }
        }
        return true;
      }
      case ValueField::Real: return parse_real(tok, re, "a real value", diag_line, diag, error);
      case ValueField::Complex:
        return parse_real(tok, re, "the real part of a complex value", diag_line, diag, error) &&
               parse_real(tok, im, "the imaginary part of a complex value", diag_line, diag,
                          error);
    }
    return false;
  }

  bool parse_real(Tokenizer& tok, float& out, const char* what, int64_t diag_line,
                  Diagnostics& diag, std::string& error) const {
    std::string_view t = tok.next();
    double v = 0;
    NumberStatus st = parse_double(t, v);
    if (st == NumberStatus::OutOfRange) {
      error = fmt::format("expected {} within the double range, found {}", what,
                          describe_token(t));
      return false;
    }
    if (st != NumberStatus::Ok) {
      error = fmt::format("expected {}, found {}", what, describe_token(t));
      return false;
    }
    if (std::isfinite(v) && std::fabs(v) <= kFloatMax) {
      out = static_cast<float>(v);
    } else {
      out = to_master_value(v, SourceLoc{*source, diag_line}, diag);
    }
    return true;
  }
};

const char* value_description(ValueField f) {
  switch (f) {
    case ValueField::Pattern: return "the column index";
    case ValueField::Complex: return "the imaginary part";
    default: return "the value";
  }
}

// Index token -> 0-based index in [0, dim); false with `error` set.
bool parse_index(std::string_view t, int64_t dim, const char* what, int32_t& out,
                 std::string& error) {
  int64_t v = 0;
  NumberStatus st = parse_int64(t, v);
  if (st == NumberStatus::OutOfRange) {
    error = fmt::format("{} {} does not fit in a 64-bit integer", what, describe_token(t));
    return false;
  }
  if (st != NumberStatus::Ok) {
    error = fmt::format("expected a {} (an integer), found {}", what, describe_token(t));
    return false;
  }
  if (v < 1 || v > dim) {
    error = dim == 0 ? fmt::format("found {} {}, but the matrix has no {}", what, v,
                                   std::strcmp(what, "row index") == 0 ? "rows" : "columns")
                     : fmt::format("expected a {} in [1, {}], found {}{}", what, dim, v,
                                   v == 0 ? " (indices are 1-based)" : "");
    return false;
  }
  out = static_cast<int32_t>(v - 1);
  return true;
}

void parse_coordinate_piece(Piece& pc, const Header& h, const std::string& src,
                            int64_t reserve_entries, int64_t max_entries) {
  pc.row.reserve(static_cast<size_t>(reserve_entries));
  pc.col.reserve(static_cast<size_t>(reserve_entries));
  pc.val.reserve(static_cast<size_t>(reserve_entries));
  const bool complex = h.field == ValueField::Complex;
  if (complex) pc.imag.reserve(static_cast<size_t>(reserve_entries));
  const ValueParser vp{h.field, &src};
  const bool skew = h.symmetry == MmSymmetry::SkewSymmetric;

  LineReader lines(pc.text, 0);
  Line line;
  int64_t n = 0;
  std::string error;
  while (lines.next(line)) {
    std::string_view s = line.text;
    // Fast skip of leading separators to classify the line.
    size_t k = 0;
    while (k < s.size() && is_space(s[k])) ++k;
    if (k == s.size() || s[k] == '%') continue;  // blank or comment

    Tokenizer tok(s.substr(k));
    int32_t r = 0, c = 0;
    float re = 0, im = 0;
    bool ok = parse_index(tok.next(), h.rows, "row index", r, error) &&
              parse_index(tok.next(), h.cols, "column index", c, error) &&
              vp.parse(tok, re, im, line.number, pc.diag, pc.inexact, pc.inexact_line,
                       pc.inexact_detail, error);
    if (ok && !tok.done()) {
      error = fmt::format("expected the end of the line after {}, found {}",
                          value_description(h.field), describe_token(tok.next()));
      ok = false;
    }
    if (ok && skew && r == c) {
      error = fmt::format("expected an off-diagonal entry in a skew-symmetric file, found ({}, {}) "
                          "(the diagonal of a skew-symmetric matrix is zero and not stored)",
                          r + 1, c + 1);
      ok = false;
    }
    if (!ok) {
      pc.failed = true;
      pc.error_line = line.number;
      pc.error_entries = n;
      pc.error = std::move(error);
      break;
    }
    pc.lines.add(n, line.number);
    pc.row.push_back(r);
    pc.col.push_back(c);
    pc.val.push_back(re);
    if (complex) pc.imag.push_back(im);
    if (r != c) ++pc.off_diagonal;
    ++n;
    // More entries than the whole file may declare: stop early, the caller reports it.
    if (n > max_entries) break;
  }
  pc.line_count = lines.next_number();
}

// ---------------------------------------------------------------------------------------------
// Array data: one value (two for complex) per line, column-major, lower triangle when mirrored.

struct ArrayResult {
  Triplets t;
  GapMap lines;
  int64_t off_diagonal = 0;
};

void parse_array(const Header& h, const std::string& src, Diagnostics& diag, ArrayResult& out) {
  const bool complex = h.field == ValueField::Complex;
  // An array value line is at least 2 bytes ("1\n"); never reserve beyond what the file can hold.
  const int64_t plausible =
      std::min<int64_t>(h.declared, static_cast<int64_t>(h.data.size() / 2) + 1);
  out.t.reserve(static_cast<size_t>(plausible), complex);
  const ValueParser vp{h.field, &src};
  int64_t inexact = 0, inexact_line = 0;
  std::string inexact_detail, error;

  // Column-major walk over the stored positions.
  int64_t i = 0, j = 0;
  auto first_row = [&](int64_t col) -> int64_t {
    switch (h.symmetry) {
      case MmSymmetry::General: return 0;
      case MmSymmetry::SkewSymmetric: return col + 1;
      default: return col;
    }
  };
  if (h.declared > 0) {
    while (first_row(j) >= h.rows) ++j;  // skew 1x1 etc. have no stored values
    i = first_row(j);
  }

  LineReader lines(h.data, h.data_first_line);
  Line line;
  int64_t n = 0;
  while (lines.next(line)) {
    if (is_blank(line.text) || is_comment(line.text)) continue;
    if (n == h.declared) {
      fail(src, line.number,
           fmt::format("expected {} values (size line {}), found more: this line is value {}",
                       h.declared, h.size_line, n + 1));
    }
    Tokenizer tok(line.text);
    float re = 0, im = 0;
    if (!vp.parse(tok, re, im, line.number, diag, inexact, inexact_line, inexact_detail, error))
      fail(src, line.number, error);
    if (!tok.done()) {
      fail(src, line.number,
           fmt::format("expected one {} per line in an array file, found another token {}",
                       complex ? "complex pair" : "value", describe_token(tok.next())));
    }
    out.lines.add(n, line.number);
    out.t.row.push_back(static_cast<int32_t>(i));
    out.t.col.push_back(static_cast<int32_t>(j));
    out.t.val.push_back(re);
    if (complex) out.t.imag.push_back(im);
    if (i != j) ++out.off_diagonal;
    ++n;
    if (++i == h.rows) {
      ++j;
      while (j < h.cols && first_row(j) >= h.rows) ++j;
      i = j < h.cols ? first_row(j) : 0;
    }
  }
  if (n < h.declared) {
    fail(src, h.last_line(),
         fmt::format("expected {} values (size line {}), found {} before the end of the file",
                     h.declared, h.size_line, n));
  }
  if (inexact > 0) {
    diag.warn_n(WarningKind::PrecisionLoss, inexact, SourceLoc{src, inexact_line},
                inexact_detail);
  }
}

// ---------------------------------------------------------------------------------------------

int worker_count(const MatrixMarketOptions& opt) {
  if (opt.threads > 0) return std::min(opt.threads, 64);
  unsigned hc = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hc, 1u, 8u));
}

// Minimum bytes of one coordinate entry line, "1 1\n" + per-field value text.
int64_t min_entry_bytes(ValueField f) {
  switch (f) {
    case ValueField::Pattern: return 4;
    case ValueField::Complex: return 8;
    default: return 6;
  }
}

// Appends the symmetric counterpart of every off-diagonal stored entry (positions [0, stored)),
// recording which stored entry each mirror came from.
void append_mirrors(Triplets& t, MmSymmetry sym, GapMap& mirror_source) {
  const size_t stored = t.size();
  const bool complex = !t.imag.empty();
  int64_t m = static_cast<int64_t>(stored);
  for (size_t p = 0; p < stored; ++p) {
    if (t.row[p] == t.col[p]) continue;
    mirror_source.add(m++, static_cast<int64_t>(p));
    t.row.push_back(t.col[p]);
    t.col.push_back(t.row[p]);
    t.val.push_back(sym == MmSymmetry::SkewSymmetric ? -t.val[p] : t.val[p]);
    if (complex) {
      float im = t.imag[p];
      t.imag.push_back(sym == MmSymmetry::General || sym == MmSymmetry::Symmetric ? im : -im);
    }
  }
}

CsrMatrix read_impl(std::string_view text, const std::string& src,
                    const MatrixMarketOptions& opt, Diagnostics& diag, MatrixMarketInfo* info) {
  const Header h = parse_header(text, src, opt);
  const bool complex = h.field == ValueField::Complex;

  Triplets t;
  t.rows = h.rows;
  t.cols = h.cols;
  GapMap entry_line;  // stored entry position -> file line
  int64_t stored = 0, off_diagonal = 0;

  if (h.format == MmFormat::Array) {
    ArrayResult ar;
    parse_array(h, src, diag, ar);
    t.row = std::move(ar.t.row);
    t.col = std::move(ar.t.col);
    t.val = std::move(ar.t.val);
    t.imag = std::move(ar.t.imag);
    entry_line = std::move(ar.lines);
    stored = static_cast<int64_t>(t.size());
    off_diagonal = ar.off_diagonal;
  } else {
    // A file cannot hold more entries than its bytes allow; size buffers from that, never from
    // the header alone.
    const int64_t max_possible =
        static_cast<int64_t>(h.data.size()) / min_entry_bytes(h.field) + 1;
    const int64_t plausible = std::min(h.declared, max_possible);
    std::vector<std::string_view> texts =
        split_at_lines(h.data, static_cast<size_t>(worker_count(opt)), size_t{4} << 20);
    std::vector<Piece> pieces(texts.size());
    for (size_t k = 0; k < texts.size(); ++k) pieces[k].text = texts[k];

    // The first piece reserves room for the whole (plausible) matrix, mirrors included: reserved
    // pages cost nothing until touched, and the other pieces are then appended without a copy of
    // the first.
    const int64_t final_estimate = h.mirrored() ? 2 * plausible : plausible;
    std::vector<std::exception_ptr> errors(pieces.size());
    auto run = [&](size_t k) {
      const double share = h.data.empty() ? 1.0
                                          : static_cast<double>(texts[k].size()) /
                                                static_cast<double>(h.data.size());
      int64_t reserve = k == 0 ? final_estimate
                               : static_cast<int64_t>(static_cast<double>(plausible) * share * 1.05);
      try {
        parse_coordinate_piece(pieces[k], h, src, reserve, h.declared);
      } catch (...) {
        errors[k] = std::current_exception();  // e.g. bad_alloc; rethrown on this thread
      }
    };
    if (pieces.size() == 1) {
      run(0);
    } else {
      std::vector<std::thread> workers;
      for (size_t k = 1; k < pieces.size(); ++k) workers.emplace_back(run, k);
      run(0);
      for (auto& w : workers) w.join();
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);

    // Stitch in file order; the first problem in file order wins.
    int64_t base_line = h.data_first_line;
    Piece& first = pieces[0];
    t.row = std::move(first.row);
    t.col = std::move(first.col);
    t.val = std::move(first.val);
    t.imag = std::move(first.imag);
    int64_t inexact = 0, inexact_line = 0;
    std::string inexact_detail;
    for (size_t k = 0; k < pieces.size(); ++k) {
      Piece& pc = pieces[k];
      const int64_t base_entry = stored;
      if (k > 0) {
        t.row.insert(t.row.end(), pc.row.begin(), pc.row.end());
        t.col.insert(t.col.end(), pc.col.begin(), pc.col.end());
        t.val.insert(t.val.end(), pc.val.begin(), pc.val.end());
        t.imag.insert(t.imag.end(), pc.imag.begin(), pc.imag.end());
        pc.row = {};
        pc.col = {};
        pc.val = {};
        pc.imag = {};
      }
      entry_line.append(pc.lines, base_entry, base_line);
      const int64_t parsed =
          pc.failed ? pc.error_entries : static_cast<int64_t>(t.size()) - base_entry;
      stored += parsed;
      off_diagonal += pc.off_diagonal;
      if (stored > h.declared) {
        fail(src, entry_line(h.declared),
             fmt::format("expected {} entries (size line {}), found more: this line is entry {}",
                         h.declared, h.size_line, h.declared + 1));
      }
      if (pc.failed) fail(src, base_line + pc.error_line, pc.error);
      for (const auto& [kind, tally] : pc.diag.tallies()) {
        SourceLoc loc = tally.first;
        loc.line += base_line;
        diag.warn_n(kind, tally.count, loc, tally.first_detail);
      }
      if (pc.inexact > 0 && inexact == 0) {
        inexact_line = base_line + pc.inexact_line;
        inexact_detail = pc.inexact_detail;
      }
      inexact += pc.inexact;
      base_line += pc.line_count;
    }
    if (stored < h.declared) {
      fail(src, h.last_line(),
           fmt::format("expected {} entries (size line {}), found {} before the end of the file",
                       h.declared, h.size_line, stored));
    }
    if (inexact > 0)
      diag.warn_n(WarningKind::PrecisionLoss, inexact, SourceLoc{src, inexact_line},
                  inexact_detail);
  }

  // Symmetry expansion.
  GapMap mirror_source;  // mirror position -> stored position
  int64_t implied = 0;
  if (!h.mirrored()) off_diagonal = 0;  // from here on: the number of mirrored entries
  if (h.mirrored()) {
    const size_t final_size = static_cast<size_t>(stored + off_diagonal);
    t.reserve(final_size, complex);
    append_mirrors(t, h.symmetry, mirror_source);
    if (h.format == MmFormat::Array && h.symmetry == MmSymmetry::SkewSymmetric) {
      // The array is dense: its zero diagonal is part of it, as in the general expansion.
      for (int64_t d = 0; d < h.rows; ++d) {
        t.row.push_back(static_cast<int32_t>(d));
        t.col.push_back(static_cast<int32_t>(d));
        t.val.push_back(0.0f);
        if (complex) t.imag.push_back(0.0f);
      }
      implied = h.rows;
    }
  }

  const int64_t mirrors_end = stored + off_diagonal;
  EntryLocator locate = [&](size_t position) {
    const int64_t p = static_cast<int64_t>(position);
    if (p < stored) return SourceLoc{src, entry_line(p)};
    if (p < mirrors_end) return SourceLoc{src, entry_line(mirror_source(p))};
    return SourceLoc{src, h.size_line};  // implied entries
  };
  ValueField field = h.field;
  CsrMatrix m = canonicalize(std::move(t), field, opt.duplicates, locate, diag);
  m.source = src;
  if (h.field == ValueField::Pattern) synthesize_pattern_values(m, opt.pattern_seed, diag);

  if (info != nullptr) {
    info->format = h.format;
    info->field = h.field;
    info->symmetry = h.symmetry;
    info->rows = h.rows;
    info->cols = h.cols;
    info->stored_entries = stored;
    info->mirrored_entries = off_diagonal;
    info->implied_entries = implied;
    info->duplicates_merged = stored + off_diagonal + implied - m.nnz();
  }
  return m;
}

}  // namespace

CsrMatrix read_matrix_market(const std::string& path, DuplicatePolicy duplicates,
                             Diagnostics& diag) {
  MatrixMarketOptions opt;
  opt.duplicates = duplicates;
  return read_matrix_market(path, opt, diag);
}

CsrMatrix read_matrix_market(const std::string& path, const MatrixMarketOptions& options,
                             Diagnostics& diag, MatrixMarketInfo* info) {
  MappedFile file(path);
  return read_impl(file.text(), path, options, diag, info);
}

CsrMatrix read_matrix_market_buffer(std::string_view text, const std::string& source_name,
                                    DuplicatePolicy duplicates, Diagnostics& diag) {
  MatrixMarketOptions opt;
  opt.duplicates = duplicates;
  return read_matrix_market_buffer(text, source_name, opt, diag);
}

CsrMatrix read_matrix_market_buffer(std::string_view text, const std::string& source_name,
                                    const MatrixMarketOptions& options, Diagnostics& diag,
                                    MatrixMarketInfo* info) {
  return read_impl(text, source_name, options, diag, info);
}

void write_matrix_market(const CsrMatrix& m, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    throw UserError(SourceLoc{path}, fmt::format("cannot write file: {}", std::strerror(errno)));
  const bool pattern = m.pattern_only || m.field == ValueField::Pattern;
  const bool complex = !pattern && !m.imag.empty();
  std::string buf;
  buf.reserve(1 << 20);
  fmt::format_to(std::back_inserter(buf), "%%MatrixMarket matrix coordinate {} general\n",
                 pattern ? "pattern" : complex ? "complex" : "real");
  if (!m.source.empty()) fmt::format_to(std::back_inserter(buf), "% from {}\n", m.source);
  fmt::format_to(std::back_inserter(buf), "{} {} {}\n", m.rows, m.cols, m.nnz());
  bool ok = true;
  auto flush = [&] {
    if (!buf.empty() && std::fwrite(buf.data(), 1, buf.size(), f) != buf.size()) ok = false;
    buf.clear();
  };
  for (int64_t r = 0; r < m.rows && ok; ++r) {
    for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k) {
      const auto kk = static_cast<size_t>(k);
      if (pattern) {
        fmt::format_to(std::back_inserter(buf), "{} {}\n", r + 1, m.col_idx[kk] + 1);
      } else if (complex) {
        fmt::format_to(std::back_inserter(buf), "{} {} {:.9g} {:.9g}\n", r + 1, m.col_idx[kk] + 1,
                       m.values[kk], m.imag[kk]);
      } else {
        fmt::format_to(std::back_inserter(buf), "{} {} {:.9g}\n", r + 1, m.col_idx[kk] + 1,
                       m.values[kk]);
      }
    }
    if (buf.size() > (1 << 20) - 256) flush();
  }
  flush();
  if (std::fclose(f) != 0) ok = false;
  if (!ok) throw UserError(SourceLoc{path}, fmt::format("write failed: {}", std::strerror(errno)));
}

}  // namespace sparsegen
