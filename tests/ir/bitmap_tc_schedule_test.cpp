// bitmap_tc schedule family (ir/bitmap_tc_schedule.h): SPEC round trip and golden print, parse
// errors, problem legality, shared-memory layout, the hardware verifier and the enumerator.
#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ir/bitmap_format.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/format.h"
#include "ir/schedule.h"
#include "ir/verifier.h"

namespace sparsegen {
namespace {

BitmapTcSchedule make(int warps, int mt, int ksplit, int stages, int kt = 1,
                      MmaKind mma = MmaKind::Sync) {
  BitmapTcSchedule s;
  s.warps_per_block = warps;
  s.m_tiles = mt;
  s.k_tiles = kt;
  s.ksplit = ksplit;
  s.stages = stages;
  s.mma = mma;
  return s;
}

// Seeded random matrix; every 7th row is empty (a whole empty tile row for small widths).
CsrMatrix random_matrix(int64_t rows, int64_t cols, double density, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      if (r % 7 != 3 && u(g) < density) {
        a.col_idx.push_back(static_cast<int32_t>(c));
        a.values.push_back(static_cast<float>(u(g) * 2 - 1));
      }
    a.row_ptr.push_back(a.nnz());
  }
  a.check_canonical();
  return a;
}

// Runs f, expects a UserError whose message contains every one of `parts`.
void expect_user_error(const std::function<void()>& f, const std::vector<std::string>& parts,
                       const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no UserError";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << what << ": '" << p << "' not in: " << msg;
  }
}

// The one reason validate(p, s) gives must contain every one of `parts`.
void expect_one_reason(const Problem& p, const BitmapTcSchedule& s,
                       const std::vector<std::string>& parts) {
  const auto why = validate(p, Schedule(s));
  ASSERT_EQ(why.size(), 1u) << to_string(p);
  for (const auto& part : parts)
    EXPECT_NE(why[0].find(part), std::string::npos) << "'" << part << "' not in: " << why[0];
}

TEST(BitmapTcSchedule, SpecRoundTrip) {
  const std::vector<BitmapTcSchedule> all = {
      make(4, 1, 1, 2),    make(8, 2, 3, 3),    make(1, 1, 64, 2, 4),
      make(2, 2, 7, 3, 2), make(8, 1, 2, 2, 4), make(4, 2, 2, 2, 2, MmaKind::Wgmma)};
  for (const auto& b : all) {
    const Schedule s(b);
    EXPECT_EQ(s.family_name(), "bitmap_tc");
    const std::string spec = to_string(s);
    EXPECT_EQ(spec.rfind("bitmap_tc;", 0), 0u) << spec;
    const Schedule back = parse_schedule(spec);
    EXPECT_EQ(back, s) << spec;
    EXPECT_EQ(back.as<BitmapTcSchedule>(), b) << spec;
    EXPECT_EQ(to_string(back), spec);
  }
  EXPECT_EQ(to_string(Schedule(make(8, 2, 3, 3, 2))),
            "bitmap_tc;warps=8;mt=2;kt=2;ksplit=3;stages=3;mma=sync");
  EXPECT_EQ(to_string(Schedule(make(8, 1, 1, 2, 1, MmaKind::Wgmma))),
            "bitmap_tc;warps=8;mt=1;kt=1;ksplit=1;stages=2;mma=wgmma");
  // pipe=bulk is printed (and keyed) only when set; it round-trips with vals=pair.
  {
    BitmapTcSchedule b = make(4, 2, 3, 4, 1, MmaKind::Wgmma);
    b.pipe = BitmapPipe::Bulk;
    b.values = BitmapValues::Pair;
    const std::string spec = to_string(Schedule(b));
    EXPECT_EQ(spec, "bitmap_tc;warps=4;mt=2;kt=1;ksplit=3;stages=4;mma=wgmma;vals=pair;pipe=bulk");
    EXPECT_EQ(parse_schedule(spec).as<BitmapTcSchedule>(), b);
    EXPECT_EQ(parse_schedule("bitmap_tc;mma=wgmma;stages=6;pipe=bulk").as<BitmapTcSchedule>().pipe,
              BitmapPipe::Bulk);
    EXPECT_EQ(parse_schedule("bitmap_tc;pipe=async").as<BitmapTcSchedule>(), BitmapTcSchedule{});
    b.copy = BitmapCopy::Step;  // printed only when step
    EXPECT_EQ(to_string(Schedule(b)), spec + ";copy=step");
    EXPECT_EQ(parse_schedule(spec + ";copy=step").as<BitmapTcSchedule>(), b);
    b.cluster = 4;  // printed only when > 1
    EXPECT_EQ(to_string(Schedule(b)), spec + ";copy=step;cluster=4");
    EXPECT_EQ(parse_schedule(spec + ";copy=step;cluster=4").as<BitmapTcSchedule>(), b);
    EXPECT_NE(print_schedule(Schedule(b)).find("clusters of 4 row blocks"), std::string::npos);
    b.b_load = BitmapBLoad::Map;  // printed only when map
    EXPECT_EQ(to_string(Schedule(b)), spec + ";copy=step;cluster=4;b=map");
    EXPECT_EQ(parse_schedule(spec + ";copy=step;cluster=4;b=map").as<BitmapTcSchedule>(), b);
    EXPECT_EQ(parse_schedule(spec + ";b=arranged").as<BitmapTcSchedule>().b_load,
              BitmapBLoad::Arranged);
    EXPECT_NE(print_schedule(Schedule(b)).find("B     : map (TMA"), std::string::npos);
    // decode=scatter: printed only when set, and only with slot values and one row tile a warp
    b.values = BitmapValues::Slot;
    b.m_tiles = 1;
    b.decode = BitmapDecode::Scatter;
    const std::string sc = to_string(Schedule(b));
    EXPECT_EQ(sc,
              "bitmap_tc;warps=4;mt=1;kt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;"
              "cluster=4;b=map;decode=scatter");
    EXPECT_EQ(parse_schedule(sc).as<BitmapTcSchedule>(), b);
    EXPECT_NE(print_schedule(Schedule(b)).find("A     : scatter"), std::string::npos);
    EXPECT_NE(print_schedule(Schedule(b)).find("A and B from shared"), std::string::npos);
    EXPECT_EQ(parse_schedule("bitmap_tc;decode=regs").as<BitmapTcSchedule>().decode,
              BitmapDecode::Registers);
    // kred=cluster: printed only when set; the output is stored, not added into a workspace
    b.cluster = 1;
    b.decode = BitmapDecode::Registers;
    b.kred = BitmapKReduce::Cluster;
    const std::string kc = to_string(Schedule(b));
    EXPECT_EQ(kc,
              "bitmap_tc;warps=4;mt=1;kt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;"
              "kred=cluster");
    EXPECT_EQ(parse_schedule(kc).as<BitmapTcSchedule>(), b);
    EXPECT_EQ(b.output(), OutputMode::Store);
    EXPECT_TRUE(b.cluster_k());
    EXPECT_NE(print_schedule(Schedule(b)).find("k-red : cluster (the 3 K parts"),
              std::string::npos);
    EXPECT_EQ(parse_schedule("bitmap_tc;kred=ws").as<BitmapTcSchedule>().kred,
              BitmapKReduce::Workspace);
  }
  // Specs written before the mma field (cache keys, results JSON) still parse, as mma=sync.
  EXPECT_EQ(parse_schedule("bitmap_tc;warps=8;mt=2;kt=2;ksplit=3;stages=3"),
            Schedule(make(8, 2, 3, 3, 2)));
  // Omitted fields keep the defaults; any order; a trailing ';' is tolerated.
  EXPECT_EQ(parse_schedule("bitmap_tc"), Schedule(BitmapTcSchedule{}));
  EXPECT_EQ(parse_schedule("bitmap_tc;stages=3;ksplit=3;kt=4;mt=2;warps=8;"),
            Schedule(make(8, 2, 3, 3, 4)));
  EXPECT_EQ(parse_schedule("bitmap_tc;mt=2"), Schedule(make(4, 2, 1, 2)));
  // The value layout: printed only when it is not the default, so slot SPECs keep their text.
  BitmapTcSchedule pair = make(4, 2, 2, 2);
  pair.values = BitmapValues::Pair;
  EXPECT_EQ(to_string(Schedule(pair)),
            "bitmap_tc;warps=4;mt=2;kt=1;ksplit=2;stages=2;mma=sync;vals=pair");
  EXPECT_EQ(parse_schedule(to_string(Schedule(pair))), Schedule(pair));
  EXPECT_EQ(parse_schedule("bitmap_tc;mt=2;ksplit=2;vals=slot"), Schedule(make(4, 2, 2, 2)));
  EXPECT_NE(print_schedule(Schedule(pair)).find("vals=pair"), std::string::npos);
  try {
    parse_schedule("bitmap_tc;vals=pairs");
    ADD_FAILURE() << "vals=pairs parsed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("slot or pair"), std::string::npos) << e.what();
  }
}

TEST(BitmapTcSchedule, GoldenPrint) {
  EXPECT_EQ(print_schedule(Schedule(make(8, 2, 3, 3, 2))),
            "schedule bitmap_tc\n"
            "  format: bitmap tiles 16x64 (64-bit row masks, values in fragment order)\n"
            "  block : warps=8 rows_per_block=256 (mt=2 row tiles per warp)\n"
            "  k     : ksplit=3 parts, 2 column tiles per step, cp.async stages=3\n"
            "  math  : mma.m16n8k16 per warp, fp32 accumulate\n"
            "  output: atomic\n");
  EXPECT_EQ(print_schedule(Schedule(make(4, 1, 1, 2, 1, MmaKind::Wgmma))),
            "schedule bitmap_tc\n"
            "  format: bitmap tiles 16x64 (64-bit row masks, values in fragment order)\n"
            "  block : warps=4 rows_per_block=64 (mt=1 row tiles per warp)\n"
            "  k     : ksplit=1 parts, 1 column tile per step, cp.async stages=2\n"
            "  math  : wgmma.m64nNk16 per warpgroup (A from registers, B from shared), fp32 "
            "accumulate\n"
            "  output: store\n");
  const std::string def = print_schedule(Schedule(BitmapTcSchedule{}));
  EXPECT_NE(def.find("  output: store\n"), std::string::npos) << def;
  EXPECT_NE(def.find(" 1 column tile per step,"), std::string::npos) << def;
}

TEST(BitmapTcSchedule, DerivedQuantities) {
  const BitmapTcSchedule s = make(8, 2, 3, 3);
  EXPECT_EQ(s.rows_per_block(), 256);
  EXPECT_EQ(s.threads_per_block(), 256);
  EXPECT_EQ(s.output(), OutputMode::Atomic);
  EXPECT_EQ(make(4, 1, 1, 2).output(), OutputMode::Store);
  // 5 column tiles in 2 parts: 3 + 2; in 5 parts: one each; in 4 parts: 2 + 2 + 1 + (empty).
  EXPECT_EQ(bitmap_tc_part_tiles(5, 2), 3);
  EXPECT_EQ(bitmap_tc_part_tiles(5, 5), 1);
  EXPECT_EQ(bitmap_tc_part_tiles(5, 4), 2);
  const Problem p = Problem::spmm(300, 1000, 24, DType::F16);
  EXPECT_EQ(bitmap_tc_grid_x(p, s), 2);  // ceil(300 / 256)
  EXPECT_EQ(bitmap_tc_grid_y(p, s), 3);
  EXPECT_EQ(bitmap_tc_grid_x(p, make(4, 1, 1, 2)), 5);  // ceil(300 / 64)
}

TEST(BitmapTcSchedule, ParseErrorsNameTheField) {
  auto parse = [](const char* spec) { return [spec] { (void)parse_schedule(spec); }; };
  // Unknown key.
  expect_user_error(parse("bitmap_tc;foo=1"), {"field 'foo'", "warps, mt, kt, ksplit, stages, mma"},
                    "unknown key");
  expect_user_error(parse("bitmap_tc;mma=hmma"), {"field 'mma'", "sync or wgmma", "'hmma'"},
                    "mma=hmma");
  // A general-family key is unknown here.
  expect_user_error(parse("bitmap_tc;tcols=2"), {"field 'tcols'"}, "general key");
  // Out of the parser's range / not an integer.
  expect_user_error(parse("bitmap_tc;warps=0"), {"field 'warps'", "'0'"}, "warps=0");
  expect_user_error(parse("bitmap_tc;warps=64"), {"field 'warps'", "'64'"}, "warps=64");
  expect_user_error(parse("bitmap_tc;mt=x"), {"field 'mt'", "'x'"}, "mt=x");
  expect_user_error(parse("bitmap_tc;ksplit=2000"), {"field 'ksplit'"}, "ksplit=2000");
  expect_user_error(parse("bitmap_tc;kt=0"), {"field 'kt'", "'0'"}, "kt=0");
  expect_user_error(parse("bitmap_tc;kt=100"), {"field 'kt'", "'100'"}, "kt=100");
  expect_user_error(parse("bitmap_tc;ksplit=-1"), {"field 'ksplit'"}, "ksplit=-1");
  expect_user_error(parse("bitmap_tc;stages=2x"), {"field 'stages'"}, "stages=2x");
  expect_user_error(parse("bitmap_tc;stages="), {"field 'stages'"}, "stages=");
  // In the parser's range but illegal: the validation reason names the field and value.
  expect_user_error(parse("bitmap_tc;warps=3"), {"warps=3 must be 1, 2, 4 or 8"}, "warps=3");
  expect_user_error(parse("bitmap_tc;mt=3"), {"mt=3 must be 1 or 2"}, "mt=3");
  expect_user_error(parse("bitmap_tc;ksplit=65"), {"ksplit=65 must be in 1..64"}, "ksplit=65");
  expect_user_error(parse("bitmap_tc;stages=4"), {"stages=4 must be 2 or 3"}, "stages=4");
  expect_user_error(parse("bitmap_tc;kt=3"), {"kt=3 must be 1, 2 or 4"}, "kt=3");
  expect_user_error(parse("bitmap_tc;warps=2;mma=wgmma"), {"warpgroups", "warps=2"},
                    "wgmma, 2 warps");
  expect_user_error(parse("bitmap_tc;pipe=tma"), {"field 'pipe'", "async or bulk", "'tma'"},
                    "pipe=tma");
  expect_user_error(parse("bitmap_tc;kt=2;stages=4;mma=wgmma;pipe=bulk"), {"kt=2 must be 1"},
                    "bulk, kt=2");
  expect_user_error(parse("bitmap_tc;stages=1;pipe=bulk"),
                    {"stages=1 must be in 2..6 with pipe=bulk"}, "bulk, stages=1");
  expect_user_error(parse("bitmap_tc;stages=7;mma=wgmma;pipe=bulk"), {"stages=7"},
                    "bulk, stages=7");
  EXPECT_NO_THROW(parse_schedule("bitmap_tc;stages=6;pipe=bulk"));  // mma.sync too
  // copy=step reads the pack in groups of the block's row tiles; copy needs pipe=bulk
  EXPECT_EQ(bitmap_tc_tile_group(
                parse_schedule("bitmap_tc;warps=8;mt=2;stages=4;mma=wgmma;pipe=bulk;copy=step")
                    .as<BitmapTcSchedule>()),
            16);
  EXPECT_EQ(
      bitmap_tc_tile_group(parse_schedule("bitmap_tc;warps=8;mt=2;stages=4;mma=wgmma;pipe=bulk")
                               .as<BitmapTcSchedule>()),
      1);
  expect_user_error(parse("bitmap_tc;copy=step"), {"copy=step needs pipe=bulk"}, "copy, async");
  expect_user_error(parse("bitmap_tc;pipe=bulk;copy=lane"), {"copy"}, "copy=lane");
  // clusters share B by multicast: copy=step only, of 1, 2 or 4 row blocks
  expect_user_error(parse("bitmap_tc;stages=4;pipe=bulk;cluster=2"),
                    {"cluster=2 needs pipe=bulk and copy=step"}, "cluster, copy=tile");
  expect_user_error(parse("bitmap_tc;cluster=2"), {"cluster=2 needs pipe=bulk and copy=step"},
                    "cluster, async");
  expect_user_error(parse("bitmap_tc;stages=4;pipe=bulk;copy=step;cluster=3"),
                    {"cluster=3 must be 1, 2 or 4"}, "cluster=3");
  expect_user_error(parse("bitmap_tc;cluster=0"), {"field 'cluster'", "'0'"}, "cluster=0");
  // b=map: TMA boxes in wgmma's swizzle, so pipe=bulk with mma=wgmma only
  expect_user_error(parse("bitmap_tc;stages=4;pipe=bulk;b=map"),
                    {"b=map needs pipe=bulk and mma=wgmma"}, "map, mma.sync");
  expect_user_error(parse("bitmap_tc;mma=wgmma;b=map"), {"b=map needs pipe=bulk"}, "map, async");
  // decode=scatter: one row tile a warp, slot values, copy=step with B by TMA
  const std::string bulk_map = "bitmap_tc;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map";
  auto parse_str = [](std::string spec) { return [spec] { (void)parse_schedule(spec); }; };
  EXPECT_NO_THROW(parse_schedule(bulk_map + ";decode=scatter"));
  expect_user_error(parse_str(bulk_map + ";decode=gather"), {"field 'decode'", "regs or scatter"},
                    "decode=gather");
  for (const char* spec : {"bitmap_tc;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;mt=2",
                           "bitmap_tc;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;vals=pair",
                           "bitmap_tc;stages=4;mma=wgmma;pipe=bulk;copy=step",
                           "bitmap_tc;stages=4;mma=wgmma;pipe=bulk;b=map"})
    expect_user_error(parse_str(std::string(spec) + ";decode=scatter"),
                      {"decode=scatter needs pipe=bulk, mma=wgmma, copy=step, b=map, mt=1"}, spec);
  // kred=cluster: pipe=bulk, 2..8 K parts, no row-block clusters
  expect_user_error(parse("bitmap_tc;stages=4;pipe=bulk;ksplit=2;kred=all"),
                    {"field 'kred'", "ws or cluster", "'all'"}, "kred=all");
  EXPECT_NO_THROW(parse_schedule("bitmap_tc;stages=4;pipe=bulk;ksplit=8;kred=cluster"));
  for (const char* spec :
       {"bitmap_tc;stages=4;pipe=bulk;ksplit=1;kred=cluster",
        "bitmap_tc;stages=4;pipe=bulk;ksplit=16;kred=cluster", "bitmap_tc;ksplit=2;kred=cluster",
        "bitmap_tc;stages=4;pipe=bulk;copy=step;cluster=2;ksplit=2;kred=cluster"})
    expect_user_error(parse(spec), {"kred=cluster needs pipe=bulk, ksplit 2..8"}, spec);
  expect_user_error(parse("bitmap_tc;stages=4;mma=wgmma;pipe=bulk;b=tma"),
                    {"field 'b'", "arranged or map", "'tma'"}, "b=tma");
  // Duplicate key.
  expect_user_error(parse("bitmap_tc;warps=4;mt=1;warps=8"), {"field 'warps'", "second occurrence"},
                    "duplicate warps");
  expect_user_error(parse("bitmap_tc;stages=2;stages=2"), {"field 'stages'"}, "duplicate stages");
  // Not KEY=VALUE.
  expect_user_error(parse("bitmap_tc;warps"), {"'warps'", "KEY=VALUE"}, "no '='");
  // The validating constructor lists every reason.
  expect_user_error([] { (void)Schedule(make(3, 3, 0, 1, 8)); },
                    {"warps=3", "mt=3", "kt=8", "ksplit=0", "stages=1"}, "constructor");
}

TEST(BitmapTcSchedule, ValidateAgainstProblem) {
  const BitmapTcSchedule s;
  // Legal: fp16 and bf16, N a multiple of 8 up to 128, either C layout, K not a multiple of 64.
  for (DType dt : {DType::F16, DType::BF16})
    for (int64_t n : {8, 24, 64, 128})
      for (Layout c : {Layout::RowMajor, Layout::ColMajor}) {
        const Problem p = Problem::spmm(100, 130, n, dt, Layout::RowMajor, c);
        EXPECT_TRUE(validate(p, Schedule(s)).empty()) << to_string(p);
      }
  expect_one_reason(Problem::spmm(64, 256, 8, DType::F32), s, {"fp16/bf16", "fp32"});
  expect_one_reason(Problem::spmm(64, 256, 8, DType::F16, Layout::ColMajor), s, {"row-major B"});
  expect_one_reason(Problem::spmm(64, 256, 12, DType::F16), s, {"multiple of 8", "not 12"});
  expect_one_reason(Problem::spmm(64, 256, 7, DType::BF16), s, {"multiple of 8", "not 7"});
  expect_one_reason(Problem::spmm(64, 256, 136, DType::F16), s, {"8..128", "not 136"});
  expect_one_reason(Problem::spmv(64, 256, DType::F16), s, {"multiple of 8", "not 1"});
  // k = 256: 4 column tiles, so ksplit 4 is legal and 5 is not; k = 257 has 5 tiles.
  EXPECT_TRUE(validate(Problem::spmm(64, 256, 8, DType::F16), Schedule(make(4, 1, 4, 2))).empty());
  expect_one_reason(Problem::spmm(64, 256, 8, DType::F16), make(4, 1, 5, 2),
                    {"ksplit=5", "4 column tiles", "k=256"});
  EXPECT_TRUE(validate(Problem::spmm(64, 257, 8, DType::F16), Schedule(make(4, 1, 5, 2))).empty());
  // wgmma: N of 8, 16, 32, 64 or 128 only (one emitted instruction shape per N).
  const BitmapTcSchedule wg = make(4, 1, 1, 2, 1, MmaKind::Wgmma);
  for (int64_t n : {8, 16, 32, 64, 128})
    EXPECT_TRUE(validate(Problem::spmm(100, 130, n, DType::BF16), Schedule(wg)).empty()) << n;
  expect_one_reason(Problem::spmm(64, 256, 24, DType::F16), wg, {"mma=wgmma", "not 24"});
  expect_one_reason(Problem::spmm(64, 256, 96, DType::F16), wg, {"mma=wgmma", "not 96"});
  // b=map: B rows of one swizzle width (N = 16, 32, 64; 128 in two boxes), wgmma with pipe=bulk.
  BitmapTcSchedule map = wg;
  map.pipe = BitmapPipe::Bulk;
  map.stages = 4;
  map.b_load = BitmapBLoad::Map;
  for (int64_t n : {16, 32, 64, 128})
    EXPECT_TRUE(validate(Problem::spmm(100, 130, n, DType::F16), Schedule(map)).empty()) << n;
  expect_one_reason(Problem::spmm(64, 256, 8, DType::F16), map, {"b=map", "not 8"});
  // Every reason at once.
  const auto why =
      validate(Problem::spmm(64, 64, 7, DType::F32, Layout::ColMajor), Schedule(make(4, 1, 2, 2)));
  EXPECT_EQ(why.size(), 4u);
}

// Worked example, by hand (fp16, m = 1000, k = 300, n = 24, warps = 4, mt = 2, ksplit = 2,
// stages = 3, largest tile 104 value slots):
//   row tiles per block  = 4 warps x 2 = 8
//   column tiles         = ceil(300 / 64) = 5; per K part ceil(5 / 2) = 3
//   tile_ptrs            = 8 x (3 + 1) x 4 bytes = 128 (already a multiple of 16)
//   B row                = 24 x 2 = 48 bytes = 3 units of 16 (odd: kept) -> 48 bytes
//   b_tile               = 64 x 48 = 3072
//   a_values             = 104 x 2 = 208 (a multiple of 16)
//   a_tile               = 16 masks x 8 bytes + 208 = 336
//   stage                = 3072 + 8 x 336 = 5760
//   total                = 128 + 3 x 5760 = 17408
// With kt = 2 a stage holds two column tiles of each (B rows and every row tile's A tile):
//   stage = 2 x 5760 = 11520, total = 128 + 3 x 11520 = 34688 (the tile pointers do not grow).
TEST(BitmapTcSchedule, SharedMemoryWorkedExample) {
  const Problem p = Problem::spmm(1000, 300, 24, DType::F16);
  const BitmapTcSmem m = bitmap_tc_smem(p, make(4, 2, 2, 3), 104);
  EXPECT_EQ(m.tile_ptrs, 128);
  EXPECT_EQ(m.b_tile, 3072);
  EXPECT_EQ(m.a_values, 208);
  EXPECT_EQ(m.a_tile, 336);
  EXPECT_EQ(m.stage, 5760);
  EXPECT_EQ(m.total, 17408);
  EXPECT_EQ(bitmap_tc_shared_bytes(p, make(4, 2, 2, 3), 104), 17408);
  const BitmapTcSmem m2 = bitmap_tc_smem(p, make(4, 2, 2, 3, 2), 104);
  EXPECT_EQ(m2.tile_ptrs, 128);
  EXPECT_EQ(m2.b_tile, 3072);
  EXPECT_EQ(m2.a_tile, 336);
  EXPECT_EQ(m2.stage, 11520);
  EXPECT_EQ(m2.total, 34688);
  // cluster > 1: a third mbarrier per stage (the cluster's empty), 24 x 3 = 72 -> 80 bytes; the
  // grid in whole clusters: ceil(1000 / 128) = 8 row blocks -> 8 (cluster 2), 8 (4); 9 -> 12.
  {
    BitmapTcSchedule c = make(4, 2, 1, 3);
    c.pipe = BitmapPipe::Bulk;
    c.copy = BitmapCopy::Step;
    EXPECT_EQ(bitmap_tc_smem(p, c, 104).barriers, 48);
    c.cluster = 2;
    EXPECT_EQ(bitmap_tc_smem(p, c, 104).barriers, 80);
    EXPECT_EQ(bitmap_tc_grid_x(p, c), 8);
    c.cluster = 4;
    EXPECT_EQ(bitmap_tc_grid_x(Problem::spmm(1025, 300, 24, DType::F16), c), 12);
    c.cluster = 1;
    EXPECT_EQ(bitmap_tc_grid_x(Problem::spmm(1025, 300, 24, DType::F16), c), 9);
  }
  // copy=step (bulk pipe; only the sizes count here): a row tile's record also holds its 32
  // 16-bit lane starts, a_tile = 128 + 64 + 208.
  BitmapTcSchedule step = make(4, 2, 1, 3);
  step.pipe = BitmapPipe::Bulk;
  step.copy = BitmapCopy::Step;
  EXPECT_EQ(bitmap_tc_smem(p, step, 104).a_tile, 400);
  step.copy = BitmapCopy::Tile;
  EXPECT_EQ(bitmap_tc_smem(p, step, 104).a_tile, 336);
  // One row tile, one column tile, one part: tile_ptrs = 1 x 2 x 4 = 8 -> 16; a_values of 8
  // slots = 16; b row for n = 8 is one unit (16 bytes): 2 x (1024 + 128 + 16) + 16 = 2352.
  const BitmapTcSmem small =
      bitmap_tc_smem(Problem::spmm(5, 10, 8, DType::BF16), make(1, 1, 1, 2), 8);
  EXPECT_EQ(small.tile_ptrs, 16);
  EXPECT_EQ(small.a_values, 16);
  EXPECT_EQ(small.total, 2352);
  // Padded B rows: an odd number of 16-byte units (8 rows of an ldmatrix hit distinct banks).
  const BitmapTcSchedule sync;
  EXPECT_EQ(bitmap_tc_b_row_bytes(Problem::spmm(1, 1, 8, DType::F16), sync), 16);
  EXPECT_EQ(bitmap_tc_b_row_bytes(Problem::spmm(1, 1, 16, DType::F16), sync), 48);
  EXPECT_EQ(bitmap_tc_b_row_bytes(Problem::spmm(1, 1, 64, DType::F16), sync), 144);
  EXPECT_EQ(bitmap_tc_b_row_bytes(Problem::spmm(1, 1, 128, DType::F16), sync), 272);
  for (int64_t n = 8; n <= 128; n += 8) {
    const int64_t row = bitmap_tc_b_row_bytes(Problem::spmm(1, 1, n, DType::F16), sync);
    EXPECT_GE(row, 2 * n);
    EXPECT_EQ(row % 32, 16) << n;
  }
  // wgmma reads B in 16-byte column groups (no ldmatrix): rows are not padded.
  BitmapTcSchedule wg;
  wg.mma = MmaKind::Wgmma;
  for (int64_t n : {8, 16, 32, 64})
    EXPECT_EQ(bitmap_tc_b_row_bytes(Problem::spmm(1, 1, n, DType::F16), wg), 2 * n);
  // Every part of the layout is a multiple of 16 bytes (cp.async / ldmatrix alignment).
  for (int64_t mtv : {8, 96, 1024})
    for (const auto& s : {make(1, 1, 1, 2), make(8, 2, 7, 3), make(2, 1, 3, 2, 4)}) {
      const BitmapTcSmem x = bitmap_tc_smem(Problem::spmm(999, 1234, 40, DType::F16), s, mtv);
      for (int64_t v : {x.tile_ptrs, x.b_tile, x.a_values, x.a_tile, x.stage, x.total})
        EXPECT_EQ(v % 16, 0) << mtv;
    }
}

BitmapTileStats stats_with(int64_t max_tile_values) {
  BitmapTileStats st;
  st.rows = 256;
  st.cols = 512;
  st.tiles = 16 * 8;
  st.slots = 1000;
  st.max_tile_values = max_tile_values;
  return st;
}

TEST(BitmapTcSchedule, VerifyHardwareLimits) {
  const Problem p = Problem::spmm(256, 512, 64, DType::F16);
  const DeviceLimits dev = DeviceLimits::sm90();
  const BitmapTcSchedule s = make(8, 2, 1, 3);
  EXPECT_TRUE(verify_bitmap_tc(p, s, stats_with(1024), dev).empty());  // a fully dense tile fits
  // A (lying) huge tile overflows shared memory; the message carries the byte count.
  const int64_t huge = int64_t{1} << 20;
  const auto why = verify_bitmap_tc(p, s, stats_with(huge), dev);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("shared memory"), std::string::npos) << why[0];
  EXPECT_NE(why[0].find(std::to_string(bitmap_tc_shared_bytes(p, s, huge))), std::string::npos)
      << why[0];
  EXPECT_NE(why[0].find("sm_90"), std::string::npos) << why[0];
  // Exactly at the limit fits; one byte less does not.
  DeviceLimits tight = dev;
  tight.max_shared_per_block = bitmap_tc_shared_bytes(p, s, 1024);
  EXPECT_TRUE(verify_bitmap_tc(p, s, stats_with(1024), tight).empty());
  tight.max_shared_per_block -= 1;
  EXPECT_EQ(verify_bitmap_tc(p, s, stats_with(1024), tight).size(), 1u);
  // Value offsets beyond 32 bits.
  BitmapTileStats big = stats_with(64);
  big.slots = int64_t{INT_MAX};
  EXPECT_EQ(verify_bitmap_tc(p, s, big, dev).size(), 1u);
  // Grid and block limits.
  DeviceLimits small = dev;
  small.max_grid_x = 0;
  small.max_threads_per_block = 128;
  EXPECT_EQ(verify_bitmap_tc(p, s, stats_with(64), small).size(), 2u);
  // wgmma needs the sm_90a target: refused on an sm_80 device, with the device named.
  const BitmapTcSchedule wg = make(4, 1, 1, 2, 1, MmaKind::Wgmma);
  EXPECT_TRUE(verify_bitmap_tc(p, wg, stats_with(64), dev).empty());
  const auto no = verify_bitmap_tc(p, wg, stats_with(64), DeviceLimits::sm80());
  ASSERT_EQ(no.size(), 1u);
  EXPECT_NE(no[0].find("sm_80"), std::string::npos) << no[0];
  // Problem legality comes first (and alone).
  const auto bad =
      verify_bitmap_tc(Problem::spmm(256, 512, 64, DType::F32), s, stats_with(64), dev);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("fp32"), std::string::npos);
}

// The family-agnostic verifier, over the family's format_stats, agrees with verify_bitmap_tc.
TEST(BitmapTcSchedule, GenericVerifierAgrees) {
  const CsrMatrix a = random_matrix(70, 333, 0.3, 7);
  const Problem p = Problem::spmm(a.rows, a.cols, 32, DType::BF16);
  const BitmapTileStats bs = bitmap_tile_stats(a);
  for (const auto& b : {make(4, 1, 1, 2), make(8, 2, 3, 3)}) {
    const Schedule s(b);
    const FormatStats fs = s.family().format_stats(a, p, s);
    EXPECT_EQ(fs.nnz_padded, bs.slots);
    EXPECT_EQ(fs.block_tasks, bitmap_tc_grid_x(p, b));
    EXPECT_EQ(fs.col_tiles, b.ksplit);
    DeviceLimits dev = DeviceLimits::sm90();
    EXPECT_EQ(verify(p, s, fs, dev), verify_bitmap_tc(p, b, bs, dev));
    dev.max_shared_per_block = 1024;
    EXPECT_FALSE(verify(p, s, fs, dev).empty());
    EXPECT_EQ(verify(p, s, fs, dev), verify_bitmap_tc(p, b, bs, dev));
  }
}

TEST(BitmapTcSchedule, EnumerateOnlyVerifiedSchedules) {
  const DeviceLimits dev = DeviceLimits::sm90();
  const CsrMatrix a = random_matrix(100, 300, 0.4, 11);  // 7 row tiles, 5 column tiles
  const BitmapTileStats st = bitmap_tile_stats(a);
  for (DType dt : {DType::F16, DType::BF16})
    for (int64_t n : {8, 24, 128})
      for (Layout c : {Layout::RowMajor, Layout::ColMajor}) {
        const Problem p = Problem::spmm(a.rows, a.cols, n, dt, Layout::RowMajor, c);
        const auto all = enumerate_bitmap_tc_schedules(p, a, dev);
        ASSERT_FALSE(all.empty()) << to_string(p);
        std::set<std::string> specs;
        std::set<int> ksplits;
        for (const Schedule& s : all) {
          ASSERT_EQ(s.family_name(), "bitmap_tc");
          const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
          EXPECT_TRUE(validate(p, s).empty()) << to_string(s);
          EXPECT_TRUE(verify_bitmap_tc(p, b, st, dev).empty()) << to_string(s);
          EXPECT_LE(b.ksplit, 5);
          // A pipeline step never covers more column tiles than the block's K part has.
          EXPECT_LE(b.k_tiles, bitmap_tc_part_tiles(5, b.ksplit)) << to_string(s);
          EXPECT_TRUE(specs.insert(to_string(s)).second) << "duplicate " << to_string(s);
          ksplits.insert(b.ksplit);
        }
        // A small grid (1-2 blocks) is far from the wave bound: ksplit doubles up to the 5 tiles.
        EXPECT_EQ(ksplits, (std::set<int>{1, 2, 4})) << to_string(p);
        // Complete: every (warps {4, 8}, mt {1, 2}, kt {1, 2, 4}, ksplit {1, 2, 4}) point of the
        // space (stages 2, mma=sync) whose step fits its part (parts of 5, 3, 2 tiles) and that
        // verifies. With n <= 24 all fit: per (warps, mt) kt 1 and 2 x 3 ksplits + kt 4 x
        // ksplit 1 = 7.
        size_t expect = 0;
        for (int w : {4, 8})
          for (int mt : {1, 2})
            for (int kt : {1, 2, 4})
              for (int ks : {1, 2, 4}) {
                const BitmapTcSchedule b = make(w, mt, ks, 2, kt);
                if (kt > bitmap_tc_part_tiles(5, ks) || !verify_bitmap_tc(p, b, st, dev).empty())
                  continue;
                ++expect;
                EXPECT_EQ(specs.count(to_string(Schedule(b))), 1u)
                    << "missing " << to_string(Schedule(b));
              }
        // the cp.async wgmma kernel is legal but not offered (slower than mma.sync on the H200);
        // pipe=bulk's is, at N = 32, 64 and 128 only (EnumerateBulkWgmmaAtNThirtyTwoTo128)
        size_t sync = 0;
        for (const Schedule& s : all) {
          const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
          sync += b.mma == MmaKind::Sync;
          if (b.mma != MmaKind::Sync) {
            EXPECT_EQ(b.pipe, BitmapPipe::Bulk) << to_string(s);
          }
          if (n != 128) {
            EXPECT_EQ(b.mma, MmaKind::Sync) << to_string(s);
          }
        }
        EXPECT_EQ(sync, expect) << to_string(p);
        if (n <= 24) {
          EXPECT_EQ(all.size(), 28u) << to_string(p);
        }
      }
  // A device whose shared memory holds none of them: nothing is offered.
  DeviceLimits tiny = dev;
  tiny.max_shared_per_block = 512;
  EXPECT_TRUE(
      enumerate_bitmap_tc_schedules(Problem::spmm(a.rows, a.cols, 8, DType::F16), a, tiny).empty());
  // Through enumerate_schedules with the specialised families switched on.
  EnumerateOptions opt;
  opt.include_specialised = true;
  const Problem p16 = Problem::spmm(a.rows, a.cols, 16, DType::F16);
  size_t bitmap = 0;
  for (const Schedule& s : enumerate_schedules(p16, a, opt))
    bitmap += s.family_name() == "bitmap_tc" ? 1 : 0;
  EXPECT_EQ(bitmap, enumerate_bitmap_tc_schedules(p16, a, dev).size());
  EXPECT_GT(bitmap, 0u);
}

TEST(BitmapTcSchedule, EnumerateEmptyWhereTheFamilyDoesNotApply) {
  const DeviceLimits dev = DeviceLimits::sm90();
  const CsrMatrix a = random_matrix(40, 200, 0.3, 3);
  auto count = [&](const Problem& p) { return enumerate_bitmap_tc_schedules(p, a, dev).size(); };
  EXPECT_EQ(count(Problem::spmm(a.rows, a.cols, 8, DType::F32)), 0u);
  EXPECT_EQ(count(Problem::spmm(a.rows, a.cols, 7, DType::F16)), 0u);
  EXPECT_EQ(count(Problem::spmm(a.rows, a.cols, 136, DType::F16)), 0u);
  EXPECT_EQ(count(Problem::spmm(a.rows, a.cols, 8, DType::F16, Layout::ColMajor)), 0u);
  EXPECT_EQ(count(Problem::spmv(a.rows, a.cols, DType::F16)), 0u);
  EXPECT_EQ(count(Problem::spmm(a.rows + 1, a.cols, 8, DType::F16)), 0u);  // shape mismatch
  EXPECT_GT(count(Problem::spmm(a.rows, a.cols, 8, DType::F16)), 0u);
  // Degenerate problems: nothing to launch.
  const CsrMatrix none = random_matrix(0, 200, 0.3, 3);
  EXPECT_TRUE(
      enumerate_bitmap_tc_schedules(Problem::spmm(0, 200, 8, DType::F16), none, dev).empty());
  // Default enumerate_schedules leaves the specialised families out.
  for (const Schedule& s : enumerate_schedules(Problem::spmm(a.rows, a.cols, 8, DType::F16), a))
    EXPECT_NE(s.family_name(), "bitmap_tc");
}

// pipe=bulk (mma=wgmma, vals=pair, mt = 1, B by TMA; four warps with six stages, eight with four)
// is offered at N = 32, 64 and 128 on a wgmma device, over the same ksplit doubling; nowhere else.
TEST(BitmapTcSchedule, EnumerateBulkWgmmaAtNThirtyTwoTo128) {
  const DeviceLimits dev = DeviceLimits::sm90();
  const CsrMatrix a = random_matrix(100, 300, 0.4, 11);  // 7 row tiles, 5 column tiles
  auto bulk = [&](int64_t n, const DeviceLimits& d) {
    std::set<std::string> out;
    for (const Schedule& s :
         enumerate_bitmap_tc_schedules(Problem::spmm(a.rows, a.cols, n, DType::F16), a, d)) {
      const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
      if (b.pipe != BitmapPipe::Bulk) {
        EXPECT_EQ(b.mma, MmaKind::Sync) << to_string(s);
        continue;
      }
      EXPECT_EQ(b.mma, MmaKind::Wgmma) << to_string(s);
      EXPECT_EQ(b.values, BitmapValues::Pair) << to_string(s);
      EXPECT_EQ(b.b_load, BitmapBLoad::Map) << to_string(s);  // the arranged B: SPEC only
      out.insert(to_string(s));
    }
    return out;
  };
  for (int64_t n : {32, 64, 128}) {
    const std::set<std::string> got = bulk(n, dev);
    // copy {tile, step} x warps {4, 8} x ksplit {1, 2, 4}, four warps' step in clusters of 2
    // (two row blocks: no cluster of 4), and eight warps' step with ksplit 2 and 4 in clusters of
    // K parts (kred=cluster)
    EXPECT_EQ(got.size(), 17u) << n;
    EXPECT_EQ(got.count("bitmap_tc;warps=8;mt=1;kt=1;ksplit=4;stages=4;mma=wgmma;vals=pair;"
                        "pipe=bulk;copy=step;b=map;kred=cluster"),
              1u);
    EXPECT_EQ(got.count("bitmap_tc;warps=4;mt=1;kt=1;ksplit=4;stages=" +
                        std::string(n == 128 ? "4" : "6") +
                        ";mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster=2;b=map"),
              1u);
    // stages: 6 for four warps and 4 for eight; at N = 128 (B steps twice as large) 4 for both
    const std::string s4 = n == 128 ? "4" : "6", s8 = "4";
    EXPECT_EQ(got.count("bitmap_tc;warps=8;mt=1;kt=1;ksplit=1;stages=" + s8 +
                        ";mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map"),
              1u);
    EXPECT_EQ(got.count("bitmap_tc;warps=4;mt=1;kt=1;ksplit=2;stages=" + s4 +
                        ";mma=wgmma;vals=pair;pipe=bulk;b=map"),
              1u);
    EXPECT_EQ(got.count("bitmap_tc;warps=8;mt=1;kt=1;ksplit=1;stages=" + s8 +
                        ";mma=wgmma;vals=pair;pipe=bulk;b=map"),
              1u);
  }
  for (int64_t n : {8, 16, 24, 48, 96}) EXPECT_TRUE(bulk(n, dev).empty()) << n;
  EXPECT_TRUE(bulk(64, DeviceLimits::sm80()).empty());  // no wgmma there
  // The two copy kinds of one shape are enumerated next to each other (the model ranks them
  // equal, so a search measuring the best-ranked few measures both).
  std::vector<BitmapTcSchedule> order;
  for (const Schedule& s :
       enumerate_bitmap_tc_schedules(Problem::spmm(a.rows, a.cols, 64, DType::F16), a, dev))
    if (s.as<BitmapTcSchedule>().pipe == BitmapPipe::Bulk)
      order.push_back(s.as<BitmapTcSchedule>());
  // Each copy=tile schedule is followed by its copy=step twin, then the twin's clusters.
  size_t i = 0;
  while (i < order.size()) {
    EXPECT_EQ(order[i].copy, BitmapCopy::Tile);
    BitmapTcSchedule step = order[i];
    step.copy = BitmapCopy::Step;
    ASSERT_LT(i + 1, order.size());
    EXPECT_EQ(order[i + 1], step);
    i += 2;
    for (; i < order.size() && order[i].cluster > 1; ++i) {
      step.cluster = order[i].cluster;
      EXPECT_EQ(order[i], step);
      EXPECT_EQ(step.warps_per_block, 4);
    }
    if (i < order.size() && order[i].kred == BitmapKReduce::Cluster) {
      step.cluster = 1;
      step.kred = BitmapKReduce::Cluster;
      EXPECT_EQ(order[i], step);
      EXPECT_EQ(step.warps_per_block, 8);
      ++i;
    }
  }
  // Many row blocks: clusters of 2 and 4.
  const CsrMatrix tall = random_matrix(1024, 300, 0.4, 12);
  int clusters4 = 0;
  for (const Schedule& s : enumerate_bitmap_tc_schedules(
           Problem::spmm(tall.rows, tall.cols, 64, DType::F16), tall, dev))
    clusters4 += s.as<BitmapTcSchedule>().cluster == 4;
  EXPECT_EQ(clusters4, 3);  // ksplit 1, 2, 4
}

// Many row blocks: ksplit stops doubling once the previous split already had four waves of
// blocks (4 x 132 multiprocessors on sm_90).
TEST(BitmapTcSchedule, EnumerateStopsSplittingLargeGrids) {
  const DeviceLimits dev = DeviceLimits::sm90();
  // 4224 rows = 66 blocks of 64 rows (warps 4, mt 1); 2048 columns = 32 tiles.
  const CsrMatrix a = random_matrix(4224, 2048, 0.005, 5);
  const Problem p = Problem::spmm(a.rows, a.cols, 8, DType::F16);
  const auto all = enumerate_bitmap_tc_schedules(p, a, dev);
  for (const Schedule& s : all) {
    const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
    if (b.ksplit > 1) {
      EXPECT_LT(bitmap_tc_grid_x(p, b) * (b.ksplit / 2), 4 * dev.multiprocessors) << to_string(s);
    }
  }
  std::set<int> ks;
  for (const Schedule& s : all)
    if (s.as<BitmapTcSchedule>().warps_per_block == 4 && s.as<BitmapTcSchedule>().m_tiles == 1 &&
        s.as<BitmapTcSchedule>().k_tiles == 1)
      ks.insert(s.as<BitmapTcSchedule>().ksplit);
  // grid 66: ksplit 1, 2 (66), 4 (132), 8 (264 < 528), 16 (528: stop).
  EXPECT_EQ(ks, (std::set<int>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace sparsegen
