#include "ir/io/smtx.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ir/io/text_scanner.h"

namespace sparsegen {

namespace {

[[noreturn]] void fail(const std::string& source, int64_t line, const std::string& what) {
  throw UserError(SourceLoc{source, line}, what);
}

// The next token of `tok` as a non-negative integer; `what` names it in errors ("row offset 17").
uint64_t next_count(Tokenizer& tok, const std::string& source, int64_t line,
                    const std::string& what) {
  std::string_view t = tok.next();
  if (t.empty()) fail(source, line, fmt::format("expected {}, found end of line", what));
  int64_t v = 0;
  switch (parse_int64(t, v)) {
    case NumberStatus::Ok:
      break;
    case NumberStatus::OutOfRange:
      fail(source, line, fmt::format("{} {} overflows 64 bits", what, describe_token(t)));
    case NumberStatus::Invalid:
      fail(source, line,
           fmt::format("expected {} (a non-negative integer), found {}", what, describe_token(t)));
  }
  if (v < 0)
    fail(source, line,
         fmt::format("expected {} (a non-negative integer), found {}", what, describe_token(t)));
  return static_cast<uint64_t>(v);
}

}  // namespace

CsrMatrix parse_smtx(std::string_view text, const std::string& source_name, uint64_t seed,
                     Diagnostics& diag) {
  const std::string& src = source_name;
  LineReader reader(text);
  // The three lines; a missing one reads as empty (and is reported by what it lacks).
  Line lines[3];
  for (int i = 0; i < 3; ++i) {
    lines[i].number = i + 1;
    reader.next(lines[i]);
  }

  // Line 1: rows, cols, nnz.
  Tokenizer h(lines[0].text, ',');
  if (h.done()) fail(src, 1, "expected 'nrows, ncols, nnz', found an empty line");
  const uint64_t rows = next_count(h, src, 1, "nrows");
  const uint64_t cols = next_count(h, src, 1, "ncols");
  const uint64_t nnz = next_count(h, src, 1, "nnz");
  if (!h.done())
    fail(src, 1, fmt::format("unexpected {} after 'nrows, ncols, nnz'", describe_token(h.next())));
  if (rows > static_cast<uint64_t>(kMaxDimension) || cols > static_cast<uint64_t>(kMaxDimension))
    fail(src, 1, fmt::format("dimensions {}x{} exceed the supported maximum 2^31-1", rows, cols));
  if ((rows == 0 || cols == 0) ? nnz != 0 : nnz / rows > cols || (nnz / rows == cols && nnz % rows))
    fail(src, 1, fmt::format("nnz {} exceeds nrows*ncols = {}x{}", nnz, rows, cols));

  CsrMatrix m;
  m.rows = static_cast<int64_t>(rows);
  m.cols = static_cast<int64_t>(cols);
  m.field = ValueField::Pattern;
  m.source = source_name;
  const int64_t n = static_cast<int64_t>(nnz);

  // Line 2: rows+1 offsets. Reservations are bounded by the line's length (each number takes at
  // least 2 bytes with its separator), never by the header alone.
  {
    Tokenizer t(lines[1].text);
    m.row_ptr.clear();
    m.row_ptr.reserve(std::min<size_t>(rows + 1, lines[1].text.size() / 2 + 1));
    for (uint64_t k = 0; k <= rows; ++k) {
      if (t.done())
        fail(src, 2, fmt::format("expected nrows+1 = {} row offsets, found {}", rows + 1, k));
      const uint64_t v = next_count(t, src, 2, fmt::format("row offset {}", k));
      if (k == 0 && v != 0)
        fail(src, 2, fmt::format("offset 0 is {}; row offsets must start at 0", v));
      if (k > 0 && v < static_cast<uint64_t>(m.row_ptr.back()))
        fail(src, 2,
             fmt::format("offset {} (row {}) decreases: {} after {}", k, k - 1, v,
                         m.row_ptr.back()));
      if (v > nnz)
        fail(src, 2, fmt::format("offset {} (row {}) is {}, beyond nnz = {}", k, k - 1, v, nnz));
      m.row_ptr.push_back(static_cast<int64_t>(v));
    }
    if (!t.done())
      fail(src, 2,
           fmt::format("more than nrows+1 = {} row offsets: unexpected {}", rows + 1,
                       describe_token(t.next())));
    if (m.row_ptr.back() != n)
      fail(src, 2,
           fmt::format("last offset {} is {}, expected nnz = {}", rows, m.row_ptr.back(), nnz));
  }

  // Line 3: nnz column indices, strictly increasing within each row.
  {
    Tokenizer t(lines[2].text);
    m.col_idx.reserve(std::min<size_t>(nnz, lines[2].text.size() / 2 + 1));
    for (int64_t r = 0; r < m.rows; ++r) {
      for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k) {
        if (t.done())
          fail(src, 3, fmt::format("expected nnz = {} column indices, found {}", nnz, k));
        const uint64_t v = next_count(t, src, 3, fmt::format("column index {}", k));
        if (v >= cols)
          fail(src, 3,
               fmt::format("column index {} (row {}) is {}, outside [0, {})", k, r, v, cols));
        if (k > m.row_ptr[r] && static_cast<int32_t>(v) <= m.col_idx.back())
          fail(src, 3,
               fmt::format("column index {} (row {}) is {} after {}: columns must be "
                           "strictly increasing within a row",
                           k, r, v, m.col_idx.back()));
        m.col_idx.push_back(static_cast<int32_t>(v));
      }
    }
    if (!t.done())
      fail(src, 3,
           fmt::format("more than nnz = {} column indices: unexpected {}", nnz,
                       describe_token(t.next())));
  }
  for (Line extra; reader.next(extra);)
    if (!is_blank(extra.text))
      fail(src, extra.number, "unexpected content after the 3 lines of an .smtx file");

  synthesize_pattern_values(m, seed, diag);
  return m;
}

CsrMatrix read_smtx(const std::string& path, uint64_t seed, Diagnostics& diag) {
  MappedFile f(path);
  return parse_smtx(f.text(), path, seed, diag);
}

}  // namespace sparsegen
