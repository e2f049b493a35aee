// Cost model: schedule features on hand-made candidates, ridge regression, save/load, device
// mismatch, quality metrics, ranking.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "costmodel/features.h"
#include "costmodel/linear_model.h"
#include "costmodel/model_quality.h"
#include "costmodel/model_registry.h"
#include "costmodel/schedule_features.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/general_schedule.h"
#include "ir/int_math.h"
#include "ir/parallel.h"

namespace sparsegen {
namespace {

CsrMatrix lengths_matrix(const std::vector<int64_t>& lengths, int64_t cols) {
  CsrMatrix a;
  a.rows = static_cast<int64_t>(lengths.size());
  a.cols = cols;
  for (int64_t len : lengths) {
    for (int64_t j = 0; j < len; ++j) {
      a.col_idx.push_back(static_cast<int32_t>(j * 2));
      a.values.push_back(1.0f);
    }
    a.row_ptr.push_back(a.nnz());
  }
  a.check_canonical();
  return a;
}

ScheduleFeatures features_of(const CsrMatrix& a, const Problem& p, const Schedule& s) {
  return schedule_features(p, s, compute_format_stats(a, p, s), compute_features(a), row_profile(a),
                           DeviceProfile::h100_sxm());
}

// Rows 8, 0, 3, 16 over 64 columns; N = 32 fp32. Warp per row (4 warps, 4 groups of 8 lanes,
// thread chunks of 4, rows padded to 4): packed 8, 0, 4, 16. A row of L takes
// ceil(ceil(L/4)/4)*4 iterations: 4, 0, 4, 4; one block, warp w gets row w.
ScheduleFeatures warp_per_row_features() {
  const CsrMatrix a = lengths_matrix({8, 0, 3, 16}, 64);
  const Problem p = Problem::spmm(4, 64, 32, DType::F32);
  const Schedule s = parse_schedule(
      "general;block=rows:4;warp=row;thread=nnz:4;warps=4;group=8;tcols=1;bcols=32;"
      "red=total,total,none;sort=0;pad=4;interleave=0;vec=4");
  return features_of(a, p, s);
}

TEST(ScheduleFeatures, WarpPerRowHandComputed) {
  const ScheduleFeatures f = warp_per_row_features();
  EXPECT_EQ(f.family, "rows/row/nnz red=total>total>none");
  EXPECT_EQ(f.nnz, 27);
  // 32 columns = 4 passes of warp_cols 8, one column tile.
  EXPECT_DOUBLE_EQ(f.warp_iters_total, 12.0 * 4);
  EXPECT_DOUBLE_EQ(f.warp_iters_max, 4.0 * 4);
  EXPECT_DOUBLE_EQ(f.warp_workers, 4);
  EXPECT_DOUBLE_EQ(f.lane_efficiency, 27.0 / (12 * 4));
  EXPECT_DOUBLE_EQ(f.a_bytes, 28.0 * 8);
  EXPECT_DOUBLE_EQ(f.c_bytes, 4.0 * 32 * 4);
  EXPECT_DOUBLE_EQ(f.b_unique_bytes, 64.0 * 32 * 4);
  EXPECT_DOUBLE_EQ(f.atomics, 0);
  EXPECT_DOUBLE_EQ(f.column_efficiency, 1.0);
  // Warp total over 4 groups: log2(4) = 2 shuffles per column per warp task (4 rows, 4 passes).
  EXPECT_DOUBLE_EQ(f.shuffles, 4.0 * 2 * 1 * 4);
  EXPECT_EQ(f.threads_per_block, 128);
  EXPECT_GT(f.roofline_us, 3.0);
  ASSERT_EQ(f.values.size(), ScheduleFeatures::names().size());
  for (double v : f.values) EXPECT_TRUE(std::isfinite(v));
}

// Rows past the simulation's table of short lengths (1024) and a block per row: a row's warp
// chunks are dealt to the block's warps, so the block's work is all of them and its first warp
// does ceil(chunks / W). Features computed through a shared RowProfile memo are the same.
TEST(ScheduleFeatures, BlockPerRowWithLongRows) {
  const CsrMatrix a = lengths_matrix({2000, 5, 0, 1500, 1024, 1023}, 4096);
  const Problem p = Problem::spmm(6, 4096, 8, DType::F32);
  const RowProfile rows = row_profile(a);
  int checked = 0;
  for (const Schedule& s : enumerate_schedules(p, a, EnumerateOptions{})) {
    const GeneralSchedule& g = s.as<GeneralSchedule>();
    if (g.at(Level::Block).kind != WorkSplit::Row) continue;
    const int64_t zt = std::max<int64_t>(1, g.at(Level::Thread).amount);
    const int64_t zw = std::max<int64_t>(1, g.at(Level::Warp).amount);
    const int64_t W = g.warps_per_block;
    double total = 0, max = 0;
    for (int64_t L : rows.lengths) {
      const int64_t chunks = (round_up(L, g.pad) + zw - 1) / zw;
      total += double(chunks * std::min(zt, zw));
      max = std::max(max, double((chunks + W - 1) / W * std::min(zt, zw)));
    }
    const FormatStats fs = compute_format_stats(a, p, s);
    const MatrixFeatures mf = compute_features(a);
    const ScheduleFeatures f1 = schedule_features(p, s, fs, mf, rows, DeviceProfile::h100_sxm());
    const ScheduleFeatures f2 = schedule_features(p, s, fs, mf, rows, DeviceProfile::h100_sxm());
    const double passes = double(std::max(1, g.block_cols / std::max(1, g.warp_cols())));
    const double tiles = double(std::max<int64_t>(fs.col_tiles, 1));
    EXPECT_DOUBLE_EQ(f1.warp_iters_total, total * passes * tiles) << to_string(s);
    EXPECT_DOUBLE_EQ(f1.warp_iters_max, max * passes) << to_string(s);
    EXPECT_EQ(f1.values, f2.values) << to_string(s);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The fitted model does not extrapolate imbalance: no prediction is below the critical path of
// the slowest warp worker (a thread walking one 40000-long row here).
TEST(ScheduleFeatures, PredictionNeverBelowTheCriticalPath) {
  std::vector<int64_t> lengths(512, 3);
  lengths[7] = 40000;
  const CsrMatrix a = lengths_matrix(lengths, 80000);
  const Problem p = Problem::spmm(a.rows, a.cols, 8, DType::F32);
  const CostModel m = offline_model(DeviceProfile::h100_sxm()).model;  // a fitted one
  ASSERT_TRUE(m.fitted());
  int checked = 0;
  for (const Schedule& s : enumerate_schedules(p, a, EnumerateOptions{})) {
    const ScheduleFeatures f = features_of(a, p, s);
    EXPECT_GT(f.critical_floor_us, 0) << to_string(s);
    EXPECT_GE(m.predict_us(f), f.critical_floor_us) << to_string(s);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(RowMemo, ComputesEachKeyOnce) {
  RowMemo memo;
  int calls = 0;
  EXPECT_EQ(memo.get<int64_t>("a", [&] { return ++calls * int64_t{10}; }), 10);
  EXPECT_EQ(memo.get<int64_t>("a", [&] { return ++calls * int64_t{10}; }), 10);
  EXPECT_EQ(memo.get<int64_t>("b", [&] { return ++calls * int64_t{10}; }), 20);
  EXPECT_EQ(calls, 2);
  const RowProfile rp = row_profile(std::vector<int64_t>{3, 1, 2});
  const RowProfile copy = rp;  // copies share the memo
  EXPECT_EQ(copy.memo, rp.memo);
  EXPECT_EQ(rp.sorted, (std::vector<int64_t>{3, 2, 1}));
}

TEST(RowMemo, ThreadsMeetingAKeyTogetherComputeItOnce) {
  RowMemo memo;
  std::atomic<int> calls{0};
  std::atomic<int64_t> sum{0};
  for_each_task(64, 8, [&](size_t i) {
    const std::string key = i % 2 == 0 ? "even" : "odd";
    sum += memo.get<int64_t>(key, [&] {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
      return int64_t{key == "even" ? 1 : 2};
    });
  });
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(sum.load(), 32 * 1 + 32 * 2);
  // A computation that throws leaves the key unset: the next caller computes it.
  EXPECT_THROW(memo.get<int64_t>("bad", []() -> int64_t { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(memo.get<int64_t>("bad", [] { return int64_t{5}; }), 5);
}

TEST(ScheduleFeatures, NonzeroSplitCountsAtomicsAndIsBalanced) {
  const CsrMatrix a = lengths_matrix({1, 0, 300, 2, 2, 2, 2, 2}, 1024);
  const Problem p = Problem::spmm(8, 1024, 8, DType::F16);
  EnumerateOptions eo;
  int checked = 0;
  for (const Schedule& s : enumerate_schedules(p, a, eo)) {
    const ScheduleFeatures f = features_of(a, p, s);
    const FormatStats fs = compute_format_stats(a, p, s);
    if (s.as<GeneralSchedule>().output() == OutputMode::Atomic) {
      // 7 non-empty rows + one head/tail piece per block, 8 columns each.
      EXPECT_DOUBLE_EQ(f.atomics, (7.0 + double(fs.block_tasks)) * 8);
      // Equal nonzeros per worker: no imbalance.
      EXPECT_DOUBLE_EQ(f.warp_iters_max, f.warp_iters_mean) << to_string(s);
      ++checked;
    } else {
      EXPECT_DOUBLE_EQ(f.atomics, 0);
    }
    if (s.as<GeneralSchedule>().at(Level::Block).kind == WorkSplit::Row) {
      // The 300-long row dominates: a block per row is badly imbalanced.
      EXPECT_GT(f.warp_iters_max, 2 * f.warp_iters_mean) << to_string(s);
    }
    EXPECT_GT(f.lane_efficiency, 0);
    EXPECT_LE(f.lane_efficiency, 1);
  }
  EXPECT_GT(checked, 0);
}

TEST(ScheduleFeatures, FamilyNamesAndDeviceProfile) {
  EXPECT_EQ(strategy_family(Schedule(GeneralSchedule{})), "row/nnz/nnz red=total>total>total");
  bool guessed = true;
  const DeviceProfile h200 =
      device_profile("NVIDIA H200", 9, 0, 132, 60 << 20, 1980000, 2048, 65536, &guessed);
  EXPECT_FALSE(guessed);
  EXPECT_DOUBLE_EQ(h200.dram_gbs, 4800);
  EXPECT_EQ(h200.arch(), "sm_90");
  const DeviceProfile odd = device_profile("Mystery GPU", 8, 9, 66, 0, 0, 0, 0, &guessed);
  EXPECT_TRUE(guessed);
  EXPECT_NEAR(odd.dram_gbs, 3350.0 / 2, 1e-9);
  EXPECT_EQ(model_file_name(h200), "NVIDIA_H200_sm_90.json");
}

// Deterministic pseudo-random numbers in [-1, 1).
struct Rng {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) / double(uint64_t{1} << 53) * 2.0 - 1.0;
  }
};

TEST(LinearModel, RidgeRecoversKnownCoefficients) {
  const size_t nf = 6;
  const std::vector<double> truth = {2.0, -1.0, 0.5, 0.0, 3.0, -0.25};
  Rng r{1};
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 200; ++i) {
    std::vector<double> row(nf);
    double v = 1.5;
    for (size_t j = 0; j < nf; ++j) {
      row[j] = r.next() * double(j + 1);  // different scales
      v += truth[j] * row[j];
    }
    x.push_back(row);
    y.push_back(v + 1e-6 * r.next());
  }
  FitOptions opt;
  opt.lambdas = {1e-9};
  const FamilyModel m = fit_ridge(x, y, opt);
  // Back to the original scale: slope_j = coef_j / scale_j.
  for (size_t j = 0; j < nf; ++j) EXPECT_NEAR(m.coef[j] / m.scale[j], truth[j], 1e-4) << j;
  EXPECT_NEAR(evaluate_formula(m, std::vector<double>(nf, 0.0)), 1.5, 1e-4);
  EXPECT_LT(m.rmse_log, 1e-5);
  // The lambda search prefers little shrinkage on clean data.
  const FamilyModel auto_l = fit_ridge(x, y);
  EXPECT_LE(auto_l.lambda, 1e-3);
}

TEST(LinearModel, ConstantColumnsGetZeroCoefficient) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 20; ++i) {
    x.push_back({double(i), 7.0});
    y.push_back(2.0 * i + 1);
  }
  FitOptions opt;
  opt.lambdas = {1e-9};
  const FamilyModel m = fit_ridge(x, y, opt);
  EXPECT_DOUBLE_EQ(m.coef[1], 0.0);
  EXPECT_NEAR(evaluate_formula(m, {30.0, 7.0}), 61.0, 1e-5);
}

// Samples whose log time is a known linear function of the features, in two families.
std::vector<Sample> synthetic_samples(int per_family, uint64_t seed) {
  const size_t nf = ScheduleFeatures::names().size();
  Rng r{seed};
  std::vector<Sample> out;
  for (int fam = 0; fam < 2; ++fam)
    for (int i = 0; i < per_family; ++i) {
      Sample s;
      s.family =
          fam == 0 ? "rows/row/nnz red=total>total>none" : "nnz/nnz/nnz red=bitmap>segment>segment";
      // Appended, not "m" + std::to_string(...): GCC 12's -Wrestrict misfires on the latter.
      s.matrix = std::string("m").append(std::to_string(i % 10));
      s.case_id = s.matrix + " n=8";
      s.schedule = std::string("s").append(std::to_string(i));
      s.x.resize(nf);
      for (double& v : s.x) v = r.next();
      s.roofline_us = std::exp(s.x[0] + 2);
      s.time_us = std::exp(2.0 + (fam == 0 ? 1.0 : 0.5) * s.x[0] + 0.3 * s.x[5] + 0.01 * r.next());
      out.push_back(s);
    }
  return out;
}

TEST(LinearModel, FitPredictSaveLoadRoundTrip) {
  const std::vector<Sample> train = synthetic_samples(80, 3);
  const DeviceProfile dev = device_profile("NVIDIA H200", 9, 0, 132, 60 << 20, 0, 0, 0);
  const CostModel m = fit_model(train, dev);
  EXPECT_EQ(m.families.size(), 2u);
  ASSERT_TRUE(m.global.has_value());
  std::string src;
  const Sample& t = train[3];
  EXPECT_NEAR(std::log(m.predict_us(t.family, t.x, t.roofline_us, &src)), std::log(t.time_us),
              0.05);
  EXPECT_EQ(src, "family");
  m.predict_us("unknown/family", t.x, t.roofline_us, &src);
  EXPECT_EQ(src, "global");

  const auto path = std::filesystem::temp_directory_path() / "sparsegen_costmodel_test.json";
  save_model(m, path.string());
  const CostModel back = load_model(path.string());
  EXPECT_EQ(to_json(back).dump(), to_json(m).dump());
  for (const Sample& s : train)
    EXPECT_DOUBLE_EQ(back.predict_us(s.family, s.x, s.roofline_us),
                     m.predict_us(s.family, s.x, s.roofline_us));
  EXPECT_TRUE(device_mismatch(back, dev).empty());
  std::filesystem::remove(path);
}

TEST(LinearModel, SmallProblemsHaveTheirOwnFormulaAndFallBackToTheFamilys) {
  // A 4-row matrix is in the small regime: its formula key carries the suffix.
  ScheduleFeatures f = warp_per_row_features();
  EXPECT_EQ(f.model_key, "rows/row/nnz red=total>total>none@small");
  EXPECT_EQ(model_key("x", kSmallRegimeNnz), "x");
  EXPECT_EQ(model_key("x", kSmallRegimeNnz - 1), "x@small");

  // Two formulas of one family, 10x apart: each regime is predicted by its own.
  const size_t nf = ScheduleFeatures::names().size();
  Rng r{7};
  std::vector<Sample> train;
  for (int i = 0; i < 80; ++i) {
    Sample t;
    t.family = f.family;
    t.matrix = std::string(1, static_cast<char>('a' + i % 10));
    t.case_id = t.matrix;
    t.x.resize(nf);
    for (double& v : t.x) v = r.next();
    t.roofline_us = 1;
    t.time_us = std::exp(1.0 + t.x[0] + 0.01 * r.next());
    train.push_back(t);
    t.family = f.model_key;
    t.time_us *= 10;
    train.push_back(t);
  }
  const DeviceProfile dev = DeviceProfile::h100_sxm();
  const CostModel m = fit_model(train, dev);
  ASSERT_EQ(m.families.size(), 2u);
  f.values = train[0].x;
  f.roofline_us = train[0].roofline_us;
  f.critical_floor_us = 0;
  const double small_us = m.predict_us(f);
  const std::string small_key = f.model_key;
  f.model_key = f.family;
  const double bulk_us = m.predict_us(f);
  f.model_key = small_key;
  EXPECT_NEAR(small_us / bulk_us, 10.0, 1.0);

  // A model without the small formula predicts the small regime with the family's.
  CostModel old = m;
  old.families.erase(f.model_key);
  std::string src;
  EXPECT_DOUBLE_EQ(old.predict_us(f, &src), bulk_us);
  EXPECT_EQ(src, "family");
}

TEST(LinearModel, TooFewSamplesFallBackToRoofline) {
  const CostModel m = fit_model(synthetic_samples(5, 4), DeviceProfile::h100_sxm());
  EXPECT_FALSE(m.fitted());
  std::string src;
  EXPECT_DOUBLE_EQ(
      m.predict_us("x", std::vector<double>(ScheduleFeatures::names().size()), 12.5, &src), 12.5);
  EXPECT_EQ(src, "roofline");
}

TEST(LinearModel, BadFilesAreUserErrors) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto bad = dir / "sparsegen_costmodel_bad.json";
  std::ofstream(bad) << "{\"format\": \"something else\"}";
  EXPECT_THROW(load_model(bad.string()), UserError);
  std::ofstream(bad) << "{ not json";
  try {
    load_model(bad.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos);
  }
  nlohmann::json j = to_json(fit_model(synthetic_samples(40, 5), DeviceProfile::h100_sxm()));
  j["feature_names"][0] = "renamed";
  EXPECT_THROW(model_from_json(j, "x.json"), UserError);
  EXPECT_THROW(load_model((dir / "does_not_exist_sparsegen.json").string()), UserError);
  std::filesystem::remove(bad);
}

TEST(LinearModel, DeviceMismatchWarns) {
  const DeviceProfile h100 = DeviceProfile::h100_sxm();
  const DeviceProfile h200 = device_profile("NVIDIA H200", 9, 0, 132, 0, 0, 0, 0);
  const DeviceProfile a100 = device_profile("NVIDIA A100-SXM4-80GB", 8, 0, 108, 0, 0, 0, 0);
  CostModel m = fit_model(synthetic_samples(40, 6), h100);
  EXPECT_TRUE(device_mismatch(m, h100).empty());
  EXPECT_NE(device_mismatch(m, h200).find("H200"), std::string::npos);
  const auto path = std::filesystem::temp_directory_path() / "sparsegen_costmodel_h100.json";
  save_model(m, path.string());
  setenv("SPARSEGEN_MODEL", path.string().c_str(), 1);
  const ModelChoice same = default_model(h100);
  EXPECT_TRUE(same.warning.empty()) << same.warning;
  EXPECT_TRUE(same.model.fitted());
  const ModelChoice other = default_model(a100);  // named explicitly: used, with a warning
  EXPECT_TRUE(other.model.fitted());
  EXPECT_NE(other.warning.find("fitted on"), std::string::npos) << other.warning;
  // A folder without a model for the device: the roofline fallback.
  setenv("SPARSEGEN_MODEL", std::filesystem::temp_directory_path().c_str(), 1);
  unsetenv("SPARSEGEN_MODEL");
  std::filesystem::remove(path);
  const DeviceProfile unknown = device_profile("Imaginary GPU", 1, 0, 4, 0, 0, 0, 0);
  const ModelChoice none = default_model(unknown);
  EXPECT_FALSE(none.model.fitted());
  EXPECT_NE(none.note.find("roofline"), std::string::npos);
}

// Without a GPU a model of the same architecture is used as is: the note names the device it was
// fitted on and says no GPU is present; no device-mismatch warning. A model named by
// $SPARSEGEN_MODEL for another architecture still warns.
TEST(LinearModel, OfflineModelClaimsNoDevice) {
  const DeviceProfile h200 = device_profile("NVIDIA H200", 9, 0, 132, 0, 0, 0, 0);
  const CostModel m = fit_model(synthetic_samples(40, 7), h200);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sparsegen_offline_models_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  save_model(m, (dir / model_file_name(h200)).string());
  setenv("SPARSEGEN_MODEL", dir.string().c_str(), 1);
  DeviceProfile sm90 = DeviceProfile::h100_sxm();  // what an offline sm_90 compile looks like
  const ModelChoice off = offline_model(sm90);
  EXPECT_TRUE(off.model.fitted());
  EXPECT_TRUE(off.warning.empty()) << off.warning;
  EXPECT_NE(off.note.find("no GPU present"), std::string::npos) << off.note;
  EXPECT_NE(off.note.find("NVIDIA H200 (sm_90)"), std::string::npos) << off.note;
  EXPECT_EQ(off.note.find("H100"), std::string::npos) << off.note;
  // The same lookup for a real H100 warns about the device, as before.
  EXPECT_NE(default_model(sm90).warning.find("this device is"), std::string::npos);
  // A named file for another architecture: used, with a warning naming both architectures.
  const std::string file = (dir / model_file_name(h200)).string();
  setenv("SPARSEGEN_MODEL", file.c_str(), 1);
  DeviceProfile sm80 = sm90;
  sm80.cc_major = 8;
  const ModelChoice named = offline_model(sm80);
  EXPECT_NE(named.warning.find("sm_90"), std::string::npos) << named.warning;
  EXPECT_NE(named.warning.find("offline target is sm_80"), std::string::npos) << named.warning;
  unsetenv("SPARSEGEN_MODEL");
  std::filesystem::remove_all(dir);
}

TEST(ModelQuality, SpearmanKnownValues) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 45}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0.0);
  // Ties get average ranks: ranks (1.5, 1.5, 3) vs (1, 2, 3): rho = 1.5 / sqrt(1.5 * 2).
  EXPECT_NEAR(spearman({5, 5, 9}, {1, 2, 3}), 1.5 / std::sqrt(3.0), 1e-12);
  EXPECT_DOUBLE_EQ(spearman({1}, {2}), 0.0);
}

TEST(ModelQuality, PickWithinTenPercent) {
  // A roofline-only model predicts roofline_us, so the picks are known.
  const CostModel m = roofline_model(DeviceProfile::h100_sxm());
  const size_t nf = ScheduleFeatures::names().size();
  auto sample = [&](const std::string& c, double pred, double meas) {
    Sample s;
    s.matrix = c.substr(0, 1);
    s.case_id = c;
    s.schedule = c + std::to_string(pred);
    s.family = "f";
    s.x.assign(nf, 0.0);
    s.roofline_us = pred;
    s.time_us = meas;
    return s;
  };
  const std::vector<Sample> held = {
      sample("A", 1, 10),   sample("A", 2, 20), sample("A", 3, 30),    // perfect
      sample("B", 1, 12),   sample("B", 2, 10), sample("B", 3, 30),    // pick 1.2x the best
      sample("C", 1, 10.5), sample("C", 2, 10), sample("C", 3, 9.9)};  // pick 1.06x
  const QualityReport q = evaluate(m, held);
  ASSERT_EQ(q.cases.size(), 3u);
  EXPECT_EQ(q.ranked_cases, 3);
  EXPECT_DOUBLE_EQ(q.cases[0].pick_ratio, 1.0);
  EXPECT_DOUBLE_EQ(q.cases[0].spearman, 1.0);
  EXPECT_DOUBLE_EQ(q.cases[1].pick_ratio, 1.2);
  EXPECT_NEAR(q.cases[2].pick_ratio, 10.5 / 9.9, 1e-12);
  EXPECT_DOUBLE_EQ(q.cases[2].spearman, -1.0);
  EXPECT_NEAR(q.within_10pct, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(q.mean_spearman, (1.0 + 0.5 - 1.0) / 3.0, 1e-12);
  EXPECT_FALSE(format_report(q).empty());
}

TEST(Ranking, OrdersByPrediction) {
  const CsrMatrix a = lengths_matrix({1, 0, 40, 3, 3, 7, 2, 90, 5, 5, 5, 5}, 256);
  const Problem p = Problem::spmm(12, 256, 8, DType::F16);
  const auto cands = enumerate_schedules(p, a);
  ASSERT_GT(cands.size(), 5u);
  const MatrixFeatures mf = compute_features(a);
  for (const CostModel& m : {roofline_model(DeviceProfile::h100_sxm()),
                             fit_model(synthetic_samples(60, 9), DeviceProfile::h100_sxm())}) {
    const std::vector<Ranked> r = rank_schedules(p, cands, a, mf, m);
    ASSERT_EQ(r.size(), cands.size());
    std::set<size_t> seen;
    for (size_t i = 0; i < r.size(); ++i) {
      seen.insert(r[i].index);
      if (i > 0) {
        EXPECT_LE(r[i - 1].predicted_us, r[i].predicted_us);
      }
      const ScheduleFeatures f = features_of(a, p, cands[r[i].index]);
      EXPECT_DOUBLE_EQ(r[i].predicted_us, m.predict_us(f));
      EXPECT_EQ(r[i].family, f.family);
    }
    EXPECT_EQ(seen.size(), cands.size());
  }
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

// MACKO candidates (another family) are featurized and ranked next to the general ones.
TEST(Ranking, MackoCandidatesAreRanked) {
  std::vector<int64_t> lengths;
  for (int r = 0; r < 64; ++r) lengths.push_back(100 + (r * 37) % 200);
  const CsrMatrix a = lengths_matrix(lengths, 1024);
  const Problem p = Problem::spmm(64, 1024, 8, DType::F16);
  EnumerateOptions eo;
  eo.include_specialised = true;
  const auto cands = enumerate_schedules(p, a, eo);
  size_t macko = 0;
  for (const Schedule& s : cands) macko += s.family_name() == "macko";
  ASSERT_GT(macko, 0u);
  const std::vector<Ranked> r =
      rank_schedules(p, cands, a, compute_features(a), roofline_model(DeviceProfile::h100_sxm()));
  ASSERT_EQ(r.size(), cands.size());
  size_t seen = 0;
  for (const Ranked& x : r) {
    EXPECT_TRUE(std::isfinite(x.predicted_us) && x.predicted_us > 0) << x.family;
    if (x.family == "macko" || x.family == "macko/shared") {
      ++seen;
      const ScheduleFeatures f =
          schedule_features(p, cands[x.index], candidate_format_stats(a, p, cands[x.index]),
                            compute_features(a), row_profile(a), DeviceProfile::h100_sxm());
      ASSERT_EQ(f.values.size(), ScheduleFeatures::names().size());
      EXPECT_GT(f.a_bytes, 0);
      EXPECT_GT(f.warp_iters_total, 0);
    }
  }
  EXPECT_EQ(seen, macko);
}

// Every model shipped in costmodel/models/ (embedded at build time) loads with this build.
TEST(ModelRegistry, EmbeddedModelsLoad) {
  for (const auto& [name, text] : embedded_models()) {
    SCOPED_TRACE(name);
    const CostModel m = model_from_json(nlohmann::json::parse(text), "embedded:" + name);
    EXPECT_TRUE(m.fitted());
    EXPECT_EQ(name, model_file_name(m.device));
  }
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

// The gated FFN: kernel 1 (the gate GEMM) runs before kernel 2 and is added to the roofline as
// serial multiplies, three times as many for the generated GEMM as for the library's; the queue's
// critical path is one part of the longest token; and a fitted model's global formula (fitted on
// sparse products) never predicts an FFN family: its roofline does.
TEST(ScheduleFeatures, GatedFfnKernelsAreRankedByTheirRoofline) {
  std::vector<int64_t> lengths(64, 30);
  lengths[0] = 900;  // one heavy token
  const CsrMatrix h = lengths_matrix(lengths, 14336);
  const Problem p = Problem::gated_ffn(4096, 4096, 14336, DType::BF16);
  auto ffn_features = [&](const char* spec) {
    const Schedule s = parse_schedule(spec);
    return schedule_features(p, s, candidate_format_stats(h, p, s), compute_features(h),
                             row_profile(h), DeviceProfile::h100_sxm());
  };
  const ScheduleFeatures lib = ffn_features("twell;tile=128;comp=4;warps=8;gate=lib;balance=token");
  const ScheduleFeatures mma = ffn_features("twell;tile=128;comp=4;warps=8;gate=mma;balance=token");
  const ScheduleFeatures queue =
      ffn_features("twell;tile=128;comp=4;warps=8;gate=lib;balance=queue");
  EXPECT_DOUBLE_EQ(lib.serial_mmas, 256.0 * 1792.0 * 256.0);
  EXPECT_DOUBLE_EQ(mma.serial_mmas, 3 * lib.serial_mmas);
  EXPECT_LT(lib.roofline_us, mma.roofline_us);
  // Kernel 2: 2 · 4096 / 256 warp iterations per nonzero, a block's 8 warps sharing its token
  // (900 entries) or, with the queue, one part of 128.
  EXPECT_DOUBLE_EQ(lib.warp_iters_max, 900.0 * 32 / 8);
  EXPECT_DOUBLE_EQ(queue.warp_iters_max, 128.0 * 32 / 8);
  EXPECT_LE(queue.roofline_us, lib.roofline_us);
  // pack=mask reads G's bit-mask and a sector per nonzero instead of all of G (4096 x 14336 x 2).
  const ScheduleFeatures masked =
      ffn_features("twell;tile=128;comp=4;warps=8;gate=lib;balance=token;pack=mask");
  EXPECT_NEAR(lib.dram_bytes - masked.dram_bytes,
              4096.0 * 14336 * 2 - 4096.0 * 112 * 16 - masked.nnz * 32, 1.0);
  EXPECT_LE(masked.roofline_us, lib.roofline_us);
  EXPECT_FALSE(lib.global_formula);

  const CostModel m = fit_model(synthetic_samples(80, 3), DeviceProfile::h100_sxm());
  ASSERT_TRUE(m.global.has_value());
  std::string src;
  EXPECT_DOUBLE_EQ(m.predict_us(lib, &src), std::max(lib.roofline_us, lib.critical_floor_us));
  EXPECT_EQ(src, "roofline");
  ScheduleFeatures sparse = warp_per_row_features();
  sparse.values.assign(ScheduleFeatures::names().size(), 0.5);
  sparse.model_key = sparse.family = "no formula of its own";
  m.predict_us(sparse, &src);
  EXPECT_EQ(src, "global");
}

}  // namespace
}  // namespace sparsegen
