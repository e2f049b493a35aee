#include "ir/sparse_matrix.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace sparsegen {
namespace {

struct Entry {
  int32_t row, col;
  float val;
  float imag = 0;
};

Triplets triplets_of(int64_t rows, int64_t cols, const std::vector<Entry>& entries,
                     bool complex = false) {
  Triplets t;
  t.rows = rows;
  t.cols = cols;
  t.reserve(entries.size(), complex);
  for (const Entry& e : entries) {
    t.row.push_back(e.row);
    t.col.push_back(e.col);
    t.val.push_back(e.val);
    if (complex) t.imag.push_back(e.imag);
  }
  return t;
}

// Input position p was written on line p + 10 of "m.mtx".
SourceLoc locate_line(size_t position) {
  return SourceLoc{"m.mtx", static_cast<int64_t>(position) + 10, -1};
}

CsrMatrix canon(int64_t rows, int64_t cols, const std::vector<Entry>& entries, Diagnostics& diag,
                DuplicatePolicy policy = DuplicatePolicy::Sum,
                ValueField field = ValueField::Real) {
  return canonicalize(triplets_of(rows, cols, entries), field, policy, locate_line, diag);
}

using sparsegen::testing::error_of;

// A valid 3x4 matrix to break by hand.
CsrMatrix valid_3x4() {
  CsrMatrix m;
  m.rows = 3;
  m.cols = 4;
  m.row_ptr = {0, 2, 2, 5};
  m.col_idx = {0, 3, 0, 1, 2};
  m.values = {1, 2, 3, 4, 5};
  m.source = "a.csr";
  return m;
}

TEST(Canonicalize, SortsUnsortedTripletsIntoCsr) {
  Diagnostics diag;
  const CsrMatrix m = canon(3, 4,
                            {{2, 3, 6.0f},
                             {0, 2, 2.0f},
                             {1, 0, 3.0f},
                             {2, 0, 4.0f},
                             {0, 0, 1.0f},
                             {2, 1, 5.0f},
                             {1, 3, 7.0f}},
                            diag);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 2, 4, 7}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{0, 2, 0, 3, 0, 1, 3}));
  EXPECT_EQ(m.values, (std::vector<float>{1, 2, 3, 7, 4, 5, 6}));
  EXPECT_TRUE(m.imag.empty());
  EXPECT_EQ(m.field, ValueField::Real);
  EXPECT_FALSE(m.pattern_only);
  EXPECT_EQ(m.nnz(), 7);
  EXPECT_EQ(m.row_length(2), 3);
  EXPECT_TRUE(diag.empty());
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, EmptyRows) {
  Diagnostics diag;
  // Rows 0, 2 and the last two have no entries.
  const CsrMatrix m = canon(6, 3, {{3, 2, 1.0f}, {1, 1, 2.0f}, {3, 0, 3.0f}}, diag);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 0, 1, 1, 3, 3, 3}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(m.values, (std::vector<float>{2, 3, 1}));
  EXPECT_EQ(m.row_length(0), 0);
  EXPECT_EQ(m.row_length(3), 2);
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, AllEmptyMatrix) {
  Diagnostics diag;
  const CsrMatrix m = canon(4, 5, {}, diag);
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.cols, 5);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(m.nnz(), 0);
  EXPECT_TRUE(m.values.empty());
  EXPECT_TRUE(diag.empty());
  EXPECT_NO_THROW(m.check_canonical());

  const CsrMatrix zero = canon(0, 0, {}, diag);
  EXPECT_EQ(zero.row_ptr, (std::vector<int64_t>{0}));
  EXPECT_EQ(zero.nnz(), 0);
  EXPECT_NO_THROW(zero.check_canonical());
}

TEST(Canonicalize, SumPolicySumsDuplicatesInFileOrder) {
  Diagnostics diag;
  // In file order (1e8 + 1) - 1e8 == 0 in fp32; any other order gives 1.
  const CsrMatrix m = canon(2, 2, {{1, 1, 1e8f}, {0, 0, 5.0f}, {1, 1, 1.0f}, {1, 1, -1e8f}}, diag);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(m.values, (std::vector<float>{5.0f, 0.0f}));
  // Two extra occurrences; the first is the second listing of (2, 2) at position 2.
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 2);
  const auto& t = diag.tallies().at(WarningKind::DuplicateEntry);
  EXPECT_EQ(t.first.file, "m.mtx");
  EXPECT_EQ(t.first.line, 12);
  EXPECT_EQ(t.first_detail, "entry (2, 2) listed again; values summed");
}

// Position:  0       1       2       3       4       5
// Entry:     (2,1)   (0,3)   (2,1)   (1,0)   (0,3)   (0,3)
std::vector<Entry> two_duplicated_entries() {
  return {{2, 1, 1.0f}, {0, 3, 2.0f}, {2, 1, 4.0f}, {1, 0, 8.0f}, {0, 3, 16.0f}, {0, 3, 32.0f}};
}

TEST(Canonicalize, SumPolicyReportsFirstDuplicateInRowMajorOrder) {
  Diagnostics diag;
  const CsrMatrix m = canon(3, 4, two_duplicated_entries(), diag);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{3, 0, 1}));
  EXPECT_EQ(m.values, (std::vector<float>{50.0f, 8.0f, 5.0f}));
  // (2,1) is duplicated first in the file, but (0,3) comes first in row-major order: its second
  // listing (position 4) is the location reported. The count covers both.
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 3);
  EXPECT_EQ(diag.format(),
            "warning: m.mtx:14: 3 x duplicate_entries (first: entry (1, 4) listed again; values "
            "summed)\n");
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, ErrorPolicyRejectsFirstDuplicate) {
  Diagnostics diag;
  try {
    canon(3, 4, two_duplicated_entries(), diag, DuplicatePolicy::Error);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "m.mtx:14: duplicate entry (1, 4) (1-based); --strict forbids duplicates");
    EXPECT_EQ(e.loc().line, 14);
  }
  EXPECT_TRUE(diag.empty());  // an error, not a warning as well
}

TEST(Canonicalize, ErrorPolicyAcceptsUniqueEntries) {
  Diagnostics d_sum, d_err;
  const std::vector<Entry> entries = {{1, 2, 1.0f}, {0, 1, 2.0f}, {1, 0, 3.0f}, {0, 2, 4.0f}};
  const CsrMatrix a = canon(2, 3, entries, d_sum, DuplicatePolicy::Sum);
  const CsrMatrix b = canon(2, 3, entries, d_err, DuplicatePolicy::Error);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(b.col_idx, (std::vector<int32_t>{1, 2, 0, 2}));
  EXPECT_TRUE(d_err.empty());
}

TEST(Canonicalize, ErrorPolicyDuplicateInLastRow) {
  Diagnostics diag;
  const std::string msg = error_of([&] {
    canon(3, 3, {{0, 0, 1.0f}, {2, 2, 1.0f}, {1, 1, 1.0f}, {2, 2, 1.0f}}, diag,
          DuplicatePolicy::Error);
  });
  EXPECT_EQ(msg, "m.mtx:13: duplicate entry (3, 3) (1-based); --strict forbids duplicates");
}

TEST(Canonicalize, ExplicitZerosAreKept) {
  Diagnostics diag;
  const CsrMatrix m =
      canon(2, 3, {{0, 2, 0.0f}, {1, 0, -0.0f}, {0, 0, 1.0f}, {1, 1, 2.5f}, {1, 1, -2.5f}}, diag);
  // Stored zeros, a negative zero and a duplicate pair cancelling to zero all stay entries.
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{0, 2, 0, 1}));
  EXPECT_EQ(m.values, (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f}));
  EXPECT_TRUE(std::signbit(m.values[2]));
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 1);
}

TEST(Canonicalize, NonFiniteValuesPassThrough) {
  Diagnostics diag;
  const float inf = std::numeric_limits<float>::infinity();
  const CsrMatrix m =
      canon(1, 3, {{0, 2, std::numeric_limits<float>::quiet_NaN()}, {0, 0, -inf}}, diag);
  ASSERT_EQ(m.col_idx, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(m.values[0], -inf);
  EXPECT_TRUE(std::isnan(m.values[1]));
  EXPECT_TRUE(diag.empty());  // reported when the value was read, not here
}

TEST(Canonicalize, ComplexSumsAndPermutesImaginaryParts) {
  Diagnostics diag;
  Triplets t = triplets_of(
      2, 3, {{1, 2, 1.0f, -1.0f}, {0, 1, 2.0f, 0.5f}, {1, 0, 3.0f, 3.0f}, {1, 2, 4.0f, 10.0f}},
      /*complex=*/true);
  const CsrMatrix m =
      canonicalize(std::move(t), ValueField::Complex, DuplicatePolicy::Sum, locate_line, diag);
  EXPECT_EQ(m.field, ValueField::Complex);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(m.values, (std::vector<float>{2.0f, 3.0f, 5.0f}));
  EXPECT_EQ(m.imag, (std::vector<float>{0.5f, 3.0f, 9.0f}));
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 1);
  EXPECT_EQ(diag.tallies().at(WarningKind::DuplicateEntry).first.line, 13);
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, FieldIsRecordedAndValuesUntouched) {
  for (ValueField f : {ValueField::Real, ValueField::Integer, ValueField::Pattern}) {
    Diagnostics diag;
    const CsrMatrix m = canon(2, 2, {{1, 0, 7.0f}, {0, 1, 1.0f}}, diag, DuplicatePolicy::Sum, f);
    EXPECT_EQ(m.field, f);
    // Synthesizing pattern values is a separate step (synthesize_pattern_values).
    EXPECT_FALSE(m.pattern_only);
    EXPECT_EQ(m.values, (std::vector<float>{1.0f, 7.0f}));
    EXPECT_TRUE(m.imag.empty());
    EXPECT_TRUE(diag.empty());
  }
}

TEST(Canonicalize, LongRowIsSortedStably) {
  // More than 32 entries in one row takes the std::stable_sort path; duplicates must still be
  // summed in file order.
  std::vector<Entry> entries;
  for (int32_t c = 59; c >= 0; --c) entries.push_back({1, c, static_cast<float>(c)});
  entries.push_back({1, 30, 1e8f});
  entries.push_back({0, 0, 9.0f});
  entries.push_back({1, 30, -1e8f});
  Diagnostics diag;
  const CsrMatrix m = canon(2, 60, entries, diag);
  ASSERT_EQ(m.row_ptr, (std::vector<int64_t>{0, 1, 61}));
  EXPECT_EQ(m.col_idx[0], 0);
  EXPECT_EQ(m.values[0], 9.0f);
  for (int32_t c = 0; c < 60; ++c) {
    const auto k = static_cast<size_t>(c) + 1;
    EXPECT_EQ(m.col_idx[k], c);
    // (30 + 1e8) - 1e8 == 32 in fp32 (1e8 has a spacing of 8).
    EXPECT_EQ(m.values[k], c == 30 ? 32.0f : static_cast<float>(c)) << c;
  }
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry), 2);
  EXPECT_EQ(diag.tallies().at(WarningKind::DuplicateEntry).first.line, 70);  // position 60
}

// Many rows (several row partitions), unordered input with duplicates, a long row: the result
// must equal a straightforward map-based reference, values summed in file order.
TEST(Canonicalize, ManyRowsMatchReference) {
  const int64_t rows = 5000, cols = 7;
  std::vector<Entry> entries;
  uint64_t x = 12345;
  for (int i = 0; i < 40000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto r = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(rows));
    const auto c = static_cast<int32_t>((x >> 20) % static_cast<uint64_t>(cols));
    entries.push_back({r, c, static_cast<float>((x >> 40) % 1000) * 0.37f - 150.0f});
  }
  for (int32_t c = 6; c >= 0; --c)
    for (int k = 0; k < 8; ++k) entries.push_back({4321, c, static_cast<float>(k + c)});

  std::map<std::pair<int32_t, int32_t>, float> sum;
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> positions;
  for (size_t p = 0; p < entries.size(); ++p) {
    const auto key = std::make_pair(entries[p].row, entries[p].col);
    auto [it, fresh] = sum.emplace(key, entries[p].val);
    if (!fresh) it->second += entries[p].val;
    positions[key].push_back(p);
  }
  size_t first_dup = 0;
  for (const auto& [key, ps] : positions)
    if (ps.size() > 1) {
      first_dup = ps[1];
      break;
    }

  Diagnostics diag;
  const CsrMatrix m = canon(rows, cols, entries, diag);
  ASSERT_EQ(m.nnz(), static_cast<int64_t>(sum.size()));
  std::vector<int64_t> row_ptr(static_cast<size_t>(rows) + 1, 0);
  size_t k = 0;
  for (const auto& [key, v] : sum) {
    ++row_ptr[static_cast<size_t>(key.first) + 1];
    ASSERT_EQ(m.col_idx[k], key.second) << k;
    ASSERT_EQ(m.values[k], v) << k;
    ++k;
  }
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) row_ptr[r + 1] += row_ptr[r];
  EXPECT_EQ(m.row_ptr, row_ptr);
  EXPECT_EQ(diag.count(WarningKind::DuplicateEntry),
            static_cast<int64_t>(entries.size() - sum.size()));
  EXPECT_EQ(diag.tallies().at(WarningKind::DuplicateEntry).first.line,
            static_cast<int64_t>(first_dup) + 10);
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, RejectsOutOfRangeIndices) {
  // Readers check indices first; canonicalize guards every other producer of Triplets.
  Diagnostics diag;
  EXPECT_THROW(canon(2, 2, {{0, 0, 1.0f}, {2, 0, 1.0f}}, diag), UserError);
  EXPECT_THROW(canon(2, 2, {{0, -1, 1.0f}}, diag), UserError);
  EXPECT_THROW(canon(2, 2, {{1, 2, 1.0f}}, diag), UserError);
  EXPECT_THROW(canon(2, 2, {{-1, 0, 1.0f}}, diag), UserError);
  EXPECT_NO_THROW(canon(2, 2, {{1, 1, 1.0f}}, diag));
}

TEST(Canonicalize, CheckCanonicalAcceptsValidMatrices) {
  EXPECT_NO_THROW(CsrMatrix{}.check_canonical());
  EXPECT_NO_THROW(valid_3x4().check_canonical());
  CsrMatrix c = valid_3x4();
  c.imag = {0, 0, 0, 0, 0};
  EXPECT_NO_THROW(c.check_canonical());
  CsrMatrix wide;  // no entries, but dimensions
  wide.rows = 2;
  wide.cols = kMaxDimension;
  wide.row_ptr = {0, 0, 0};
  EXPECT_NO_THROW(wide.check_canonical());
}

TEST(Canonicalize, CheckCanonicalRejectsUnsortedColumns) {
  CsrMatrix m = valid_3x4();
  m.col_idx = {0, 3, 1, 0, 2};  // row 2: 1, 0, 2
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: row 2: column indices not strictly increasing at 0");
  m = valid_3x4();
  m.col_idx = {3, 0, 0, 1, 2};  // row 0: 3, 0
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: row 0: column indices not strictly increasing at 0");
}

TEST(Canonicalize, CheckCanonicalRejectsDuplicateColumn) {
  CsrMatrix m = valid_3x4();
  m.col_idx = {0, 3, 0, 1, 1};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: row 2: column indices not strictly increasing at 1");
  // The same column in different rows is fine.
  m.col_idx = {1, 3, 0, 1, 3};
  EXPECT_NO_THROW(m.check_canonical());
}

TEST(Canonicalize, CheckCanonicalRejectsOutOfRangeColumns) {
  CsrMatrix m = valid_3x4();
  m.col_idx = {0, 4, 0, 1, 2};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: row 0: column index 4 outside [0, 4)");
  m = valid_3x4();
  m.col_idx = {0, 3, -1, 1, 2};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: row 2: column index -1 outside [0, 4)");
}

TEST(Canonicalize, CheckCanonicalRejectsBadRowPtr) {
  CsrMatrix m = valid_3x4();
  m.row_ptr = {0, 2, 5};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: row offsets have 3 entries, expected rows+1 = 4");
  m.row_ptr = {1, 2, 2, 5};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: row offsets do not start at 0");
  m.row_ptr = {0, 3, 2, 5};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: row offsets decrease at row 1");
  m.row_ptr = {0, 2, 2, 4};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: last row offset 4 != number of column indices 5");
  m.row_ptr = {0, 2, 2, 6};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: last row offset 6 != number of column indices 5");
}

TEST(Canonicalize, CheckCanonicalRejectsBadDimensionsAndArrays) {
  CsrMatrix m = valid_3x4();
  m.rows = -1;
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: dimensions -1x4 outside [0, 2^31-1]");
  m = valid_3x4();
  m.cols = kMaxDimension + 1;
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: dimensions 3x2147483648 outside [0, 2^31-1]");
  m = valid_3x4();
  m.values.pop_back();
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "a.csr: 4 values for 5 column indices");
  m = valid_3x4();
  m.imag = {1, 2};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }),
            "a.csr: imaginary parts do not match the number of entries");
}

TEST(Canonicalize, CheckCanonicalWithoutSourceHasNoPrefix) {
  CsrMatrix m = valid_3x4();
  m.source.clear();
  m.row_ptr = {0, 3, 2, 5};
  EXPECT_EQ(error_of([&] { m.check_canonical(); }), "row offsets decrease at row 1");
}

TEST(Canonicalize, ValueFieldNames) {
  EXPECT_EQ(to_string(ValueField::Real), "real");
  EXPECT_EQ(to_string(ValueField::Integer), "integer");
  EXPECT_EQ(to_string(ValueField::Complex), "complex");
  EXPECT_EQ(to_string(ValueField::Pattern), "pattern");
}

TEST(Canonicalize, SynthesizedPatternValues) {
  Diagnostics diag;
  CsrMatrix m = canon(50, 50, {}, diag);
  for (int32_t i = 0; i < 50; ++i) {
    m.col_idx.push_back(i);
    m.row_ptr[static_cast<size_t>(i) + 1] = i + 1;
  }
  m.values.clear();
  m.source = "p.mtx";
  CsrMatrix again = m, other = m;
  synthesize_pattern_values(m, kDefaultPatternSeed, diag);
  EXPECT_TRUE(m.pattern_only);
  ASSERT_EQ(m.values.size(), 50u);
  int negative = 0;
  for (float v : m.values) {
    EXPECT_GE(std::fabs(v), 0.5f);
    EXPECT_LT(std::fabs(v), 1.0f);
    negative += v < 0;
  }
  EXPECT_GT(negative, 0);
  EXPECT_LT(negative, 50);
  EXPECT_EQ(diag.count(WarningKind::PatternValues), 50);
  EXPECT_EQ(diag.tallies().at(WarningKind::PatternValues).first.file, "p.mtx");

  Diagnostics d2;
  synthesize_pattern_values(again, kDefaultPatternSeed, d2);
  EXPECT_EQ(again.values, m.values);  // deterministic per seed
  synthesize_pattern_values(other, kDefaultPatternSeed + 1, d2);
  EXPECT_NE(other.values, m.values);

  Diagnostics d3;
  CsrMatrix empty = canon(3, 3, {}, d3);
  synthesize_pattern_values(empty, 1, d3);
  EXPECT_TRUE(empty.pattern_only);
  EXPECT_TRUE(d3.empty());  // nothing synthesized, nothing to note
}

TEST(Canonicalize, ToMasterValue) {
  const SourceLoc loc{"v.mtx", 4, -1};
  Diagnostics diag;
  EXPECT_EQ(to_master_value(1.5, loc, diag), 1.5f);
  EXPECT_EQ(to_master_value(3.4028234663852886e38, loc, diag), std::numeric_limits<float>::max());
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(to_master_value(1e39, loc, diag), std::numeric_limits<float>::infinity());
  EXPECT_EQ(to_master_value(-1e39, loc, diag), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(diag.count(WarningKind::OutOfRange), 2);
  EXPECT_EQ(diag.tallies().at(WarningKind::OutOfRange).first.line, 4);
  EXPECT_EQ(diag.tallies().at(WarningKind::OutOfRange).first_detail,
            "value 1e+39 exceeds the fp32 range; stored as +inf");
  EXPECT_TRUE(std::isnan(to_master_value(std::nan(""), loc, diag)));
  EXPECT_EQ(to_master_value(-HUGE_VAL, loc, diag), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(diag.count(WarningKind::NonFinite), 2);
}

}  // namespace
}  // namespace sparsegen
