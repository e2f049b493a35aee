// The model-shape table, the synthetic checkpoint generator (ir/gen/model_gen.h) and the sharded
// checkpoint reader/writer (ir/io/checkpoint.h): names and shapes as transformers writes them,
// exact pruning per tensor, values equal to the generator's after the dtype conversion,
// reproducibility, and errors naming the index file, the shard and the tensor.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/dtype.h"
#include "ir/gen/model_gen.h"
#include "ir/gen/model_shapes.h"
#include "ir/io/checkpoint.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;
using sparsegen::testing::error_of;

class ModelGen : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("sparsegen_model_test_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

ModelGenSpec tiny_spec(PruneMethod method = PruneMethod::Magnitude, uint64_t seed = 1) {
  ModelGenSpec s;
  s.shape = *find_model_shape("tiny-llama");
  s.prune.method = method;
  s.prune.sparsity = 0.5;
  s.seed = seed;
  s.max_shard_bytes = 60'000;  // several shards for the tiny model
  return s;
}

TEST(ModelShapes, Llama2HasTheHuggingFaceTensors) {
  const auto shape = find_model_shape("llama-2-7b");
  ASSERT_TRUE(shape);
  const auto t = model_tensors(*shape);
  int linear = 0;
  for (const ModelTensor& m : t) linear += m.kind == ModelTensorKind::Linear;
  EXPECT_EQ(linear, 224);                  // 7 per layer, 32 layers
  EXPECT_EQ(t.size(), 224u + 2 * 32 + 3);  // norms, embeddings, final norm, lm_head
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t.front().shape, (std::vector<int64_t>{32000, 4096}));
  EXPECT_EQ(t.back().name, "lm_head.weight");
  auto find = [&](const std::string& n) {
    for (const ModelTensor& m : t)
      if (m.name == n) return m;
    ADD_FAILURE() << "missing " << n;
    return ModelTensor{};
  };
  EXPECT_EQ(find("model.layers.31.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{4096, 11008}));
  EXPECT_EQ(find("model.layers.0.mlp.gate_proj.weight").shape, (std::vector<int64_t>{11008, 4096}));
  EXPECT_EQ(find("model.layers.5.self_attn.v_proj.weight").shape,
            (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(find("model.layers.5.input_layernorm.weight").shape, (std::vector<int64_t>{4096}));
}

TEST(ModelShapes, Llama3UsesGroupedQueryAttention) {
  const auto shape = find_model_shape("llama-3-8b");
  ASSERT_TRUE(shape);
  const auto t = model_tensors(*shape, 1);
  for (const ModelTensor& m : t) {
    if (m.name == "model.layers.0.self_attn.k_proj.weight") {
      EXPECT_EQ(m.shape, (std::vector<int64_t>{1024, 4096}));
    } else if (m.name == "model.layers.0.mlp.up_proj.weight") {
      EXPECT_EQ(m.shape, (std::vector<int64_t>{14336, 4096}));
    } else if (m.name == "lm_head.weight") {
      EXPECT_EQ(m.shape, (std::vector<int64_t>{128256, 4096}));
    }
  }
  EXPECT_FALSE(find_model_shape("llama-9"));
  EXPECT_NE(model_shape_names().find("tiny-llama"), std::string::npos);
}

TEST_F(ModelGen, GeneratedCheckpointMatchesTheGenerator) {
  const ModelGenSpec spec = tiny_spec();
  const ModelGenResult r = generate_model(spec, dir_.string());
  EXPECT_GT(r.files.shard_files.size(), 1u);
  EXPECT_EQ(r.files.shard_files.front(),
            fmt::format("model-00001-of-{:05d}.safetensors", r.files.shard_files.size()));
  EXPECT_TRUE(fs::exists(path("config.json")));
  const Checkpoint ck = open_checkpoint(path("model.safetensors.index.json"));
  const auto tensors = model_tensors(spec.shape);
  ASSERT_EQ(ck.tensors.size(), tensors.size());
  for (const ModelTensor& t : tensors) {
    const CheckpointTensor* c = ck.find(t.name);
    ASSERT_NE(c, nullptr) << t.name;
    EXPECT_EQ(c->tensor->shape, t.shape) << t.name;
    EXPECT_EQ(c->tensor->dtype, StDType::F16);
    if (t.shape.size() != 2) continue;
    const DenseMatrix got = tensor_to_dense(ck.shards[c->shard], *c->tensor);
    const DenseMatrix want = generate_model_tensor(spec, t);
    int64_t nonzero = 0, non_integer = 0;
    for (size_t i = 0; i < want.data.size(); ++i) {
      ASSERT_EQ(got.data[i], half_bits_to_float(float_to_half_bits(want.data[i])))
          << t.name << " element " << i;
      nonzero += got.data[i] != 0.0f;
      non_integer += got.data[i] != std::trunc(got.data[i]);
    }
    if (t.kind == ModelTensorKind::Linear)
      EXPECT_EQ(nonzero, static_cast<int64_t>(want.data.size()) / 2) << t.name;  // exactly 50 %
    else
      EXPECT_EQ(nonzero, static_cast<int64_t>(want.data.size())) << t.name;  // dense
    EXPECT_EQ(non_integer, nonzero) << t.name;
  }
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(path("config.json")));
  EXPECT_EQ(cfg["hidden_size"], 64);
  EXPECT_EQ(cfg["num_key_value_heads"], 2);
}

TEST_F(ModelGen, SeedsAndMethodsChangeTheWeights) {
  const auto t = model_tensors(*find_model_shape("tiny-llama"))[2];  // layers.0 q_proj
  ASSERT_EQ(t.kind, ModelTensorKind::Linear);
  const DenseMatrix a = generate_model_tensor(tiny_spec(PruneMethod::Magnitude, 1), t);
  EXPECT_EQ(a.data, generate_model_tensor(tiny_spec(PruneMethod::Magnitude, 1), t).data);
  EXPECT_NE(a.data, generate_model_tensor(tiny_spec(PruneMethod::Magnitude, 2), t).data);
  const DenseMatrix r = generate_model_tensor(tiny_spec(PruneMethod::Random, 1), t);
  EXPECT_NE(a.data, r.data);
  // --layers keeps the first layers of the full model, value for value.
  ModelGenSpec one = tiny_spec();
  one.layers = 1;
  EXPECT_EQ(model_tensors(one.shape, one.layers).size(), 1u + 9 + 2);
  EXPECT_EQ(generate_model_tensor(one, t).data, a.data);
}

TEST_F(ModelGen, BadSpecsNameTheFlag) {
  ModelGenSpec s = tiny_spec();
  s.layers = 3;
  EXPECT_NE(error_of([&] { generate_model(s, dir_.string()); }).find("--layers 3"),
            std::string::npos);
  s = tiny_spec();
  s.prune.sparsity = 1.5;
  EXPECT_NE(error_of([&] { generate_model(s, dir_.string()); }).find("--sparsity"),
            std::string::npos);
}

TEST_F(ModelGen, SingleSafetensorsFileOpensAsACheckpoint) {
  const std::vector<float> v{0.5f, -1.25f};
  write_safetensors(path("w.safetensors"),
                    {{"a.weight", StDType::F32, {1, 2}, std::as_bytes(std::span(v))}});
  const Checkpoint ck = open_checkpoint(path("w.safetensors"));
  ASSERT_EQ(ck.tensors.size(), 1u);
  EXPECT_EQ(ck.tensors[0].name, "a.weight");
}

TEST_F(ModelGen, BrokenIndexesAreReportedByFileShardAndTensor) {
  generate_model(tiny_spec(), dir_.string());
  const std::string index = path("model.safetensors.index.json");
  nlohmann::json j = nlohmann::json::parse(std::ifstream(index));
  const std::string first_shard = j["weight_map"]["model.embed_tokens.weight"];
  auto write_index = [&](const nlohmann::json& k) {
    std::ofstream(path("bad.index.json")) << k.dump();
    return path("bad.index.json");
  };
  {  // a missing shard
    nlohmann::json k = j;
    k["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors";
    const std::string e = error_of([&] { open_checkpoint(write_index(k)); });
    EXPECT_NE(e.find("bad.index.json"), std::string::npos) << e;
    EXPECT_NE(e.find("model-00009-of-00009.safetensors"), std::string::npos) << e;
    EXPECT_NE(e.find("model.norm.weight"), std::string::npos) << e;
  }
  {  // a tensor mapped to a shard that does not hold it
    nlohmann::json k = j;
    const std::string last = j["weight_map"]["lm_head.weight"];
    ASSERT_NE(last, first_shard);
    k["weight_map"]["lm_head.weight"] = first_shard;
    const std::string e = error_of([&] { open_checkpoint(write_index(k)); });
    EXPECT_NE(e.find("'lm_head.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("does not hold it"), std::string::npos) << e;
  }
  {  // a shard tensor the index does not name
    nlohmann::json k = j;
    k["weight_map"].erase("model.embed_tokens.weight");
    const std::string e = error_of([&] { open_checkpoint(write_index(k)); });
    EXPECT_NE(e.find("model.embed_tokens.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("does not name"), std::string::npos) << e;
  }
  {  // not JSON
    std::ofstream(path("bad.index.json")) << "{\"weight_map\": {";
    const std::string e = error_of([&] { open_checkpoint(path("bad.index.json")); });
    EXPECT_NE(e.find("bad.index.json (byte"), std::string::npos) << e;
  }
  {  // no weight_map, and a path in a shard name
    std::ofstream(path("bad.index.json")) << "{\"metadata\": {}}";
    EXPECT_NE(error_of([&] { open_checkpoint(path("bad.index.json")); }).find("weight_map"),
              std::string::npos);
    nlohmann::json k = j;
    k["weight_map"]["model.norm.weight"] = "../x.safetensors";
    EXPECT_NE(error_of([&] { open_checkpoint(write_index(k)); }).find("not a file name"),
              std::string::npos);
  }
  EXPECT_NE(error_of([&] { open_checkpoint(path("none.json")); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { open_checkpoint(path("config.json")); }).find("weight_map"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsegen
