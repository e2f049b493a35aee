// Whole-model tuning without a GPU (compiler/model_tune.h): tensor selection by glob, feature
// similarity, model-only tuning of a generated checkpoint into one database, resuming (a second
// run and a run after a partial one redo nothing stored), per-tensor errors naming the shard and
// the tensor, the tuner's restricted search (TuneOptions::restrict_to), and merging databases
// (KernelDb::import_from).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/model_tune.h"
#include "compiler/tensor_index.h"
#include "compiler/tune.h"
#include "ir/gen/model_gen.h"
#include "ir/io/dense_to_csr.h"
#include "ir/schedule.h"
#include "runtime/kernel_db.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;
using sparsegen::testing::error_of;

class ModelTune : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("sparsegen_model_tune_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    ModelGenSpec s;
    s.shape = *find_model_shape("tiny-llama");
    s.seed = 3;
    s.max_shard_bytes = 60'000;
    generate_model(s, (dir_ / "model").string());
    index_ = (dir_ / "model" / "model.safetensors.index.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  ModelTuneOptions offline(const std::string& cache) const {
    ModelTuneOptions o;
    o.ns = {1, 8};
    o.dtypes = {DType::F16};
    o.tune.top_k = 0;
    o.tune.cache_dir = path(cache);
    return o;
  }

  fs::path dir_;
  std::string index_;
  CompileTarget target_ = offline_target("sm_90");
};

TEST(Glob, MatchesWholeNamesWithStarsAcrossDots) {
  EXPECT_TRUE(glob_match("*.mlp.*", "model.layers.0.mlp.up_proj.weight"));
  EXPECT_TRUE(glob_match("model.layers.?.self_attn.*", "model.layers.3.self_attn.q_proj.weight"));
  EXPECT_FALSE(glob_match("model.layers.?.self_attn.*", "model.layers.13.self_attn.q_proj.weight"));
  EXPECT_TRUE(glob_match("*[qk]_proj.weight", "model.layers.0.self_attn.k_proj.weight"));
  EXPECT_FALSE(glob_match("*[qk]_proj.weight", "model.layers.0.self_attn.v_proj.weight"));
  EXPECT_FALSE(glob_match("mlp", "model.layers.0.mlp.up_proj.weight"));  // whole name
}

TEST(SharedSearch, MeasuresTheRepresentativesFastestSchedules) {
  std::vector<CandidateReport> c(5);
  c[0] = {"a", 0.1, 0.30, 1, "", 1};
  c[1] = {"b", 0.2, 0.10, 1, "", 1};
  c[2] = {"c", 0.3, std::nullopt, 1, "", 1};  // compiled, not measured
  c[3] = {"d", 0.4, 0.05, 1, "failed the correctness check", 1};
  c[4] = {"e", 0.5, 0.20, 1, "", 2};
  EXPECT_EQ(fastest_measured(c, 3), (std::vector<std::string>{"b", "e", "a"}));
  EXPECT_EQ(fastest_measured(c, 1), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(fastest_measured(c, 0).empty());
  EXPECT_TRUE(fastest_measured({}, 3).empty());
}

TEST_F(ModelTune, SelectsTwoDimensionalWeightsByGlob) {
  const Checkpoint ck = open_checkpoint(index_);
  const auto all = select_tensors(ck, {}, kDefaultModelExcludes);
  EXPECT_EQ(all.size(), 14u);  // 7 linears x 2 layers; no norms, embeddings or lm_head
  for (const std::string& n : all) EXPECT_NE(n.find("_proj.weight"), std::string::npos) << n;
  EXPECT_EQ(select_tensors(ck, {"*.mlp.*"}, {}).size(), 6u);
  EXPECT_EQ(select_tensors(ck, {"*.mlp.*"}, {"*down*"}).size(), 4u);
  EXPECT_EQ(select_tensors(ck, {}, {}).size(), 16u);  // with embed_tokens and lm_head
  const std::string typo = error_of([&] { select_tensors(ck, {"*.mpl.*"}, {}); });
  EXPECT_NE(typo.find("--include '*.mpl.*'"), std::string::npos) << typo;
  const std::string none = error_of([&] { select_tensors(ck, {"*.mlp.*"}, {"*"}); });
  EXPECT_NE(none.find("select no 2-D tensor"), std::string::npos) << none;
}

TEST_F(ModelTune, SimilarFeaturesGroupLayersOfOneKind) {
  const Checkpoint ck = open_checkpoint(index_);
  auto features = [&](const std::string& name) {
    const CheckpointTensor* t = ck.find(name);
    Diagnostics d;
    return compute_features(dense_to_csr(tensor_to_dense(ck.shards[t->shard], *t->tensor), d));
  };
  const MatrixFeatures up0 = features("model.layers.0.mlp.up_proj.weight");
  const MatrixFeatures up1 = features("model.layers.1.mlp.up_proj.weight");
  const MatrixFeatures down0 = features("model.layers.0.mlp.down_proj.weight");
  EXPECT_TRUE(similar_features(up0, up1));
  EXPECT_FALSE(similar_features(up0, down0));  // another shape
  MatrixFeatures denser = up1;
  denser.density += 0.05;
  EXPECT_FALSE(similar_features(up0, denser));
}

TEST_F(ModelTune, TunesEveryTensorOnceAndResumes) {
  const Checkpoint ck = open_checkpoint(index_);
  const auto names = select_tensors(ck, {}, kDefaultModelExcludes);
  // A "killed" first run: half of the tensors.
  const std::vector<std::string> half(names.begin(), names.begin() + 7);
  int calls = 0;
  ModelTuneOptions o = offline("cache");
  o.on_item = [&](const ModelTuneItem&, int done, int total) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 14);
  };
  const ModelTuneReport first = tune_model(ck, half, target_, o);
  ASSERT_EQ(first.items.size(), 14u);
  for (const ModelTuneItem& it : first.items) {
    EXPECT_EQ(it.status, "tuned") << it.tensor << ": " << it.error;
    EXPECT_FALSE(it.schedule.empty());
    EXPECT_EQ(it.nnz * 2, it.rows * it.cols);
  }
  o.on_item = nullptr;
  const ModelTuneReport all = tune_model(ck, names, target_, o);
  ASSERT_EQ(all.items.size(), 28u);
  int cached = 0, tuned = 0;
  for (const ModelTuneItem& it : all.items) {
    const bool in_half = std::find(half.begin(), half.end(), it.tensor) != half.end();
    EXPECT_EQ(it.status, in_half ? "cached" : "tuned") << it.tensor;
    cached += it.status == "cached";
    tuned += it.status == "tuned";
  }
  EXPECT_EQ(cached, 14);
  EXPECT_EQ(tuned, 14);
  const ModelTuneReport again = tune_model(ck, names, target_, o);
  for (const ModelTuneItem& it : again.items) EXPECT_EQ(it.status, "cached") << it.tensor;
  EXPECT_EQ(again.errors(), 0);
  EXPECT_EQ(to_json(again.items[0])["status"], "cached");
  kdb::KernelDb db(kdb::db_path(path("cache")));
  EXPECT_EQ(db.tunings().size(), 28u);
  // Every tensor is in the tensor index (the rerun's shortcut), keyed by its bytes.
  const TensorIndex index(tensor_index_path(path("cache")));
  EXPECT_EQ(index.size(), 14u);
  const CheckpointTensor* t = ck.find(names[3]);
  const auto f = index.find(TensorIndex::content_key(*t->tensor));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rows, t->tensor->shape[0]);
  EXPECT_EQ(f->nnz * 2, f->rows * f->cols);
}

TEST_F(ModelTune, TensorIndexShortcutAndNewJobs) {
  const Checkpoint ck = open_checkpoint(index_);
  const std::vector<std::string> two{"model.layers.0.mlp.up_proj.weight",
                                     "model.layers.1.self_attn.q_proj.weight"};
  ModelTuneOptions o = offline("cache");
  o.ns = {1};
  tune_model(ck, two, target_, o);
  // Garbage lines in the index are ignored.
  {
    std::ofstream f(tensor_index_path(path("cache")), std::ios::app);
    f << "v1\tbroken\n"
      << "v9\tF16:1x1:00\t1\t1\t1\t0\t0\n";
  }
  EXPECT_EQ(TensorIndex(tensor_index_path(path("cache"))).size(), 2u);
  // A new N: the stored N = 1 is still a hit, N = 8 is tuned.
  o.ns = {1, 8};
  const ModelTuneReport r = tune_model(ck, two, target_, o);
  ASSERT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.items[0].status, "cached");
  EXPECT_EQ(r.items[1].status, "tuned");
  EXPECT_EQ(r.items[2].status, "cached");
  EXPECT_EQ(r.items[3].status, "tuned");
  // All stored: the shortcut answers with the stored schedules, same as the tuner's lookup.
  const ModelTuneReport again = tune_model(ck, two, target_, o);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again.items[i].status, "cached");
    EXPECT_EQ(again.items[i].schedule, r.items[i].schedule);
    EXPECT_EQ(again.items[i].kernel_key, r.items[i].kernel_key);
  }
  // --force searches again.
  o.tune.force = true;
  const ModelTuneReport forced = tune_model(ck, two, target_, o);
  ASSERT_EQ(forced.items.size(), 4u);
  for (const ModelTuneItem& it : forced.items) EXPECT_EQ(it.status, "tuned");
}

TEST_F(ModelTune, ABadTensorIsNamedAndTheOthersAreTuned) {
  // A checkpoint with a NaN weight and an int8 weight among good ones.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> good{0.5f, 0, -0.25f, 0, 0, 1.5f, 0, 0.75f};
  const std::vector<float> bad{0.5f, nan, -0.25f, 0, 0, 1.5f, 0, 0.75f};
  const std::vector<int8_t> quant{1, 0, 2, 0, 0, 3, 0, 4};
  write_safetensors(path("w.safetensors"),
                    {{"a.weight", StDType::F32, {2, 4}, std::as_bytes(std::span(good))},
                     {"b.weight", StDType::F32, {2, 4}, std::as_bytes(std::span(bad))},
                     {"c.weight", StDType::I8, {2, 4}, std::as_bytes(std::span(quant))}});
  const Checkpoint ck = open_checkpoint(path("w.safetensors"));
  ModelTuneOptions o = offline("cache");
  o.ns = {1};
  const ModelTuneReport r =
      tune_model(ck, select_tensors(ck, {}, kDefaultModelExcludes), target_, o);
  ASSERT_EQ(r.items.size(), 3u);
  EXPECT_EQ(r.items[0].status, "tuned") << r.items[0].error;
  EXPECT_EQ(r.items[1].status, "tuned") << r.items[1].error;  // NaN is kept (and reported)
  EXPECT_EQ(r.items[2].status, "error");
  EXPECT_NE(r.items[2].error.find("w.safetensors"), std::string::npos) << r.items[2].error;
  EXPECT_NE(r.items[2].error.find("tensor 'c.weight'"), std::string::npos) << r.items[2].error;
  EXPECT_EQ(r.errors(), 1);
  EXPECT_NE(error_of([&] { tune_model(ck, {"nope"}, target_, o); }).find("'nope'"),
            std::string::npos);
  o.ns = {0};
  EXPECT_NE(error_of([&] { tune_model(ck, {"a.weight"}, target_, o); }).find("-n 0"),
            std::string::npos);
}

TEST_F(ModelTune, RestrictedSearchKeepsToTheGivenSchedules) {
  const Checkpoint ck = open_checkpoint(index_);
  const CheckpointTensor* t = ck.find("model.layers.0.mlp.up_proj.weight");
  Diagnostics d;
  const CsrMatrix a = dense_to_csr(tensor_to_dense(ck.shards[t->shard], *t->tensor), d);
  KernelRequest req;
  req.n = 8;
  req.dtype = DType::F16;
  TuneOptions o;
  o.use_cache = false;
  const TuneResult full = tune(a, req, target_, o);
  // The model's third choice, alone: the restricted search must pick it.
  const RankedSpace space = rank_space(a, make_problem(a, req), target_, nullptr);
  ASSERT_GE(space.order.size(), 3u);
  const std::string third = to_string(space.all[space.order[2]]);
  o.restrict_to = {third, "general;not-a-schedule"};
  o.restrict_note = "test note";
  const TuneResult r = tune(a, req, target_, o);
  EXPECT_EQ(r.schedule, third);
  EXPECT_NE(r.ranking.find("over 1 schedule (test note)"), std::string::npos) << r.ranking;
  EXPECT_EQ(r.enumerated, full.enumerated);  // the space it was taken from
  // Nothing of the list in the space: the full search runs.
  o.restrict_to = {"general;not-a-schedule"};
  const TuneResult f = tune(a, req, target_, o);
  EXPECT_EQ(f.schedule, full.schedule);
  EXPECT_EQ(f.ranking.find("test note"), std::string::npos);
}

TEST_F(ModelTune, ImportMergesAnotherDatabase) {
  const Checkpoint ck = open_checkpoint(index_);
  ModelTuneOptions o = offline("a");
  o.ns = {1};
  tune_model(ck, {"model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"},
             target_, o);
  o.tune.cache_dir = path("b");
  tune_model(ck, {"model.layers.0.mlp.down_proj.weight", "model.layers.1.mlp.up_proj.weight"},
             target_, o);
  kdb::KernelDb a(kdb::db_path(path("a")));
  const auto before = a.kernel_count();
  const kdb::KernelDb::ImportStats st = a.import_from(kdb::db_path(path("b")));
  EXPECT_EQ(st.tunings_added, 1);  // layers.1 up_proj
  EXPECT_EQ(st.tunings_kept, 1);   // down_proj: the same search in both
  EXPECT_EQ(st.kernels_added, 1);
  EXPECT_EQ(st.kernels_kept, 1);
  EXPECT_EQ(a.kernel_count(), before + 1);
  EXPECT_EQ(a.tunings().size(), 3u);
  // Importing again changes nothing.
  const auto again = a.import_from(kdb::db_path(path("b")));
  EXPECT_EQ(again.kernels_added + again.tunings_added + again.tunings_replaced, 0);
  // Now every tuning is a cache hit from the merged database.
  o.tune.cache_dir = path("a");
  const ModelTuneReport merged = tune_model(ck, {"model.layers.1.mlp.up_proj.weight"}, target_, o);
  ASSERT_EQ(merged.items.size(), 1u);
  EXPECT_EQ(merged.items[0].status, "cached");

  // A tuning that measured more replaces ours; one that measured less does not.
  kdb::KernelDb b(kdb::db_path(path("b")));
  auto t = b.tunings().front();
  t.top_k = 8;
  b.put({}, t);
  const auto replaced = a.import_from(kdb::db_path(path("b")));
  EXPECT_EQ(replaced.tunings_replaced, 1);
  EXPECT_EQ(a.tuning(t.tuning_key)->top_k, 8);

  // Bad sources are named.
  std::string e = error_of([&] {
    try {
      a.import_from(path("none.db"));
    } catch (const kdb::KernelDbError& x) {
      throw UserError(x.what());
    }
  });
  EXPECT_NE(e.find("none.db"), std::string::npos) << e;
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
  e = error_of([&] {
    try {
      a.import_from(index_);
    } catch (const kdb::KernelDbError& x) {
      throw UserError(x.what());
    }
  });
  EXPECT_NE(e.find("not a SQLite database"), std::string::npos) << e;
  e = error_of([&] {
    try {
      a.import_from(kdb::db_path(path("a")));
    } catch (const kdb::KernelDbError& x) {
      throw UserError(x.what());
    }
  });
  EXPECT_NE(e.find("being imported into"), std::string::npos) << e;
}

}  // namespace
}  // namespace sparsegen
