// Matrix Market reader/writer and the text scanner under it: every accepted feature, every
// rejection (with its file:line), symmetry expansion against the data set's golden expansions,
// and the multi-threaded path against the single-threaded one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

#include "ir/io/matrix_market.h"
#include "ir/io/text_scanner.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

CsrMatrix read(std::string_view text, Diagnostics& diag,
               DuplicatePolicy policy = DuplicatePolicy::Sum, MatrixMarketInfo* info = nullptr) {
  MatrixMarketOptions opt;
  opt.duplicates = policy;
  return read_matrix_market_buffer(text, "t.mtx", opt, diag, info);
}

CsrMatrix read(std::string_view text) {
  Diagnostics diag;
  return read(text, diag);
}

// The message of the UserError reading `text` throws ("" if it loads).
std::string error_of(std::string_view text, DuplicatePolicy policy = DuplicatePolicy::Sum) {
  try {
    Diagnostics diag;
    read(text, diag, policy);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Dense (row, col) -> value lookup for small matrices; NaN where there is no entry.
float at(const CsrMatrix& m, int64_t r, int64_t c, bool imag = false) {
  for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k)
    if (m.col_idx[k] == c) return imag ? m.imag[k] : m.values[k];
  return NAN;
}

// ------------------------------------------------------------------------------------------------
// Text scanner

TEST(TextScanner, LinesWithNumbersCrlfAndMissingFinalNewline) {
  LineReader lr("a\r\n\nb c\nlast");
  Line l;
  ASSERT_TRUE(lr.next(l));
  EXPECT_EQ(l.text, "a\r");
  EXPECT_EQ(l.number, 1);
  ASSERT_TRUE(lr.next(l));
  EXPECT_EQ(l.text, "");
  EXPECT_EQ(l.number, 2);
  ASSERT_TRUE(lr.next(l));
  EXPECT_EQ(l.text, "b c");
  EXPECT_EQ(l.offset, 4u);
  ASSERT_TRUE(lr.next(l));
  EXPECT_EQ(l.text, "last");
  EXPECT_EQ(l.number, 4);
  EXPECT_FALSE(lr.next(l));

  LineReader empty("");
  EXPECT_FALSE(empty.next(l));
  LineReader one("x\n");
  ASSERT_TRUE(one.next(l));
  EXPECT_FALSE(one.next(l));  // no phantom empty line after the final newline
}

TEST(TextScanner, Tokenizer) {
  Tokenizer t("  12\t-3  4.5\r");
  EXPECT_EQ(t.next(), "12");
  EXPECT_EQ(t.next(), "-3");
  EXPECT_FALSE(t.done());
  EXPECT_EQ(t.rest(), "4.5\r");
  EXPECT_EQ(t.next(), "4.5");
  EXPECT_TRUE(t.done());
  EXPECT_EQ(t.next(), "");

  Tokenizer c("512, 512,131072", ',');
  EXPECT_EQ(c.next(), "512");
  EXPECT_EQ(c.next(), "512");
  EXPECT_EQ(c.next(), "131072");
  EXPECT_TRUE(c.done());
}

TEST(TextScanner, ParseInt64) {
  int64_t v = 0;
  EXPECT_EQ(parse_int64("42", v), NumberStatus::Ok);
  EXPECT_EQ(v, 42);
  EXPECT_EQ(parse_int64("+7", v), NumberStatus::Ok);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(parse_int64("-9223372036854775808", v), NumberStatus::Ok);
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_EQ(parse_int64("9223372036854775807", v), NumberStatus::Ok);
  EXPECT_EQ(parse_int64("9223372036854775808", v), NumberStatus::OutOfRange);
  EXPECT_EQ(parse_int64("19223372036854775808", v), NumberStatus::OutOfRange);
  for (const char* bad : {"", "+", "-", "+-3", "1.0", "1e3", "inf", "0x10", "3a", " 3"})
    EXPECT_EQ(parse_int64(bad, v), NumberStatus::Invalid) << bad;
}

TEST(TextScanner, ParseDouble) {
  double v = 0;
  struct Case {
    const char* text;
    double value;
  };
  for (Case c : {Case{"1", 1.0}, {"-2.5", -2.5}, {"+1.5e3", 1500.0}, {"12.", 12.0}, {".5", 0.5},
                 {"1E-3", 1e-3}, {"-2.8E2", -280.0}, {"1.5e-2", 0.015}, {"1e-400", 0.0}}) {
    ASSERT_EQ(parse_double(c.text, v), NumberStatus::Ok) << c.text;
    EXPECT_DOUBLE_EQ(v, c.value) << c.text;
  }
  for (const char* s : {"inf", "+inf", "INF", "Infinity"}) {
    ASSERT_EQ(parse_double(s, v), NumberStatus::Ok) << s;
    EXPECT_TRUE(std::isinf(v) && v > 0) << s;
  }
  ASSERT_EQ(parse_double("-inf", v), NumberStatus::Ok);
  EXPECT_TRUE(std::isinf(v) && v < 0);
  for (const char* s : {"nan", "NaN", "-nan", "+nan"}) {
    ASSERT_EQ(parse_double(s, v), NumberStatus::Ok) << s;
    EXPECT_TRUE(std::isnan(v)) << s;
  }
  EXPECT_EQ(parse_double("1e310", v), NumberStatus::OutOfRange);
  EXPECT_EQ(parse_double("-1E9999", v), NumberStatus::OutOfRange);
  for (const char* bad : {"", "+", "+-1", "++1", "1.0.0", "pi", "0x10", "1e", "1,5", "1d0"})
    EXPECT_EQ(parse_double(bad, v), NumberStatus::Invalid) << bad;
}

TEST(TextScanner, DescribeTokenEscapesAndTruncates) {
  EXPECT_EQ(describe_token(""), "end of line");
  EXPECT_EQ(describe_token("abc"), "'abc'");
  EXPECT_EQ(describe_token(std::string_view("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(describe_token(std::string(100, 'x')), "'" + std::string(40, 'x') + "...'");
}

TEST(TextScanner, SplitAtLines) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += fmt::format("line {}\n", i);
  auto pieces = split_at_lines(text, 4, 1);
  ASSERT_EQ(pieces.size(), 4u);
  std::string joined;
  for (auto p : pieces) {
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.back(), '\n');
    joined += p;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(split_at_lines(text, 4, 1 << 20).size(), 1u);  // too small to split
  EXPECT_EQ(split_at_lines("", 4, 1).size(), 1u);
  EXPECT_EQ(split_at_lines("no newline at all", 4, 1).size(), 1u);
}

// ------------------------------------------------------------------------------------------------
// Accepted input

TEST(MatrixMarket, CoordinateRealGeneral) {
  Diagnostics diag;
  MatrixMarketInfo info;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "3 4 4\n"
      "3 4 -1.5\n"
      "1 1 2\n"
      "1 3 0\n"  // explicit zero: kept
      "2 2 +1.5e3\n",
      diag, DuplicatePolicy::Sum, &info);
  m.check_canonical();
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.nnz(), 4);
  EXPECT_EQ(m.field, ValueField::Real);
  EXPECT_FALSE(m.pattern_only);
  EXPECT_EQ(m.source, "t.mtx");
  EXPECT_EQ(at(m, 0, 0), 2.0f);
  EXPECT_EQ(at(m, 0, 2), 0.0f);
  EXPECT_EQ(at(m, 1, 1), 1500.0f);
  EXPECT_EQ(at(m, 2, 3), -1.5f);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(info.stored_entries, 4);
  EXPECT_EQ(info.mirrored_entries, 0);
  EXPECT_EQ(info.duplicates_merged, 0);
}

TEST(MatrixMarket, TolerantLayout) {
  const std::string expected_text =
      "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 2\n";
  const CsrMatrix want = read(expected_text);
  for (const std::string& text : {
           // any case
           std::string("%%matrixmarket MATRIX Coordinate Real GENERAL\n2 2 2\n1 1 1\n2 2 2\n"),
           // leading space and indentation everywhere, no final newline
           std::string(" %%MatrixMarket matrix coordinate real general\n   2 2 2\n\t1 1 1\n"
                       "  2   2\t 2"),
           // single percent
           std::string("%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 2\n"),
           // CRLF, blank lines and comments everywhere after the banner, GraphBLAS lines
           std::string("%%MatrixMarket matrix coordinate real general\r\n%%GraphBLAS type "
                       "double\r\n\r\n% c\r\n2 2 2\r\n\r\n% mid\r\n1 1 1\r\n   \r\n2 2 2\r\n\r\n"),
       }) {
    SCOPED_TRACE(text);
    CsrMatrix m = read(text);
    EXPECT_EQ(m.row_ptr, want.row_ptr);
    EXPECT_EQ(m.col_idx, want.col_idx);
    EXPECT_EQ(m.values, want.values);
  }
}

TEST(MatrixMarket, EmptyMatricesAndZeroDimensions) {
  CsrMatrix a = read("%%MatrixMarket matrix coordinate real general\n3 4 0\n");
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 4);
  EXPECT_EQ(a.nnz(), 0);
  a.check_canonical();
  CsrMatrix b = read("%%MatrixMarket matrix coordinate pattern general\n0 0 0\n");
  EXPECT_EQ(b.rows, 0);
  EXPECT_EQ(b.nnz(), 0);
  b.check_canonical();
  CsrMatrix c = read("%%MatrixMarket matrix array real general\n3 0\n");
  EXPECT_EQ(c.rows, 3);
  EXPECT_EQ(c.cols, 0);
  c.check_canonical();
  CsrMatrix d = read("%%MatrixMarket matrix coordinate real symmetric\n0 0 0");
  EXPECT_EQ(d.nnz(), 0);
}

TEST(MatrixMarket, IntegerValuesAndPrecisionLoss) {
  Diagnostics diag;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate integer general\n3 3 3\n"
      "1 1 16777216\n"             // 2^24: exact in fp32
      "2 2 16777217\n"             // 2^24+1: not exact
      "3 3 9223372036854775807\n",  // INT64_MAX: not exact
      diag);
  EXPECT_EQ(m.field, ValueField::Integer);
  EXPECT_EQ(at(m, 0, 0), 16777216.0f);
  EXPECT_EQ(at(m, 2, 2), 9223372036854775807.0f);
  EXPECT_EQ(diag.count(WarningKind::PrecisionLoss), 2);
  EXPECT_EQ(diag.tallies().at(WarningKind::PrecisionLoss).first.line, 4);
}

TEST(MatrixMarket, NonFiniteAndFp32OverflowAreReportedWithTheLine) {
  Diagnostics diag;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real general\n% c\n3 3 4\n"
      "1 1 nan\n"
      "\n"
      "2 2 -inf\n"
      "3 3 1e39\n"
      "1 2 1e-50\n",  // underflows fp32 to 0: silently rounded like any real
      diag);
  EXPECT_TRUE(std::isnan(at(m, 0, 0)));
  EXPECT_TRUE(std::isinf(at(m, 1, 1)));
  EXPECT_EQ(diag.count(WarningKind::NonFinite), 2);
  EXPECT_EQ(diag.tallies().at(WarningKind::NonFinite).first.line, 4);
  EXPECT_EQ(diag.count(WarningKind::OutOfRange), 1);
  EXPECT_EQ(diag.tallies().at(WarningKind::OutOfRange).first.line, 7);
}

TEST(MatrixMarket, PatternGetsSynthesizedValues) {
  Diagnostics diag;
  CsrMatrix m = read("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n", diag);
  EXPECT_EQ(m.field, ValueField::Pattern);
  EXPECT_TRUE(m.pattern_only);
  ASSERT_EQ(m.values.size(), 2u);
  for (float v : m.values) EXPECT_TRUE(std::fabs(v) >= 0.5f && std::fabs(v) < 1.0f);
  EXPECT_EQ(diag.count(WarningKind::PatternValues), 2);
}

TEST(MatrixMarket, Complex) {
  CsrMatrix m =
      read("%%MatrixMarket matrix coordinate complex general\n2 2 2\n1 1 1.5 -2\n2 1 0 3\n");
  EXPECT_EQ(m.field, ValueField::Complex);
  ASSERT_EQ(m.imag.size(), 2u);
  EXPECT_EQ(at(m, 0, 0), 1.5f);
  EXPECT_EQ(at(m, 0, 0, true), -2.0f);
  EXPECT_EQ(at(m, 1, 0, true), 3.0f);
}

TEST(MatrixMarket, SymmetricExpandsEitherTriangle) {
  MatrixMarketInfo info;
  Diagnostics diag;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n"
      "2 1 5\n"   // lower
      "1 3 7\n"   // upper
      "2 2 1\n",  // diagonal: not mirrored
      diag, DuplicatePolicy::Sum, &info);
  EXPECT_EQ(m.nnz(), 5);
  EXPECT_EQ(at(m, 1, 0), 5.0f);
  EXPECT_EQ(at(m, 0, 1), 5.0f);
  EXPECT_EQ(at(m, 0, 2), 7.0f);
  EXPECT_EQ(at(m, 2, 0), 7.0f);
  EXPECT_EQ(at(m, 1, 1), 1.0f);
  EXPECT_EQ(info.stored_entries, 3);
  EXPECT_EQ(info.mirrored_entries, 2);
  EXPECT_EQ(m.nnz(), info.stored_entries + info.mirrored_entries - info.duplicates_merged);
}

TEST(MatrixMarket, SkewSymmetricNegatesAndHermitianConjugates) {
  CsrMatrix s = read("%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n1 3 -2\n");
  EXPECT_EQ(at(s, 1, 0), 4.0f);
  EXPECT_EQ(at(s, 0, 1), -4.0f);
  EXPECT_EQ(at(s, 0, 2), -2.0f);
  EXPECT_EQ(at(s, 2, 0), 2.0f);

  CsrMatrix h = read("%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 3 0\n2 1 1 2\n");
  EXPECT_EQ(h.nnz(), 3);
  EXPECT_EQ(at(h, 1, 0), 1.0f);
  EXPECT_EQ(at(h, 1, 0, true), 2.0f);
  EXPECT_EQ(at(h, 0, 1), 1.0f);
  EXPECT_EQ(at(h, 0, 1, true), -2.0f);

  // real hermitian reads as symmetric
  CsrMatrix r = read("%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n2 1 -3\n");
  EXPECT_EQ(r.field, ValueField::Real);
  EXPECT_EQ(at(r, 0, 1), -3.0f);
  EXPECT_EQ(at(r, 1, 0), -3.0f);

  // complex skew-symmetric: the mirror is the negation of both parts
  CsrMatrix cs = read("%%MatrixMarket matrix coordinate complex skew-symmetric\n2 2 1\n2 1 1 2\n");
  EXPECT_EQ(at(cs, 0, 1), -1.0f);
  EXPECT_EQ(at(cs, 0, 1, true), -2.0f);
}

TEST(MatrixMarket, ArrayIsColumnMajorAndDense) {
  CsrMatrix g = read("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n0\n");
  EXPECT_EQ(g.nnz(), 6);  // the zero is an entry
  EXPECT_EQ(at(g, 0, 0), 1.0f);
  EXPECT_EQ(at(g, 1, 0), 2.0f);
  EXPECT_EQ(at(g, 0, 1), 3.0f);
  EXPECT_EQ(at(g, 1, 2), 0.0f);

  MatrixMarketInfo info;
  Diagnostics diag;
  // lower triangle with diagonal, column-major: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3)
  CsrMatrix s =
      read("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n", diag,
           DuplicatePolicy::Sum, &info);
  EXPECT_EQ(s.nnz(), 9);
  EXPECT_EQ(at(s, 2, 0), 3.0f);
  EXPECT_EQ(at(s, 0, 2), 3.0f);
  EXPECT_EQ(at(s, 2, 1), 5.0f);
  EXPECT_EQ(at(s, 1, 2), 5.0f);
  EXPECT_EQ(at(s, 2, 2), 6.0f);
  EXPECT_EQ(info.stored_entries, 6);
  EXPECT_EQ(info.mirrored_entries, 3);

  // strictly lower: (2,1) (3,1) (3,2); the zero diagonal is implied and becomes entries
  CsrMatrix k = read("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n", diag,
                     DuplicatePolicy::Sum, &info);
  EXPECT_EQ(k.nnz(), 9);
  EXPECT_EQ(at(k, 1, 0), 1.0f);
  EXPECT_EQ(at(k, 0, 1), -1.0f);
  EXPECT_EQ(at(k, 2, 1), 3.0f);
  EXPECT_EQ(at(k, 1, 2), -3.0f);
  EXPECT_EQ(at(k, 1, 1), 0.0f);
  EXPECT_EQ(info.implied_entries, 3);

  CsrMatrix h = read("%%MatrixMarket matrix array complex hermitian\n2 2\n1 0\n2 3\n4 0\n");
  EXPECT_EQ(at(h, 1, 0, true), 3.0f);
  EXPECT_EQ(at(h, 0, 1, true), -3.0f);

  // 1x1 skew-symmetric array: no stored values, one implied zero
  CsrMatrix one = read("%%MatrixMarket matrix array real skew-symmetric\n1 1\n");
  EXPECT_EQ(one.nnz(), 1);
}

TEST(MatrixMarket, DuplicatesSummedAndLocated) {
  Diagnostics diag;
  MatrixMarketInfo info;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real general\n3 4 3\n"
      "2 2 3.5\n"
      "% comment\n"
      "1 1 1\n"
      "\n"
      "2 2 1.5\n",
      diag, DuplicatePolicy::Sum, &info);
  EXPECT_EQ(m.nnz(), 2);
  EXPECT_EQ(at(m, 1, 1), 5.0f);
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 1);
  EXPECT_EQ(diag.tallies().at(WarningKind::DuplicateEntry).first.line, 7);
  EXPECT_EQ(info.duplicates_merged, 1);

  std::string err = error_of(
      "%%MatrixMarket matrix coordinate real general\n3 4 3\n2 2 3.5\n% comment\n1 1 1\n\n2 2 1.5\n",
      DuplicatePolicy::Error);
  EXPECT_NE(err.find("t.mtx:7:"), std::string::npos) << err;
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;
}

TEST(MatrixMarket, MirroredDuplicateIsLocatedAtTheStoredEntry) {
  // (1,2) listed in the upper triangle and (2,1) in the lower: their mirrors collide.
  Diagnostics diag;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n\n1 2 2\n", diag);
  EXPECT_EQ(m.nnz(), 2);
  EXPECT_EQ(at(m, 0, 1), 3.0f);
  EXPECT_EQ(at(m, 1, 0), 3.0f);
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 2);
  // Row 0 comes first: (1,2) from line 5, then the mirror of (2,1) from line 3.
  EXPECT_EQ(diag.tallies().at(WarningKind::DuplicateEntry).first.line, 3);
  std::string err = error_of(
      "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n\n1 2 2\n",
      DuplicatePolicy::Error);
  EXPECT_NE(err.find("t.mtx:3:"), std::string::npos) << err;
}

// ------------------------------------------------------------------------------------------------
// Rejections: each names the file and line and says what was expected.

struct Reject {
  const char* name;
  const char* text;
  const char* location;  // "t.mtx:N:"
  const char* message;   // a substring of the message
};

class MatrixMarketReject : public ::testing::TestWithParam<Reject> {};

TEST_P(MatrixMarketReject, NamesFileLineAndProblem) {
  const Reject& r = GetParam();
  std::string err = error_of(r.text);
  ASSERT_FALSE(err.empty()) << "loaded: " << r.text;
  EXPECT_EQ(err.rfind(r.location, 0), 0u) << err;
  EXPECT_NE(err.find(r.message), std::string::npos) << err;
}

constexpr const char* kBanner = "%%MatrixMarket matrix coordinate real general\n";

INSTANTIATE_TEST_SUITE_P(
    All, MatrixMarketReject,
    ::testing::Values(
        Reject{"empty_file", "", "t.mtx:1:", "found an empty file"},
        Reject{"no_banner", "3 3 1\n1 1 1\n", "t.mtx:1:", "expected the '%%MatrixMarket' banner"},
        Reject{"blank_before_banner", "\n%%MatrixMarket matrix coordinate real general\n1 1 0\n",
               "t.mtx:1:", "found a blank line"},
        Reject{"banner_with_space", "%%Matrix Market matrix coordinate real general\n1 1 0\n",
               "t.mtx:1:", "found '%%Matrix'"},
        Reject{"bad_object", "%%MatrixMarket junk coordinate real general\n", "t.mtx:1:",
               "expected object 'matrix', found 'junk'"},
        Reject{"vector", "%%MatrixMarket vector coordinate real general\n3 1\n1 1\n", "t.mtx:1:",
               "vectors are not supported"},
        Reject{"bad_format", "%%MatrixMarket matrix sparse real general\n", "t.mtx:1:",
               "expected format"},
        Reject{"bad_field", "%%MatrixMarket matrix coordinate double general\n", "t.mtx:1:",
               "expected field"},
        Reject{"bad_symmetry", "%%MatrixMarket matrix coordinate real lower\n", "t.mtx:1:",
               "expected symmetry"},
        Reject{"truncated_banner", "%%MatrixMarket matrix coordinate real", "t.mtx:1:",
               "expected symmetry 'general', 'symmetric', 'skew-symmetric' or 'hermitian', found "
               "end of line"},
        Reject{"banner_extra_word", "%%MatrixMarket matrix coordinate real general extra\n",
               "t.mtx:1:", "found 'extra'"},
        Reject{"array_pattern", "%%MatrixMarket matrix array pattern general\n2 2\n", "t.mtx:1:",
               "'array pattern'"},
        Reject{"pattern_skew", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 0\n",
               "t.mtx:1:", "cannot be negated"},
        Reject{"no_size_line", "%%MatrixMarket matrix coordinate real general\n% only\n%c\n",
               "t.mtx:3:", "expected the size line"},
        Reject{"short_size_line", "%%MatrixMarket matrix coordinate real general\n3\n",
               "t.mtx:2:", "expected the column count (a non-negative integer), found end of line"},
        Reject{"long_size_line", "%%MatrixMarket matrix coordinate real general\n3 3 1 1\n",
               "t.mtx:2:", "found '1'"},
        Reject{"negative_rows", "%%MatrixMarket matrix coordinate real general\n-3 3 0\n",
               "t.mtx:2:", "expected a non-negative row count, found -3"},
        Reject{"negative_entries", "%%MatrixMarket matrix coordinate real general\n3 3 -3\n",
               "t.mtx:2:", "non-negative entry count"},
        Reject{"rows_beyond_int64",
               "%%MatrixMarket matrix coordinate real general\n19223372036854775808 3 0\n",
               "t.mtx:2:", "does not fit in a 64-bit integer"},
        Reject{"rows_beyond_int32", "%%MatrixMarket matrix coordinate real general\n2147483648 3 0\n",
               "t.mtx:2:", "not supported"},
        Reject{"array_dims_beyond_int32", "%%MatrixMarket matrix array real general\n3 4294967296\n",
               "t.mtx:2:", "not supported"},
        Reject{"non_square_symmetric", "%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n",
               "t.mtx:2:", "expected a square matrix"},
        Reject{"too_few_entries",
               "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n% end\n",
               "t.mtx:5:", "expected 3 entries (size line 2), found 2"},
        Reject{"too_many_entries",
               "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n\n2 2 2\n3 3 3\n",
               "t.mtx:5:", "expected 1 entries (size line 2), found more"},
        Reject{"truncated_entry", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n3 2",
               "t.mtx:4:", "expected a real value, found end of line"},
        Reject{"truncated_index", "%%MatrixMarket matrix coordinate real general\n3 3 1\n3\n",
               "t.mtx:3:", "expected a column index (an integer), found end of line"},
        Reject{"row_zero", "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n",
               "t.mtx:3:", "indices are 1-based"},
        Reject{"col_too_big", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 4 1\n",
               "t.mtx:3:", "expected a column index in [1, 3], found 4"},
        Reject{"negative_index", "%%MatrixMarket matrix coordinate real general\n3 3 1\n-1 1 1\n",
               "t.mtx:3:", "found -1"},
        Reject{"index_beyond_int64",
               "%%MatrixMarket matrix coordinate real general\n3 3 1\n19223372036854775808 1 1\n",
               "t.mtx:3:", "does not fit in a 64-bit integer"},
        Reject{"entry_in_empty_matrix", "%%MatrixMarket matrix coordinate real general\n0 0 1\n1 1 1\n",
               "t.mtx:3:", "the matrix has no rows"},
        Reject{"non_numeric_index", "%%MatrixMarket matrix coordinate real general\n3 3 1\nzero 1 1\n",
               "t.mtx:3:", "found 'zero'"},
        Reject{"non_numeric_value", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 pi\n",
               "t.mtx:3:", "expected a real value, found 'pi'"},
        Reject{"real_overflow", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1e310\n",
               "t.mtx:3:", "within the double range"},
        Reject{"integer_inf", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 inf\n",
               "t.mtx:3:", "expected an integer value, found 'inf'"},
        Reject{"integer_decimal",
               "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", "t.mtx:3:",
               "expected an integer value"},
        Reject{"integer_overflow",
               "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 18446744073709551615\n",
               "t.mtx:3:", "does not fit in 64 bits"},
        Reject{"complex_missing_imag",
               "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1\n", "t.mtx:3:",
               "imaginary part"},
        Reject{"pattern_with_value",
               "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n", "t.mtx:3:",
               "expected the end of the line after the column index, found '1'"},
        Reject{"real_extra_token", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1 2\n",
               "t.mtx:3:", "found '2'"},
        Reject{"skew_diagonal",
               "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", "t.mtx:3:",
               "off-diagonal"},
        Reject{"array_too_few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n% x\n",
               "t.mtx:6:", "expected 4 values (size line 2), found 3"},
        Reject{"array_too_many", "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n",
               "t.mtx:5:", "found more"},
        Reject{"array_two_per_line", "%%MatrixMarket matrix array real general\n2 2\n1 2\n3 4\n",
               "t.mtx:3:", "one value per line"},
        Reject{"array_size_line_with_entries",
               "%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n", "t.mtx:2:",
               "after 2 numbers"},
        Reject{"nul_byte", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 \x01\n",
               "t.mtx:3:", "\\x01"}),
    [](const ::testing::TestParamInfo<Reject>& p) { return std::string(p.param.name); });

TEST(MatrixMarket, LineNumbersCountCommentsAndBlankLines) {
  std::string err = error_of(
      "%%MatrixMarket matrix coordinate real general\n"
      "% 2\n"
      "\n"
      "3 3 3\n"
      "% 5\n"
      "1 1 1\n"
      "\r\n"
      "  \n"
      "2 2 x\n"
      "3 3 3\n");
  EXPECT_EQ(err.rfind("t.mtx:9: expected a real value, found 'x'", 0), 0u) << err;
}

TEST(MatrixMarket, LyingHeaderDoesNotAllocateFromTheDeclaredCount) {
  // 2^62 entries declared in a 60-byte file: must fail on the count, not on an allocation.
  std::string err = error_of(
      "%%MatrixMarket matrix coordinate real general\n3 3 4611686018427387904\n1 1 1\n");
  EXPECT_NE(err.find("found 1 before the end of the file"), std::string::npos) << err;
  err = error_of("%%MatrixMarket matrix array real general\n2147483647 2147483647\n1\n");
  EXPECT_NE(err.find("found 1 before the end of the file"), std::string::npos) << err;
}

TEST(MatrixMarket, RowLimitOption) {
  MatrixMarketOptions opt;
  opt.max_rows = 100;
  Diagnostics diag;
  EXPECT_THROW(read_matrix_market_buffer(
                   "%%MatrixMarket matrix coordinate real general\n101 1 0\n", "t", opt, diag),
               UserError);
  EXPECT_NO_THROW(read_matrix_market_buffer(
      "%%MatrixMarket matrix coordinate real general\n100 1 0\n", "t", opt, diag));
}

TEST(MatrixMarket, MissingFileIsAUserError) {
  Diagnostics diag;
  try {
    read_matrix_market("/nonexistent/x.mtx", DuplicatePolicy::Sum, diag);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.mtx"), std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------------
// Parallel parsing gives the same result and the same locations as serial parsing.

std::string big_text(int64_t entries, uint64_t seed, int64_t n = 50000) {
  std::mt19937_64 rng(seed);
  std::string s = fmt::format("%%MatrixMarket matrix coordinate real general\n% big\n{} {} {}\n",
                              n, n, entries);
  for (int64_t k = 0; k < entries; ++k) {
    if (k % 1000 == 17) s += "% a comment inside the data\n\n";
    s += fmt::format("{} {} {:.9g}\n", rng() % n + 1, rng() % n + 1,
                     static_cast<double>(rng() % 100000) / 7.0);
  }
  return s;
}

CsrMatrix read_threads(std::string_view text, int threads, Diagnostics& diag) {
  MatrixMarketOptions opt;
  opt.threads = threads;
  return read_matrix_market_buffer(text, "big.mtx", opt, diag);
}

std::string error_threads(std::string_view text, int threads) {
  try {
    Diagnostics diag;
    read_threads(text, threads, diag);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MatrixMarketParallel, SameMatrixAndWarningsForAnyThreadCount) {
  std::string text = big_text(600000, 1);  // ~14 MB: split into pieces of >= 4 MB
  // A NaN deep in the file, and a duplicate of the first entry near the end.
  size_t pos = text.find('\n', text.size() * 3 / 4);
  Line first_entry;
  {
    LineReader lr(text);
    for (int i = 0; i < 4; ++i) lr.next(first_entry);
  }
  std::string first_ij(first_entry.text.substr(0, first_entry.text.rfind(' ')));
  text.insert(pos + 1, "% x\n1 1 nan\n" + first_ij + " 1\n");
  text.replace(text.find(" 600000\n"), 8, " 600002\n");
  const int64_t nan_line = 1 + std::count(text.begin(), text.begin() + pos + 1, '\n') + 1;

  Diagnostics d1, d4;
  CsrMatrix a = read_threads(text, 1, d1);
  CsrMatrix b = read_threads(text, 4, d4);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  ASSERT_EQ(a.values.size(), b.values.size());
  EXPECT_EQ(0, std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)));
  EXPECT_EQ(d1.format(), d4.format());
  EXPECT_EQ(d4.tallies().at(WarningKind::NonFinite).first.line, nan_line);
  EXPECT_GE(d4.count(WarningKind::DuplicateEntry), 1);
}

TEST(MatrixMarketParallel, ErrorsReportTheSameLineForAnyThreadCount) {
  std::string text = big_text(600000, 2);
  std::string bad = text;
  size_t pos = bad.find('\n', bad.size() * 2 / 3);
  bad.insert(pos + 1, "1 1 oops\n");
  EXPECT_EQ(error_threads(bad, 1), error_threads(bad, 4));
  EXPECT_NE(error_threads(bad, 4).find("found 'oops'"), std::string::npos);

  // One entry too many: reported at the first surplus entry, even when a later piece has an error.
  std::string extra = text;
  extra.replace(extra.find(" 600000\n"), 8, " 300000\n");
  extra += "1 1 bad\n";
  std::string e1 = error_threads(extra, 1), e4 = error_threads(extra, 4);
  EXPECT_EQ(e1, e4);
  EXPECT_NE(e4.find("expected 300000 entries (size line 3), found more"), std::string::npos) << e4;

  std::string few = text;
  few.replace(few.find(" 600000\n"), 8, " 600001\n");
  EXPECT_EQ(error_threads(few, 1), error_threads(few, 4));
  EXPECT_NE(error_threads(few, 4).find("found 600000 before the end"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// Writer

TEST(MatrixMarketWriter, RoundTripsExactly) {
  Diagnostics diag;
  CsrMatrix m = read(
      "%%MatrixMarket matrix coordinate real general\n3 5 5\n1 1 0.1\n1 5 -3.4028235e38\n"
      "2 3 1e-45\n3 2 0\n3 4 nan\n",
      diag);
  fs::path p = fs::temp_directory_path() / fmt::format("sg_mm_rt_{}.mtx", ::getpid());
  write_matrix_market(m, p.string());
  CsrMatrix r = read_matrix_market(p.string(), DuplicatePolicy::Error, diag);
  EXPECT_EQ(r.rows, m.rows);
  EXPECT_EQ(r.cols, m.cols);
  EXPECT_EQ(r.row_ptr, m.row_ptr);
  EXPECT_EQ(r.col_idx, m.col_idx);
  ASSERT_EQ(r.values.size(), m.values.size());
  EXPECT_EQ(0, std::memcmp(r.values.data(), m.values.data(), m.values.size() * sizeof(float)));

  CsrMatrix pat = read("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n2 1\n");
  write_matrix_market(pat, p.string());
  CsrMatrix pr = read_matrix_market(p.string(), DuplicatePolicy::Error, diag);
  EXPECT_TRUE(pr.pattern_only);
  EXPECT_EQ(pr.col_idx, pat.col_idx);

  CsrMatrix cx = read("%%MatrixMarket matrix coordinate complex general\n2 2 1\n2 1 0.5 -0.25\n");
  write_matrix_market(cx, p.string());
  CsrMatrix cr = read_matrix_market(p.string(), DuplicatePolicy::Error, diag);
  EXPECT_EQ(cr.imag, cx.imag);
  fs::remove(p);

  EXPECT_THROW(write_matrix_market(m, "/nonexistent/dir/x.mtx"), UserError);
}

// ------------------------------------------------------------------------------------------------
// Golden expansions from the data set: every symmetry*/X.mtx equals its X_general.mtx sibling.

TEST(MatrixMarketGolden, SymmetricFilesEqualTheirGeneralExpansions) {
  const fs::path root = testing::data_dir() / "edge" / "fast_matrix_market";
  if (!fs::exists(root)) GTEST_SKIP() << "no test data at " << root;
  int compared = 0;
  for (const char* sub : {"symmetry", "symmetry_array"}) {
    for (const auto& e : fs::directory_iterator(root / sub)) {
      const std::string name = e.path().stem().string();
      if (name.find("_general") != std::string::npos) continue;
      SCOPED_TRACE(e.path().string());
      for (const char* suffix : {"_general", "_general_dup", "_general_zero"}) {
        fs::path sibling = e.path().parent_path() / (name + suffix + ".mtx");
        if (!fs::exists(sibling)) continue;
        SCOPED_TRACE(sibling.string());
        Diagnostics d1, d2;
        CsrMatrix a = read_matrix_market(e.path().string(), DuplicatePolicy::Sum, d1);
        CsrMatrix b = read_matrix_market(sibling.string(), DuplicatePolicy::Sum, d2);
        EXPECT_EQ(a.rows, b.rows);
        EXPECT_EQ(a.cols, b.cols);
        EXPECT_EQ(a.row_ptr, b.row_ptr);
        EXPECT_EQ(a.col_idx, b.col_idx);
        const std::string kind = suffix;
        if (kind == "_general_dup" && d2.count(WarningKind::DuplicateEntry) > 0) {
          // A wrong expansion that lists the diagonal entry twice: summed, it doubles. (Files
          // without a diagonal have nothing to duplicate and must equal the expansion.)
          EXPECT_EQ(d2.count(WarningKind::DuplicateEntry), 1);
          EXPECT_NE(a.values, b.values);
        } else {
          EXPECT_EQ(a.values, b.values);
          EXPECT_EQ(a.imag, b.imag);
          // _zero lists an extra explicit zero on the diagonal: summed, nothing changes.
          if (kind == "_general_zero") {
            EXPECT_LE(d2.count(WarningKind::DuplicateEntry), 1);
          }
        }
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 13);
}

}  // namespace
}  // namespace sparsegen
