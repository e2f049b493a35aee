// Printer, SPEC parser and validation of schedules; golden printed forms.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/general_schedule.h"
#include "ir/schedule.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

const char* kGoldenSpecs[] = {
    // default: a block per row, one warp striding over it
    "general",
    // CSR-vector: a warp per row, 8-lane groups over 8 columns
    "general;block=rows:4;warp=row;thread=nnz:4;warps=4;group=8;tcols=1;bcols=8;"
    "red=total,total,none;pad=4;vec=4",
    // CSR-scalar: a thread per row, sorted, 4 columns per thread
    "general;block=rows:128;warp=rows:32;thread=row;warps=4;tcols=4;bcols=4;red=total,none,none;"
    "sort=1",
    // nonzero split with segments everywhere, atomics across blocks
    "general;block=nnz:256;warp=nnz:64;thread=nnz:2;warps=4;red=bitmap,segment,segment;bcols=1",
    // nonzero split, rows padded to the thread chunk, interleaved vector loads
    "general;block=nnz:1024;warp=nnz:512;thread=nnz:16;warps=2;group=1;red=total,bitmap,segment;"
    "pad=16;interleave=1;vec=4",
};

std::filesystem::path golden_path() {
  return testing::source_dir() / "tests/golden/ir/schedules.txt";
}

TEST(SchedulePrint, GoldenMultiLineForms) {
  std::string got;
  for (const char* spec : kGoldenSpecs) {
    Schedule s = parse_schedule(spec);
    got += "# " + to_string(s) + "\n" + print_schedule(s) + "\n";
  }
  if (std::getenv("SPARSEGEN_UPDATE_GOLDEN")) std::ofstream(golden_path()) << got;
  std::ifstream in(golden_path());
  ASSERT_TRUE(in) << "missing " << golden_path() << " (run with SPARSEGEN_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str());
}

TEST(SchedulePrint, DefaultIsLegalAndStable) {
  const Schedule s(GeneralSchedule{});
  EXPECT_EQ(s.family_name(), "general");
  EXPECT_EQ(to_string(s),
            "general;block=row;warp=nnz:32;thread=nnz:1;warps=1;group=1;tcols=1;bcols=1;"
            "red=total,total,total;sort=0;pad=1;interleave=0;vec=1");
  EXPECT_EQ(parse_schedule(to_string(s)), s);
}

TEST(SchedulePrint, NameTablesRoundTrip) {
  for (auto l : {Level::Block, Level::Warp, Level::Thread}) EXPECT_EQ(parse_level(to_string(l)), l);
  for (auto w : {WorkSplit::Row, WorkSplit::Rows, WorkSplit::Nnz})
    EXPECT_EQ(parse_work_split(to_string(w)), w);
  for (auto r :
       {ReductionKind::None, ReductionKind::Total, ReductionKind::Bitmap, ReductionKind::Segment})
    EXPECT_EQ(parse_reduction(to_string(r)), r);
  for (const IrFamily* f : ir_families()) EXPECT_EQ(find_ir_family(f->name()), f);
  EXPECT_EQ(find_ir_family("nosuch"), nullptr);
  EXPECT_FALSE(parse_reduction("Total"));
}

std::string parse_error(const std::string& spec) {
  try {
    parse_schedule(spec);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ScheduleParse, ErrorsNameTheField) {
  EXPECT_NE(parse_error("general;warp=rowz").find("field 'warp'"), std::string::npos);
  EXPECT_NE(parse_error("general;warp=rowz").find("found 'rowz'"), std::string::npos);
  EXPECT_NE(parse_error("general;warps=0").find("field 'warps'"), std::string::npos);
  EXPECT_NE(parse_error("general;warps=4x").find("field 'warps'"), std::string::npos);
  EXPECT_NE(parse_error("general;red=total,total").find("field 'red'"), std::string::npos);
  EXPECT_NE(parse_error("general;red=total,sum,total").find("found 'sum'"), std::string::npos);
  EXPECT_NE(parse_error("general;colour=blue").find("field 'colour'"), std::string::npos);
  EXPECT_NE(parse_error("general;pad=4;pad=4").find("field 'pad'"), std::string::npos);
  EXPECT_NE(parse_error("general;sort").find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(parse_error("special;warps=2").find("field 'family'"), std::string::npos);
  EXPECT_NE(
      parse_error("nosuch").find(
          "general, macko, bitmap_tc, baked, slide, slide_lt, twell, dense_ffn, dense or cusparse"),
      std::string::npos);
  EXPECT_NE(parse_error("general;block=row:3").find("field 'block'"), std::string::npos);
  EXPECT_NE(parse_error("general;block=nnz").find("field 'block'"), std::string::npos);
}

TEST(ScheduleValidate, IllegalCombinationsGiveReasons) {
  // thread bitmap must be followed by warp segment
  std::string e = parse_error(
      "general;block=nnz:64;warp=nnz:32;thread=nnz:1;warps=2;red=bitmap,bitmap,segment");
  EXPECT_NE(e.find("warp reduction bitmap is illegal here: expected segment"), std::string::npos)
      << e;
  // thread total over a nonzero split needs padding to the chunk
  e = parse_error(
      "general;block=nnz:128;warp=nnz:64;thread=nnz:2;warps=2;red=total,bitmap,segment");
  EXPECT_NE(e.find("pad (1) to be a multiple of thread nnz:2"), std::string::npos) << e;
  // exact tiling of nonzero splits
  e = parse_error(
      "general;block=nnz:100;warp=nnz:64;thread=nnz:2;warps=2;red=bitmap,segment,segment");
  EXPECT_NE(e.find("block nnz:100 must equal warps (2) x warp nnz:64 = 128"), std::string::npos)
      << e;
  // illegal nesting
  e = parse_error("general;block=rows:4;warp=nnz:32;thread=nnz:1");
  EXPECT_NE(e.find("split nesting block/warp/thread = rows/nnz/nnz is illegal"), std::string::npos)
      << e;
  // vector loads need aligned chunks
  e = parse_error("general;block=rows:4;warp=row;thread=nnz:4;warps=4;red=total,total,none;vec=4");
  EXPECT_NE(e.find("vec=4 needs pad (1)"), std::string::npos) << e;
  // columns
  e = parse_error("general;group=4;tcols=2;bcols=12");
  EXPECT_NE(e.find("bcols=12 must be a positive multiple of warp columns group*tcols = 8"),
            std::string::npos)
      << e;
  // interleave needs full rounds
  e = parse_error(
      "general;block=rows:1;warp=row;thread=nnz:4;group=8;red=total,total,none;"
      "interleave=1;pad=4");
  EXPECT_NE(e.find("interleave needs pad (4) to be a multiple of a warp round"), std::string::npos)
      << e;
  // block row forces total everywhere
  e = parse_error("general;red=total,total,none");
  EXPECT_NE(e.find("block reduction none is illegal here: expected total"), std::string::npos) << e;
}

TEST(ScheduleValidate, ProblemDependent) {
  Schedule s = parse_schedule("general;group=32;warp=nnz:1;tcols=1;bcols=32");
  EXPECT_TRUE(validate(Problem::spmm(4, 4, 32, DType::F32), s).empty());
  auto why = validate(Problem::spmv(4, 4, DType::F32), s);
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why[0].find("beyond n=1"), std::string::npos);
}

TEST(ScheduleParse, RoundTripsEveryEnumeratedSchedule) {
  CsrMatrix a = testing::matrix_with_lengths(64, {0, 3, 1, 40, 7, 0, 2, 5, 9, 1, 0, 12}, 7);
  size_t total = 0;
  for (int64_t n : {1, 2, 7, 8, 32}) {
    Problem p = Problem::spmm(a.rows, a.cols, n, DType::F16);
    for (const Schedule& s : enumerate_schedules(p, a)) {
      ASSERT_EQ(parse_schedule(to_string(s)), s) << to_string(s);
      ++total;
    }
  }
  EXPECT_GT(total, 500u);
}

}  // namespace
}  // namespace sparsegen
