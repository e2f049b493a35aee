// Offset compression classification (exact reconstruction) and packed-format invariants.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <optional>
#include <random>
#include <string>

#include "ir/format.h"
#include "ir/offset_compression.h"
#include "tests/ir/schedule_test_util.h"

namespace sparsegen {
namespace {

void expect_exact(const std::vector<int64_t>& a, OffsetForm form) {
  OffsetCompression c = classify_offsets(a);
  EXPECT_EQ(c.form, form) << describe(c);
  ASSERT_EQ(c.size, static_cast<int64_t>(a.size()));
  for (int64_t i = 0; i < c.size; ++i) ASSERT_EQ(c.eval(i, a), a[static_cast<size_t>(i)]) << i;
  if (c.form == OffsetForm::Table) {
    EXPECT_TRUE(c.values.empty());  // the array is the table
  }
}

TEST(OffsetCompression, Forms) {
  expect_exact({}, OffsetForm::Linear);
  expect_exact({7}, OffsetForm::Linear);
  expect_exact({0, 8, 16, 24, 32}, OffsetForm::Linear);
  expect_exact({5, 5, 5, 5}, OffsetForm::Linear);
  expect_exact({40, 30, 20, 10}, OffsetForm::Linear);
  expect_exact({0, 0, 0, 5, 5, 9, 9, 9}, OffsetForm::Branch);
  expect_exact({0, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15}, OffsetForm::Cyclic);
  expect_exact({2, 0, 1, 2, 0, 1, 2, 0}, OffsetForm::Cyclic);  // pure cycle (stride 0)
  std::vector<int64_t> q;
  std::mt19937_64 rng(3);
  for (int64_t i = 0; i < 1000; ++i) q.push_back(int64_t{1} << 33 | (9 * i + int64_t(rng() % 7)));
  expect_exact(q, OffsetForm::Quasilinear);
  EXPECT_EQ(classify_offsets(q).residual_bytes, 1);
  std::vector<int64_t> q2;
  for (int64_t i = 0; i < 1000; ++i) q2.push_back(100 * i + int64_t(rng() % 3000));
  expect_exact(q2, OffsetForm::Quasilinear);
  EXPECT_EQ(classify_offsets(q2).residual_bytes, 2);
  std::vector<int64_t> t;
  for (int64_t i = 0; i < 100; ++i) t.push_back(i * i * i);
  expect_exact(t, OffsetForm::Table);
}

TEST(OffsetCompression, RandomArraysReconstructExactly) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = int64_t(rng() % 200);
    std::vector<int64_t> a;
    int64_t x = int64_t(rng() % 100) - 50;
    const int kind = trial % 4;
    for (int64_t i = 0; i < n; ++i) {
      if (kind == 0)
        x += int64_t(rng() % 100000);  // table-ish
      else if (kind == 1)
        x += 16 + int64_t(rng() % 3) - 1;  // quasilinear-ish
      else if (kind == 2)
        x = (i % 5) * 3 + (i / 5) * 17;  // cyclic
      else
        x += (rng() % 50 == 0) ? 1 : 0;  // few pieces
      a.push_back(x);
    }
    OffsetCompression c = classify_offsets(a);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(c.eval(i, a), a[static_cast<size_t>(i)]) << describe(c);
  }
}

TEST(PackedFormat, PaddingInterleaveAndOffsets) {
  // rows of lengths 3, 0, 5 with pad 4 → 4, 0, 8.
  CsrMatrix a = testing::matrix_with_lengths(16, {3, 0, 5}, 1);
  Problem p = Problem::spmm(3, 16, 8, DType::F32);
  Schedule s = parse_schedule(
      "general;block=rows:2;warp=row;thread=nnz:2;warps=2;group=16;tcols=1;bcols=16;"
      "red=total,total,none;pad=4;vec=2");
  PackedFormat f = pack_format(a, p, s);
  EXPECT_EQ(f.row_ptr.values, (std::vector<int64_t>{0, 4, 4, 12}));
  EXPECT_EQ(f.stats.nnz_padded, 12);
  EXPECT_EQ(f.values[3], 0.0f);           // padding
  EXPECT_EQ(f.col_idx[3], a.col_idx[2]);  // repeats the row's last column
  EXPECT_EQ(f.at(Level::Block).tasks, 2);
  EXPECT_EQ(f.at(Level::Warp).tasks, 3);    // one per row, empty row included
  EXPECT_EQ(f.at(Level::Thread).tasks, 6);  // 2 + 0 + 4 chunks of 2
  EXPECT_EQ(f.at(Level::Block).child_begin.values, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(f.at(Level::Thread).nz_begin.compression.form, OffsetForm::Linear);
  EXPECT_EQ(f.perm.compression.form, OffsetForm::Linear);

  // Sorted and interleaved: storage permutes within warp rounds of G x z_t = 2 x 4 entries.
  Schedule si = parse_schedule(
      "general;block=rows:2;warp=row;thread=nnz:4;warps=2;group=16;tcols=1;bcols=16;"
      "red=total,total,none;pad=8;interleave=1;vec=2;sort=1");
  PackedFormat fi = pack_format(a, p, si);
  EXPECT_EQ(fi.perm.values, (std::vector<int64_t>{2, 0, 1}));
  // logical j of group q at (j/2*2 + q)*2 + j%2: group 1's entries 0,1 sit at 2,3.
  EXPECT_EQ(storage_pos(si.as<GeneralSchedule>(), fi, 4), 2);
  EXPECT_EQ(storage_pos(si.as<GeneralSchedule>(), fi, 5), 3);
  EXPECT_EQ(storage_pos(si.as<GeneralSchedule>(), fi, 2), 4);
  EXPECT_EQ(fi.values[2], a.values[3 + 4]);
}

TEST(PackedFormat, StoragePosCursorStepsAsStoragePos) {
  // Every interleaved shape of the enumeration's range: G groups, chunks z_t, vectors v (z_t a
  // multiple of v or not), from every start position of a few rounds.
  const CsrMatrix a = testing::matrix_with_lengths(64, {3}, 1);
  const Problem p = Problem::spmm(1, 64, 8, DType::F32);
  int shapes = 0;
  for (int group : {1, 2, 4, 8, 16, 32})
    for (int zt : {1, 2, 4, 8, 16})
      for (int vec : {1, 2, 4})
        for (int il : {0, 1}) {
          if (vec > zt) continue;
          const std::string spec = fmt::format(
              "general;block=rows:1;warp=row;thread=nnz:{};warps=1;group={};tcols=1;bcols=16;"
              "red=total,total,none;pad={};interleave={};vec={}",
              zt, group, zt, il, vec);
          std::optional<Schedule> s;
          try {
            s = parse_schedule(spec);
          } catch (const std::exception&) {
            continue;  // not a legal combination
          }
          const PackedFormat f = pack_format(a, p, *s);
          const GeneralSchedule& g = s->as<GeneralSchedule>();
          const int64_t span = 3 * int64_t{32 / group} * zt + 5;
          for (int64_t start = 0; start < span; start += 7) {
            StoragePosCursor c(g, start);
            for (int64_t q = start; q < span; ++q, c.next())
              ASSERT_EQ(*c, storage_pos(g, f, q)) << spec << " from " << start << " at " << q;
          }
          ++shapes;
        }
  EXPECT_GT(shapes, 40);
}

TEST(PackedFormat, NonzeroSplitSkipsEmptyRowsAndPadsTail) {
  CsrMatrix a = testing::matrix_with_lengths(40, {5, 0, 0, 9, 1}, 2);
  Problem p = Problem::spmv(5, 40, DType::F32);
  Schedule s = parse_schedule(
      "general;block=nnz:8;warp=nnz:4;thread=nnz:2;warps=2;group=16;bcols=16;"
      "red=bitmap,segment,segment");
  // group=16 leaves idle lanes for spmv; the packer does not care.
  PackedFormat f = pack_format(a, p, s);
  EXPECT_EQ(f.perm.values, (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(f.stats.nnz_padded, 16);
  EXPECT_EQ(f.output, OutputMode::Atomic);
  EXPECT_EQ(f.at(Level::Block).tasks, 2);
  EXPECT_EQ(f.at(Level::Thread).row_begin.values,
            (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1, 2, 3}));
  ASSERT_EQ(f.row_start_bits.size(), 1u);
  EXPECT_EQ(f.row_start_bits[0], (1u << 0) | (1u << 5) | (1u << 14));
}

TEST(PackedFormat, ShapeMismatchIsAUserError) {
  CsrMatrix a = testing::matrix_with_lengths(8, {1, 2}, 3);
  EXPECT_THROW(pack_format(a, Problem::spmm(3, 8, 1, DType::F32), Schedule(GeneralSchedule{})),
               UserError);
}

}  // namespace
}  // namespace sparsegen
