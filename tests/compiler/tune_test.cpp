// The search and its cache (compiler/tune.h) without a GPU: model-only tuning (k = 0) for an
// offline arch compiles and caches, the second tune is a cache hit, the key follows the matrix
// structure (not its values), an NVRTC failure caches nothing, a damaged cache file is a
// UserError naming it, the public API goes through the cache, and the fingerprint's speed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/fingerprint.h"
#include "compiler/tune.h"
#include "ir/family.h"
#include "ir/general_schedule.h"
#include "ir/macko_schedule.h"
#include "ir/schedule.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_db.h"
#include "runtime/nvrtc_compiler.h"
#include "sparsegen/sparsegen.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("sg_tune_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Irregular rows over 96 columns (seeded, deterministic).
CsrMatrix make_matrix(uint32_t seed = 1, int64_t rows = 64, int64_t cols = 96) {
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  uint32_t s = seed;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (next() % 100 < 20 + (r % 5) * 5) {
        a.col_idx.push_back(static_cast<int32_t>(c));
        a.values.push_back(0.5f + static_cast<float>(next() % 100) / 64.0f);
      }
    }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  a.source = "tune-test";
  return a;
}

TuneOptions model_only(const fs::path& dir) {
  TuneOptions o;
  o.top_k = 0;
  o.cache_dir = dir.string();
  return o;
}

TEST(Tune, ModelOnlyCompilesCachesAndHits) {
  const fs::path dir = temp_dir("hit");
  const CsrMatrix a = make_matrix();
  const CompileTarget t = offline_target("sm_90");
  KernelRequest req;
  req.n = 8;
  req.dtype = DType::F16;
  const TuneResult r1 = tune(a, req, t, model_only(dir));
  EXPECT_FALSE(r1.cache_hit);
  EXPECT_GT(r1.enumerated, 1);
  ASSERT_EQ(r1.candidates.size(), 1u);
  EXPECT_TRUE(r1.candidates[0].error.empty());
  EXPECT_FALSE(r1.measured_ms.has_value());
  EXPECT_EQ(r1.db_path, (dir / "kernels.db").string());

  const TuneResult r2 = tune(a, req, t, model_only(dir));
  EXPECT_TRUE(r2.cache_hit);
  EXPECT_EQ(r2.schedule, r1.schedule);
  EXPECT_EQ(r2.kernel_key, r1.kernel_key);
  EXPECT_EQ(r2.enumerated, r1.enumerated);
  std::printf("search %.1f ms, cache hit %.2f ms\n", r1.search_ms, r2.search_ms);
  EXPECT_LT(r2.search_ms, 1000.0);  // milliseconds in practice; generous for loaded CI machines

  kdb::KernelDb db(dir / "kernels.db");
  const auto rec = db.kernel(r1.kernel_key);
  ASSERT_TRUE(rec.has_value());
  EXPECT_TRUE(rec->image_is_cubin);  // sm_90 offline: NVRTC builds a cubin without a GPU
  EXPECT_EQ(rec->arch, "sm_90");
  EXPECT_FALSE(rec->image.empty());
  EXPECT_NE(rec->key_text.find("n: 8"), std::string::npos);

  // A hit with want_build re-emits and takes the cached image.
  TuneOptions o = model_only(dir);
  o.want_build = true;
  const TuneResult r3 = tune(a, req, t, o);
  EXPECT_TRUE(r3.cache_hit);
  ASSERT_TRUE(r3.build.has_value());
  EXPECT_EQ(r3.build->compiled.image, rec->image);
  EXPECT_EQ(r3.build->kernel.source, rec->source);

  // Same structure, other values: the same tuned kernel.
  CsrMatrix b = a;
  for (float& v : b.values) v = -v * 0.5f;
  EXPECT_TRUE(tune(b, req, t, model_only(dir)).cache_hit);

  // force searches again; another N, dtype, arch or structure is a miss.
  TuneOptions f = model_only(dir);
  f.force = true;
  EXPECT_FALSE(tune(a, req, t, f).cache_hit);
  KernelRequest req9 = req;
  req9.n = 9;
  EXPECT_FALSE(tune(a, req9, t, model_only(dir)).cache_hit);
  KernelRequest req32 = req;
  req32.dtype = DType::F32;
  EXPECT_FALSE(tune(a, req32, t, model_only(dir)).cache_hit);
  EXPECT_FALSE(tune(a, req, offline_target("compute_90"), model_only(dir)).cache_hit);
  EXPECT_FALSE(tune(make_matrix(2), req, t, model_only(dir)).cache_hit);
  EXPECT_EQ(db.integrity_check(), "ok");
  fs::remove_all(dir);
}

// The measured set keeps k / 4 places per schedule family; the rest follows the ranking.
// A measured search whose problem no library can run says so in its reason: library_why_not gives
// one reason per library family, each named, and nothing when one of them can run it.
TEST(Tune, LibraryWhyNotNamesEachLibraryFamily) {
  const CsrMatrix a = make_matrix();
  const Layout col = Layout::ColMajor;
  EXPECT_TRUE(library_why_not(Problem::spmm(64, 96, 8, DType::F16, col, col), a).empty());
  EXPECT_TRUE(library_why_not(Problem::spmm(64, 96, 8, DType::F32, col, col), a).empty());
  EXPECT_TRUE(
      library_why_not(Problem::quantized_spmm(64, 96, 8, DType::I8, DType::F16, col, col), a)
          .empty());
  EXPECT_TRUE(
      library_why_not(Problem::quantized_spmm(64, 96, 8, DType::F8E4M3, DType::F16, col, col), a)
          .empty());
  // 8-bit with C row-major: no library family runs it (each says why, under its name: the dense
  // GEMM, cuSPARSE, cuSPARSELt and the dense FFN); the dense 8-bit GEMMs write C column-major only.
  int libraries = 0;
  for (const IrFamily* f : ir_families()) libraries += f->library() ? 1 : 0;
  for (DType t : {DType::I8, DType::F8E4M3}) {
    const std::vector<std::string> row_c = library_why_not(
        Problem::quantized_spmm(64, 96, 8, t, DType::F16, col, Layout::RowMajor), a);
    ASSERT_EQ(row_c.size(), size_t(libraries)) << to_string(t);
    const auto dense = std::find_if(row_c.begin(), row_c.end(), [](const std::string& w) {
      return w.rfind("dense: ", 0) == 0;
    });
    ASSERT_NE(dense, row_c.end());
    EXPECT_NE(dense->find("column-major"), std::string::npos) << *dense;
  }
}

TEST(Tune, MeasurementSetKeepsEveryFamily) {
  std::vector<Schedule> all;
  for (int i = 0; i < 10; ++i) all.emplace_back(GeneralSchedule{});  // ranked 0..9
  for (int i = 0; i < 3; ++i) all.emplace_back(MackoSchedule{});     // ranked 10..12
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  EXPECT_EQ(select_for_measurement(order, all, 0), (std::vector<size_t>{0}));
  EXPECT_EQ(select_for_measurement(order, all, 3), (std::vector<size_t>{0, 1, 2}));
  // k = 8: two MACKO places (its best two), six general ones, in ranking order.
  EXPECT_EQ(select_for_measurement(order, all, 8), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 10, 11}));
  // A family already in the top k takes no extra place.
  std::vector<size_t> mixed = {10, 0, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12};
  EXPECT_EQ(select_for_measurement(mixed, all, 4), (std::vector<size_t>{10, 0, 11, 1}));
  EXPECT_EQ(select_for_measurement(order, all, 100).size(), all.size());
  // A spread adds evenly spaced places from the rest of the ranking, in ranking order.
  EXPECT_EQ(select_for_measurement(order, all, 4, 3), (std::vector<size_t>{0, 1, 2, 3, 6, 9, 10}));
  EXPECT_EQ(select_for_measurement(order, all, 8, 100).size(), all.size());
}

// A strategy the model has no formula of is topped up to k / 4 measured candidates (at least one;
// k >= 4), its best-ranked, beyond the k places; one already among them counts.
TEST(Tune, MeasurementSetTriesAStrategyTheModelHasNotSeen) {
  std::vector<Schedule> all;
  for (int i = 0; i < 10; ++i) all.emplace_back(GeneralSchedule{});  // ranked 0..9
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::string> unmodelled(all.size());
  unmodelled[7] = unmodelled[8] = "new";
  unmodelled[9] = "other";
  EXPECT_EQ(select_for_measurement(order, all, 4, 0, unmodelled),
            (std::vector<size_t>{0, 1, 2, 3, 7, 9}));
  EXPECT_EQ(select_for_measurement(order, all, 3, 0, unmodelled),  // k < 4: the top k only
            (std::vector<size_t>{0, 1, 2}));
  unmodelled[2] = "new";  // already measured: no extra place for it
  EXPECT_EQ(select_for_measurement(order, all, 4, 0, unmodelled),
            (std::vector<size_t>{0, 1, 2, 3, 9}));
  EXPECT_EQ(select_for_measurement(order, all, 4, 0, {}), (std::vector<size_t>{0, 1, 2, 3}));
  unmodelled[2].clear();
  unmodelled[6] = "new";  // k = 8: two places for "new" (6 is among the 8, 7 joins), one for 9
  EXPECT_EQ(select_for_measurement(order, all, 8, 0, unmodelled),
            (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 9}));
}

// Past its best-ranked candidate, an unmodelled strategy's places go to the candidates farthest in
// SPEC from those of it already chosen, not to the next in the model's order.
TEST(Tune, MeasurementSetSpreadsAnUnmodelledStrategyOverItsSpace) {
  std::vector<Schedule> all;
  for (const char* spec :
       {"bitmap_tc;warps=4;mt=1;kt=1;ksplit=2;stages=2",                                 // 0
        "bitmap_tc;warps=8;mt=1;kt=1;ksplit=2;stages=2",                                 // 1
        "bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk",             // 2: bulk
        "bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step",   // 3: 1
        "bitmap_tc;warps=4;ksplit=1;stages=6;mma=wgmma;vals=pair;pipe=bulk",             // 4: 1
        "bitmap_tc;warps=8;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step",   // 5: 4
        "bitmap_tc;warps=8;ksplit=4;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step"})  // 6: 4
    all.push_back(parse_schedule(spec));
  // Two places (k = 8) for the bulk strategy, ranked below eight modelled schedules: 2 first, then
  // 5 (four fields from 2; ties go to the better-ranked), not 3 (one field).
  std::vector<Schedule> many = all;
  std::vector<size_t> long_order = {0, 1};
  std::vector<std::string> strategies = {"", ""};
  for (int i = 0; i < 8; ++i) {  // eight modelled schedules ranked above the bulk ones
    many.push_back(parse_schedule("bitmap_tc;warps=4;mt=2;kt=1;ksplit=" + std::to_string(i + 1)));
    long_order.push_back(many.size() - 1);
    strategies.emplace_back();
  }
  for (size_t i = 2; i < all.size(); ++i) long_order.push_back(i);
  strategies.resize(many.size());
  for (size_t i = 2; i < all.size(); ++i) strategies[i] = "bulk";
  const std::vector<size_t> chosen = select_for_measurement(long_order, many, 8, 0, strategies);
  EXPECT_EQ(std::count(chosen.begin(), chosen.end(), size_t{2}), 1);
  EXPECT_EQ(std::count(chosen.begin(), chosen.end(), size_t{5}), 1);
  EXPECT_EQ(std::count(chosen.begin(), chosen.end(), size_t{3}), 0);
  EXPECT_EQ(chosen.size(), 10u);
}

// The refinement around a winner of an unmodelled strategy takes any candidate of that strategy
// (the model's order inside it is all it has), not only the SPEC neighbours: nearest SPEC first,
// and up to kUnmodelledRefineFactor times the budget.
TEST(Tune, RefinementSearchesAnUnmodelledWinnersWholeStrategy) {
  std::vector<Schedule> all;
  for (const char* spec :
       {"bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk",  // 0: winner
        "bitmap_tc;warps=8;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk",  // 1: 3 fields
        "bitmap_tc;warps=4;ksplit=1;stages=6;mma=wgmma;vals=pair;pipe=bulk",  // 2: 1 field
        "bitmap_tc;warps=8;mt=2;kt=4;ksplit=8;stages=3",                      // 3: 6 fields
        "bitmap_tc;warps=8;ksplit=2;stages=4;mma=wgmma;vals=pair;pipe=bulk",  // 4: 2 fields
        "bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step"})  // 5: 1
                                                                                         // field
    all.push_back(parse_schedule(spec));
  const std::vector<size_t> order = {3, 1, 4, 5, 2, 0};
  const std::vector<size_t> measured = {0};
  // A modelled winner: the model's order, the budget as given.
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 8), (std::vector<size_t>{4, 5, 2}));
  const std::vector<std::string> unmodelled = {"bulk", "bulk", "bulk", "", "bulk", "bulk"};
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 8, unmodelled),
            (std::vector<size_t>{5, 2, 4, 1}));
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 1, unmodelled),
            (std::vector<size_t>{5, 2}));
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 0, unmodelled),
            (std::vector<size_t>{}));
}

// The second round refines around the first round's winner and, when an unmodelled strategy's
// fastest is within kUnmodelledAnchorRatio of it, around that one too (its own budget, no
// repeats); a slower unmodelled strategy is not anchored.
TEST(Tune, SecondRoundAlsoAnchorsACloseUnmodelledStrategy) {
  std::vector<Schedule> all;
  for (const char* spec :
       {"bitmap_tc;warps=8;mt=1;kt=2;ksplit=4;stages=2",                                // 0: winner
        "bitmap_tc;warps=8;mt=1;kt=1;ksplit=4;stages=2",                                // 1: near 0
        "bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk",            // 2: bulk
        "bitmap_tc;warps=8;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step",  // 3
        "bitmap_tc;warps=4;ksplit=1;stages=6;mma=wgmma;vals=pair;pipe=bulk"})           // 4
    all.push_back(parse_schedule(spec));
  const std::vector<size_t> order = {0, 2, 1, 3, 4};
  const std::vector<std::string> unmodelled = {"", "", "bulk", "bulk", "bulk"};
  const std::vector<size_t> measured = {0, 2};
  // The bulk kernel screened 1.1x the winner: both are anchors.
  EXPECT_EQ(second_round(order, all, {{0, 1.0}, {2, 1.1}}, measured, 2, unmodelled),
            (std::vector<size_t>{1, 4, 3}));
  // 1.5x: only the winner.
  EXPECT_EQ(second_round(order, all, {{0, 1.0}, {2, 1.5}}, measured, 2, unmodelled),
            (std::vector<size_t>{1}));
  // A library winner (no neighbours) beyond the ratio: the round goes around the fastest
  // candidate with neighbours, here the mma.sync one.
  std::vector<Schedule> with_library = all;
  with_library.push_back(parse_schedule("dense;lib=cublaslt"));  // 5, never in the ranking
  std::vector<std::string> strategies = unmodelled;
  strategies.emplace_back();
  EXPECT_EQ(
      second_round(order, with_library, {{5, 1.0}, {0, 1.3}, {2, 1.6}}, {0, 2, 5}, 2, strategies),
      (std::vector<size_t>{1}));
  EXPECT_TRUE(second_round(order, all, {}, measured, 2, unmodelled).empty());
  EXPECT_TRUE(second_round(order, all, {{0, 1.0}, {2, 1.1}}, measured, 0, unmodelled).empty());
}

// An unmodelled strategy's runner-up within kUnmodelledAnchorRatio is refined around too (with a
// modelled budget): the winner's neighbours miss the runner-up's, four SPEC fields away.
TEST(Tune, SecondRoundAlsoRefinesAroundTheRunnerUpOfAnUnmodelledStrategy) {
  std::vector<Schedule> all;
  for (const char* spec :
       {"bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster=4",
        "bitmap_tc;warps=8;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk",
        "bitmap_tc;warps=4;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster=2",
        "bitmap_tc;warps=8;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step",
        "bitmap_tc;warps=4;ksplit=4;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster=4"})
    all.push_back(parse_schedule(spec));
  ASSERT_EQ(spec_distance(all[0], all[3]), 4);
  const std::vector<size_t> order = {0, 1, 2, 4, 3};
  const std::vector<std::string> unmodelled(5, "bulk");
  EXPECT_EQ(second_round(order, all, {{0, 1.0}, {1, 1.04}}, {0, 1}, 1, unmodelled),
            (std::vector<size_t>{2, 4, 3}));
  // Beyond the ratio: the winner only.
  EXPECT_EQ(second_round(order, all, {{0, 1.0}, {1, 1.3}}, {0, 1}, 1, unmodelled),
            (std::vector<size_t>{2, 4}));
}

// The spread applies in the fixed-cost regime only (few nonzeros, a short best prediction), for
// k >= 4.
TEST(Tune, FixedCostRegimeSpreadsTheFirstRound) {
  RankedSpace r;
  for (int i = 0; i < 3; ++i) r.all.emplace_back(GeneralSchedule{});
  r.order = {2, 0, 1};
  r.predicted_ms = {0.5, 0.9, kFixedCostRegimeMs / 4};
  EXPECT_EQ(fixed_cost_spread(r, 5000, 8), kFixedCostSpread * 8);
  EXPECT_EQ(fixed_cost_spread(r, 5000, 2), 0);                 // a small k is taken literally
  EXPECT_EQ(fixed_cost_spread(r, kFixedCostRegimeNnz, 8), 0);  // a weight the model knows
  r.predicted_ms[2] = kFixedCostRegimeMs * 2;
  EXPECT_EQ(fixed_cost_spread(r, 5000, 8), 0);
  r.predicted_ms[2] = std::nullopt;  // no prediction: no regime
  EXPECT_EQ(fixed_cost_spread(r, 5000, 8), 0);
}

// The second round: same family, at most kRefineFields SPEC fields away from the winner, not
// measured yet, in the model's order.
TEST(Tune, RefinementStaysNearTheMeasuredBest) {
  const std::string base = "macko;delta=4;wpr=1;warps=16;unroll=4;cols=1;vec=16;stage=shared_f32;";
  std::vector<Schedule> all = {
      parse_schedule(base + "rpw=14;sort=1"),  // 0: the first round's best
      parse_schedule(base + "rpw=8;sort=1"),   // 1: one field away, measured already
      parse_schedule("macko;delta=4;wpr=1;warps=16;unroll=2;cols=1;vec=16;stage=shared_f32;"
                     "rpw=7;sort=1"),  // 2: two fields away (unroll, rpw)
      parse_schedule("macko;delta=8;wpr=1;warps=8;unroll=2;cols=1;vec=16;stage=shared;"
                     "rpw=7;sort=0"),          // 3: six fields away
      parse_schedule(base + "rpw=14;sort=0"),  // 4: one field away
      parse_schedule(base + "rpw=2;sort=0"),   // 5: two fields away
      Schedule(GeneralSchedule{}),             // 6: another family
  };
  EXPECT_EQ(spec_distance(all[0], all[0]), 0);
  EXPECT_EQ(spec_distance(all[0], all[2]), 2);
  EXPECT_EQ(spec_distance(all[2], all[0]), 2);
  EXPECT_EQ(spec_distance(all[0], all[3]), 6);
  EXPECT_EQ(spec_distance(all[0], all[6]), -1);
  const std::vector<size_t> order = {6, 3, 5, 1, 0, 2, 4};  // the model's ranking
  const std::vector<size_t> measured = {0, 1, 6};
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 8), (std::vector<size_t>{5, 2, 4}));
  EXPECT_EQ(refine_for_measurement(order, all, 0, measured, 2), (std::vector<size_t>{5, 2}));
  EXPECT_TRUE(refine_for_measurement(order, all, 0, measured, 0).empty());
}

TEST(Tune, KeyFollowsStructure) {
  const CsrMatrix a = make_matrix();
  const CompileTarget t = offline_target("sm_90");
  KernelRequest req;
  req.n = 8;
  const Problem p = make_problem(a, req);
  const std::string k0 = kdb::tuning_key(key_parts(a, p, t, ""));
  CsrMatrix b = a;
  b.values[3] += 1.0f;  // values are not part of the key
  EXPECT_EQ(kdb::tuning_key(key_parts(b, p, t, "")), k0);
  // Move one nonzero of row 0 to a free column: same dims and nnz, other structure.
  CsrMatrix c = a;
  int32_t free_col = 0;
  while (std::find(c.col_idx.begin(), c.col_idx.begin() + c.row_ptr[1], free_col) !=
         c.col_idx.begin() + c.row_ptr[1])
    ++free_col;
  c.col_idx[0] = free_col;
  std::sort(c.col_idx.begin(), c.col_idx.begin() + c.row_ptr[1]);
  EXPECT_NE(kdb::tuning_key(key_parts(c, p, t, "")), k0);
  EXPECT_NE(kdb::kernel_key(key_parts(a, p, t, "s1")), kdb::kernel_key(key_parts(a, p, t, "s2")));
  CompileTarget gpu = t;
  gpu.has_gpu = true;
  gpu.device_name = "NVIDIA H200";
  EXPECT_NE(kdb::tuning_key(key_parts(a, p, gpu, "")), k0);
  const kdb::KeyParts parts = key_parts(a, p, t, "");
  EXPECT_EQ(parts.nvrtc_version, nvrtc::version_string());
  EXPECT_EQ(parts.generator_version, generator_version());
  // kGeneratorVersion, then the templates' digest: 16 hex digits.
  EXPECT_EQ(parts.generator_version.rfind(std::string(kGeneratorVersion) + "/templates-", 0), 0u);
  EXPECT_EQ(parts.generator_version.size(),
            std::string(kGeneratorVersion).size() + std::string("/templates-").size() + 16);
  EXPECT_NE(parts.matrix.find("nnz=" + std::to_string(a.nnz())), std::string::npos);
}

TEST(Tune, NvrtcFailureCachesNothing) {
  const fs::path dir = temp_dir("nvrtc");
  const CsrMatrix a = make_matrix();
  KernelRequest req;
  req.n = 4;
  TuneOptions o = model_only(dir);
  o.source_hook = [](std::string& src) { src += "\n#error injected by the test\n"; };
  try {
    (void)tune(a, req, offline_target("sm_90"), o);
    FAIL() << "expected an NVRTC error";
  } catch (const NvrtcError& e) {
    EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
  }
  kdb::KernelDb db(dir / "kernels.db");
  EXPECT_EQ(db.kernel_count(), 0);
  EXPECT_TRUE(db.tunings().empty());
  // The next tune (no hook) compiles and caches normally.
  EXPECT_FALSE(tune(a, req, offline_target("sm_90"), model_only(dir)).cache_hit);
  EXPECT_EQ(db.kernel_count(), 1);
  fs::remove_all(dir);
}

TEST(Tune, DamagedCacheIsAUserErrorNamingTheFile) {
  const fs::path dir = temp_dir("damaged");
  std::ofstream(dir / "kernels.db", std::ios::binary) << std::string(3000, '\x07');
  KernelRequest req;
  req.n = 4;
  try {
    (void)tune(make_matrix(), req, offline_target("sm_90"), model_only(dir));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "kernels.db").string()), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(Tune, MeasuringWithoutAGpuIsACudaError) {
  const fs::path dir = temp_dir("nogpu");
  TuneOptions o = model_only(dir);
  o.top_k = 2;
  KernelRequest req;
  req.n = 4;
  EXPECT_THROW((void)tune(make_matrix(), req, offline_target("sm_90"), o), CudaError);
  EXPECT_THROW(offline_target("sm90"), UserError);
  fs::remove_all(dir);
}

// Offline there is no device: the ranking names the shipped model's device and says that no GPU is
// present, and nothing warns that the model was "fitted on X, this device is Y".
TEST(Tune, OfflineRankingClaimsNoDevice) {
  const fs::path dir = temp_dir("offline_model");
  KernelRequest req;
  req.n = 8;
  req.dtype = DType::F16;
  for (const char* arch : {"sm_90", "compute_90", "sm_80"}) {
    TuneOptions o = model_only(dir);
    o.use_cache = false;
    const TuneResult r = tune(make_matrix(), req, offline_target(arch), o);
    EXPECT_NE(r.ranking.find("no GPU present"), std::string::npos) << arch << ": " << r.ranking;
    for (const std::string& w : r.warnings) {
      EXPECT_EQ(w.find("this device"), std::string::npos) << arch << ": " << w;
      EXPECT_EQ(w.find("H100"), std::string::npos) << arch << ": " << w;
    }
    EXPECT_EQ(r.ranking.find("H100"), std::string::npos) << arch << ": " << r.ranking;
  }
  fs::remove_all(dir);
}

TEST(Tune, OfflineRuntimeGoesThroughTheCache) {
  const fs::path dir = temp_dir("api");
  const Runtime rt = Runtime::offline("sm_90");
  SpmmOptions o;
  o.dtype = DType::BF16;
  o.cache_dir = dir.string();
  const Kernel k1 = rt.spmm(make_matrix(), 16, o);
  EXPECT_FALSE(k1.cache_hit());
  EXPECT_FALSE(k1.runnable());
  EXPECT_EQ(k1.arch(), "sm_90");
  EXPECT_EQ(k1.cache_key().size(), 64u);
  const Kernel k2 = rt.spmm(make_matrix(), 16, o);
  EXPECT_TRUE(k2.cache_hit());
  EXPECT_EQ(k2.schedule(), k1.schedule());
  EXPECT_EQ(k2.cuda_source(), k1.cuda_source());
  o.top_k = 3;
  EXPECT_THROW((void)rt.spmm(make_matrix(), 16, o), UserError);
  fs::remove_all(dir);
}

// On the GPU machine: measured searches with MACKO (N = 1) and bitmap_tc (N = 8) in them. The
// second round adds candidates near the first round's best, candidates that pack alike share one
// packed format (the build log says so), every candidate compiles, and the winner is the fastest
// measured one that passed.
TEST(Tune, BuildWindowBoundsTheBuildsOfAGraph) {
  // By default (twice the CSR's bytes, at least 256 MiB): a weight of 1M nonzeros builds on every
  // thread, one of 4M five at a time (48 MB a build), a graph of 16M (192 MB a build against a
  // 136 MB CSR) or R-MAT scale 22 (65M nonzeros, 783 MB a build against 556 MB) one at a time.
  EXPECT_EQ(build_window(1'000'000, 4096, DType::F16, 16), 16u);
  EXPECT_EQ(build_window(4'000'000, 4096, DType::F32, 16), 5u);
  EXPECT_EQ(build_window(16'000'000, 1'048'576, DType::F32, 16), 1u);
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 16), 1u);
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 2), 1u);
  EXPECT_EQ(build_window(0, 0, DType::F32, 4), 4u);
  // Where freed memory is not reused (glibc's defaults in a library host), the CSR's bytes, at
  // least 4 GiB: the graph five at a time, the 16M one on every thread.
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 16, 0, false), 5u);
  EXPECT_EQ(build_window(16'000'000, 1'048'576, DType::F32, 16, 0, false), 16u);
  EXPECT_EQ(build_window(1'000'000, 4096, DType::F16, 16, 0, false), 16u);
  EXPECT_GE(build_window(1000, 10, DType::F32, 0), 1u);  // 0: hardware concurrency
  // A budget given (--build-memory): 1 GB holds one build of the graph, 0.1 GB still one.
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 16, 1'000'000'000), 1u);
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 16, 100'000'000), 1u);
  EXPECT_EQ(build_window(16'000'000, 1'048'576, DType::F32, 16, 1'000'000'000), 5u);
  EXPECT_EQ(build_window(65'242'128, 4'194'304, DType::F32, 16, 1'000'000'000, false), 1u);
}

TEST(GpuTune, MeasuredSearchRefinesAndSharesPacks) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const fs::path dir = temp_dir("gpu_refine");
  const CsrMatrix a = make_matrix(5, 2048, 1024);
  for (int64_t n : {1, 8}) {
    SCOPED_TRACE(n);
    TuneOptions o;
    o.cache_dir = dir.string();
    o.top_k = 8;
    o.repetitions = 5;
    o.want_build = true;
    KernelRequest req;
    req.n = n;
    req.dtype = DType::F16;
    const TuneResult r = tune(a, req, detect_target(0), o);
    ASSERT_TRUE(r.check_passed.has_value());
    EXPECT_TRUE(*r.check_passed);
    EXPECT_EQ(r.top_k, 8);
    EXPECT_GE(r.refined, 1);
    EXPECT_LE(r.refined, 4);
    int second = 0, specialised = 0;
    for (const CandidateReport& c : r.candidates) {
      EXPECT_TRUE(c.error.empty()) << c.schedule << ": " << c.error;
      second += c.round == 2;
      specialised += c.schedule.rfind("macko;", 0) == 0 || c.schedule.rfind("bitmap_tc;", 0) == 0;
      if (c.measured_ms) {
        EXPECT_LE(*r.measured_ms, *c.measured_ms) << c.schedule;
      }
    }
    EXPECT_EQ(second, r.refined);
    EXPECT_GE(specialised, 2);
    ASSERT_TRUE(r.build.has_value());
    if (r.schedule.rfind("general;", 0) != 0) {
      bool shared = false;
      for (const std::string& line : r.build->step_log)
        shared |= line.find("shared:") != std::string::npos;
      EXPECT_TRUE(shared) << r.schedule << " was packed on its own";
    }
  }
  fs::remove_all(dir);
}

TEST(Fingerprint, DistinguishesStructureAndIsStable) {
  const CsrMatrix a = make_matrix();
  EXPECT_EQ(fingerprint(a), fingerprint(a));
  CsrMatrix b = a;
  b.cols += 1;
  EXPECT_NE(fingerprint(b), fingerprint(a));
  // Hash of every length 0..64 differs from its neighbours (tail handling).
  std::vector<unsigned char> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t n = 1; n <= bytes.size(); ++n)
    EXPECT_NE(hash64(bytes.data(), n), hash64(bytes.data(), n - 1)) << n;
  EXPECT_EQ(to_string(fingerprint(a), DType::F16).rfind("csr 64x96 nnz=", 0), 0u);
}

// Speed on 100M nonzeros (1.2 GB of indices): not run by default. Run with
// --gtest_also_run_disabled_tests --gtest_filter='*FingerprintSpeed*'.
TEST(Fingerprint, DISABLED_FingerprintSpeed100M) {
  CsrMatrix a;
  a.rows = 1000000;
  a.cols = 1000000;
  a.col_idx.resize(100000000);
  for (size_t i = 0; i < a.col_idx.size(); ++i)
    a.col_idx[i] = static_cast<int32_t>((i * 2654435761u) % 1000000);
  a.row_ptr.resize(static_cast<size_t>(a.rows) + 1);
  for (int64_t r = 0; r <= a.rows; ++r) a.row_ptr[static_cast<size_t>(r)] = r * 100;
  const auto t0 = std::chrono::steady_clock::now();
  const MatrixFingerprint f = fingerprint(a);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fingerprint of %lld nnz: %.3f s (%s)\n", static_cast<long long>(a.nnz()), s,
              to_string(f, DType::F16).c_str());
  EXPECT_LT(s, 1.0);
}

// The offline spellings: sm_XY / compute_XY with 2 or 3 digits and an optional "a"; anything
// else is a UserError naming the flag (the CLI's --arch, the API's Runtime::offline).
TEST(Tune, OfflineTargetParsesArchSpellings) {
  EXPECT_EQ(offline_target("sm_80").limits.name, "sm_80");
  EXPECT_EQ(offline_target("compute_90").limits.name, "sm_90");
  EXPECT_EQ(offline_target("sm_90a").limits.name, "sm_90");
  EXPECT_EQ(offline_target("compute_100").limits.name, "sm_100");
  for (const char* bad : {"sm_9", "sm_9000", "sm90", "compute_9x", "sm_90b", "gfx90", ""}) {
    try {
      (void)offline_target(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--arch"), std::string::npos) << e.what();
    }
  }
  try {
    (void)Runtime::offline("sm_9");
    ADD_FAILURE() << "Runtime::offline accepted sm_9";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Runtime::offline"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsegen
