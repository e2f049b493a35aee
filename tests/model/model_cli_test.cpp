// The whole-model commands through the built `sparsegen` binary (SPARSEGEN_CLI): gen-model ->
// tune-model (model only, no GPU needed) -> rerun all cache hits -> cache import, the JSON
// report, the worker mode of --gpus, and bad input giving a non-zero exit and a message naming
// the flag or the file.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/io/safetensors.h"
#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using CliRun = sparsegen::testing::CommandRun;

CliRun run(const std::string& args) {
  return sparsegen::testing::run_command(std::string("'") + SPARSEGEN_CLI + "' " + args + " 2>&1");
}

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("sparsegen_model_cli_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string gen() const {
    const CliRun g = run("gen-model --like tiny-llama --seed 5 --shard-size 60KB -o " + path("m"));
    EXPECT_EQ(g.rc, 0) << g.out;
    return path("m/model.safetensors.index.json");
  }
  static nlohmann::json read_json(const std::string& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f, nullptr, false);
  }
  fs::path dir_;
};

TEST_F(ModelCli, GenModelWritesAShardedCheckpoint) {
  const CliRun g =
      run("gen-model --like tiny-llama --method random --sparsity 0.7 --layers 1 "
          "--shard-size 50KB -o " +
          path("m"));
  ASSERT_EQ(g.rc, 0) << g.out;
  EXPECT_NE(g.out.find("12 tensors (7 pruned linear weights, random 0.7)"), std::string::npos)
      << g.out;
  const nlohmann::json index = read_json(path("m/model.safetensors.index.json"));
  ASSERT_TRUE(index.contains("weight_map")) << g.out;
  EXPECT_EQ(index["weight_map"].size(), 12u);
  std::set<std::string> shards;
  for (const auto& [name, file] : index["weight_map"].items()) shards.insert(file);
  EXPECT_GE(shards.size(), 2u);
  for (const std::string& f : shards) {
    EXPECT_TRUE(fs::exists(path("m/" + f))) << f;
    EXPECT_NE(f.find(fmt::format("-of-{:05d}.safetensors", shards.size())), std::string::npos);
  }
  EXPECT_EQ(read_json(path("m/config.json"))["num_hidden_layers"], 1);
  // inspect reads a tensor of a shard.
  const std::string shard = index["weight_map"]["model.layers.0.mlp.up_proj.weight"];
  const CliRun i =
      run("inspect " + path("m/" + shard) + " --tensor model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(i.rc, 0) << i.out;
  EXPECT_NE(i.out.find("176 x 64"), std::string::npos) << i.out;
  // Writing over a checkpoint is refused.
  const CliRun again = run("gen-model --like tiny-llama -o " + path("m"));
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.out.find("holds a checkpoint already"), std::string::npos) << again.out;
}

TEST_F(ModelCli, GenModelBadFlagsAreNamed) {
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : {Case{"--like llama-9b", "--like llama-9b: expected one of"},
                        Case{"--like tiny-llama --layers 7", "--layers 7"},
                        Case{"--like tiny-llama --sparsity 1.5", "--sparsity"},
                        Case{"--like tiny-llama --method mag", "--method mag"},
                        Case{"--like tiny-llama --dtype int8", "--dtype int8"},
                        Case{"--like tiny-llama --shard-size 5XB", "--shard-size 5XB"}}) {
    const CliRun r = run("gen-model " + c.args + " -o " + path("x"));
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
  }
  EXPECT_EQ(run("gen-model -o " + path("x")).rc, 2);  // --like missing: usage error
}

TEST_F(ModelCli, TuneModelThenRerunIsAllCacheHits) {
  const std::string ck = gen();
  const std::string common = " -n 1,8 --arch sm_90 --cache-dir " + path("c");
  const CliRun first = run("tune-model " + ck + common + " --report " + path("r1.json"));
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("28 tunings of 14 tensors"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("\033["), std::string::npos);  // no progress bar off a terminal
  const nlohmann::json r1 = read_json(path("r1.json"));
  ASSERT_EQ(r1["tensors"].size(), 28u);
  for (const auto& t : r1["tensors"]) {
    EXPECT_EQ(t["status"], "tuned") << t.dump();
    EXPECT_FALSE(t["schedule"].get<std::string>().empty());
  }
  const CliRun second = run("tune-model " + ck + common + " --report " + path("r2.json"));
  ASSERT_EQ(second.rc, 0) << second.out;
  EXPECT_NE(second.out.find("28 cache hits"), std::string::npos) << second.out;
  const nlohmann::json r2 = read_json(path("r2.json"));
  ASSERT_EQ(r2["tensors"].size(), 28u);
  for (const auto& t : r2["tensors"]) EXPECT_EQ(t["status"], "cached");

  // Selection by glob, several dtypes.
  const CliRun mlp = run("tune-model " + ck +
                         " --include '*.mlp.*' --exclude '*down*' -n 2 "
                         "--dtype fp16,bf16 --arch sm_90 --cache-dir " +
                         path("c"));
  ASSERT_EQ(mlp.rc, 0) << mlp.out;
  EXPECT_NE(mlp.out.find("8 tunings of 4 tensors"), std::string::npos) << mlp.out;

  // Another host's database merges in: its tunings become cache hits here.
  const CliRun other = run("tune-model " + ck + " -n 4 --arch sm_90 --cache-dir " + path("d"));
  ASSERT_EQ(other.rc, 0) << other.out;
  const CliRun imp = run("cache import " + path("d") + " --cache-dir " + path("c"));
  ASSERT_EQ(imp.rc, 0) << imp.out;
  EXPECT_NE(imp.out.find("14 tunings added"), std::string::npos) << imp.out;
  const CliRun hits = run("tune-model " + ck + " -n 4 --arch sm_90 --cache-dir " + path("c"));
  EXPECT_NE(hits.out.find("14 cache hits"), std::string::npos) << hits.out;
}

TEST_F(ModelCli, AKilledRunLosesNothingStored) {
  const std::string ck = gen();
  const std::string cmd = std::string("'") + SPARSEGEN_CLI + "' tune-model " + ck +
                          " -n 1,8 --arch sm_90 --cache-dir " + path("c");
  // SIGKILL (no chance to clean up) as soon as the database holds two tunings.
  const std::string cli = std::string("'") + SPARSEGEN_CLI + "'";
  sparsegen::testing::run_command(
      "(" + cmd + " >/dev/null 2>&1 & pid=$!; for i in $(seq 600); do n=$(" + cli +
      " cache list --cache-dir " + path("c") +
      " 2>/dev/null | grep -c ' \\* '); [ \"$n\" -ge 2 ] && break; sleep 0.1; done; "
      "kill -9 $pid; wait $pid) >/dev/null 2>&1");
  const CliRun again = run("tune-model " + ck + " -n 1,8 --arch sm_90 --cache-dir " + path("c") +
                           " --report " + path("r.json"));
  ASSERT_EQ(again.rc, 0) << again.out;
  int cached = 0, tuned = 0;
  const nlohmann::json rep = read_json(path("r.json"));
  for (const auto& t : rep["tensors"]) {
    cached += t["status"] == "cached";
    tuned += t["status"] == "tuned";
  }
  EXPECT_EQ(cached + tuned, 28);
  EXPECT_GT(cached, 0) << "the killed run stored nothing in 1.5 s";
  EXPECT_LT(cached, 28) << "the killed run finished: kill it sooner";
  const CliRun third = run("tune-model " + ck + " -n 1,8 --arch sm_90 --cache-dir " + path("c"));
  EXPECT_NE(third.out.find("28 cache hits"), std::string::npos) << third.out;
}

TEST_F(ModelCli, WorkerModeWritesOneJsonLinePerTuning) {
  const std::string ck = gen();
  std::ofstream(path("list.txt")) << "model.layers.1.self_attn.o_proj.weight\n"
                                  << "model.layers.0.mlp.gate_proj.weight\n";
  const CliRun w = run("tune-model " + ck + " --worker-tensors " + path("list.txt") +
                       " -n 1 --top-k 0 --cache-dir " + path("c") + " 2>/dev/null");
  ASSERT_EQ(w.rc, 0) << w.out;
  std::istringstream lines(w.out);
  int items = 0, done = 0;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    items += j.contains("item");
    done += j.contains("done");
  }
  EXPECT_EQ(items, 2);
  EXPECT_EQ(done, 1);
}

TEST_F(ModelCli, GpusRunsOneWorkerPerDeviceSharingTheDatabase) {
  const std::string ck = gen();
  // Two pretended devices (no GPU here: the workers compile offline, model only).
  const std::string cmd = "env SPARSEGEN_TEST_GPU_COUNT=2 '" + std::string(SPARSEGEN_CLI) +
                          "' tune-model " + ck + " -n 1,8 --top-k 0 --gpus all --cache-dir " +
                          path("c") + " --report ";
  const CliRun first = sparsegen::testing::run_command(cmd + path("r1.json") + " 2>&1");
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("28 tunings of 14 tensors"), std::string::npos) << first.out;
  const nlohmann::json r1 = read_json(path("r1.json"));
  ASSERT_EQ(r1["tensors"].size(), 28u);
  std::set<int> gpus;
  for (const auto& t : r1["tensors"]) {
    EXPECT_EQ(t["status"], "tuned") << t.dump();
    gpus.insert(t["gpu"].get<int>());
  }
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
  EXPECT_TRUE(r1["worker_errors"].empty());
  const CliRun second = sparsegen::testing::run_command(cmd + path("r2.json") + " 2>&1");
  ASSERT_EQ(second.rc, 0) << second.out;
  EXPECT_NE(second.out.find("28 cache hits"), std::string::npos) << second.out;
  const CliRun bad = sparsegen::testing::run_command(
      "env SPARSEGEN_TEST_GPU_COUNT=2 '" + std::string(SPARSEGEN_CLI) + "' tune-model " + ck +
      " --gpus 0,5 --top-k 0 --cache-dir " + path("c") + " 2>&1");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("--gpus 0,5: expected 'all' or device numbers 0 to 1"), std::string::npos)
      << bad.out;
}

TEST_F(ModelCli, TuneModelBadInputIsNamed) {
  const std::string ck = gen();
  struct Case {
    std::string args, expect;
    int rc;
  };
  for (const Case& c :
       {Case{path("none.json"), "none.json: no such file", 1},
        Case{path("m/config.json"), "weight_map", 1},
        Case{ck + " --include '*.mpl.*'", "--include '*.mpl.*': matches no 2-D tensor", 1},
        Case{ck + " -n 0", "-n 0", 1}, Case{ck + " -n 1,x", "-n x", 1},
        Case{ck + " --dtype fp12", "--dtype", 1},
        Case{ck + " --arch sm_90 --top-k 4", "--top-k 4", 1},
        Case{ck + " --share-candidates 0", "--share-candidates", 1}}) {
    const CliRun r = run("tune-model " + c.args + " --cache-dir " + path("c"));
    EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
  }
  const CliRun bad = run("cache import " + path("m/config.json") + " --cache-dir " + path("c"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("config.json"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("not JSON"), std::string::npos) << bad.out;
  fs::copy_file(path("m/config.json"), path("x.db"));
  const CliRun bad2 = run("cache import " + path("x.db") + " --cache-dir " + path("c"));
  EXPECT_EQ(bad2.rc, 1);
  EXPECT_NE(bad2.out.find("x.db: not a SQLite database"), std::string::npos) << bad2.out;
}

TEST_F(ModelCli, ABadTensorIsNamedAndTheOthersAreStored) {
  const std::vector<float> good{0.5f, 0, -0.25f, 0, 0, 1.5f, 0, 0.75f};
  const std::vector<int8_t> quant{1, 0, 2, 0, 0, 3, 0, 4};
  sparsegen::write_safetensors(
      path("w.safetensors"),
      {{"a.weight", sparsegen::StDType::F32, {2, 4}, std::as_bytes(std::span(good))},
       {"q.weight", sparsegen::StDType::I8, {2, 4}, std::as_bytes(std::span(quant))}});
  const CliRun r = run("tune-model " + path("w.safetensors") + " --arch sm_90 --report " +
                       path("r.json") + " --cache-dir " + path("c"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("w.safetensors: tensor 'q.weight'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 2 tunings failed"), std::string::npos) << r.out;
  const nlohmann::json rep = read_json(path("r.json"));
  ASSERT_EQ(rep["tensors"].size(), 2u);
  EXPECT_EQ(rep["tensors"][0]["status"], "tuned");
  EXPECT_EQ(rep["tensors"][1]["status"], "error");
}

}  // namespace
