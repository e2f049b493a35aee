#include "ir/gen/model_gen.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/parallel.h"
#include "ir/random.h"

namespace sparsegen {
namespace {

constexpr double kEmbeddingStd = 0.02;
constexpr double kNormSpread = 0.05;

// One standard normal from a SplitMix64 state (Box-Muller, cosine branch only: simple and
// reproducible; embeddings need no more).
float normal_from(uint64_t& state) {
  const double u1 = 1.0 - static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// Stores `v` in the file's dtype; a nonzero that would round to zero becomes the smallest
// subnormal of its sign (counted in `raised`), so nonzeros stay nonzeros.
void store(float v, StDType dtype, std::byte* out, int64_t& raised) {
  if (dtype == StDType::F32) {
    std::memcpy(out, &v, 4);
    return;
  }
  uint16_t h = dtype == StDType::F16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
  if ((h & 0x7fffu) == 0 && v != 0.0f) {
    h = static_cast<uint16_t>((h & 0x8000u) | 1u);
    ++raised;
  }
  std::memcpy(out, &h, 2);  // little-endian host (x86-64, aarch64)
}

void check_spec(const ModelGenSpec& spec) {
  if (spec.layers && (*spec.layers < 1 || *spec.layers > spec.shape.layers))
    throw UserError(fmt::format("--layers {}: expected 1 to {} ({} has {} layers)", *spec.layers,
                                spec.shape.layers, spec.shape.name, spec.shape.layers));
  if (spec.dtype != StDType::F16 && spec.dtype != StDType::BF16 && spec.dtype != StDType::F32)
    throw UserError(fmt::format("--dtype {}: expected fp16, bf16 or fp32", to_string(spec.dtype)));
  if (spec.max_shard_bytes == 0) throw UserError("--shard-size: expected more than 0 bytes");
  validate(spec.prune);
}

nlohmann::ordered_json config_json(const ModelGenSpec& spec, int64_t layers) {
  const ModelShape& s = spec.shape;
  nlohmann::ordered_json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  j["hidden_size"] = s.hidden;
  j["intermediate_size"] = s.intermediate;
  j["num_hidden_layers"] = layers;
  j["num_attention_heads"] = s.heads;
  j["num_key_value_heads"] = s.kv_heads;
  j["head_dim"] = s.head_dim();
  j["vocab_size"] = s.vocab;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = 1e-5;
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = spec.dtype == StDType::F16    ? "float16"
                     : spec.dtype == StDType::BF16 ? "bfloat16"
                                                   : "float32";
  j["sparsegen_like"] = s.name;
  j["sparsegen_pruning"] = fmt::format("{} sparsity {} seed {}", to_string(spec.prune.method),
                                       spec.prune.sparsity, spec.seed);
  return j;
}

}  // namespace

uint64_t tensor_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  uint64_t state = seed ^ h;
  return splitmix64(state);
}

DenseMatrix generate_model_tensor(const ModelGenSpec& spec, const ModelTensor& t) {
  const uint64_t seed = tensor_seed(spec.seed, t.name);
  if (t.kind == ModelTensorKind::Linear) {
    DenseMatrix w = make_llm_weight(t.shape[0], t.shape[1], seed);
    PruneSpec p = spec.prune;
    p.seed = seed;
    const CsrMatrix kept = prune(w, p);
    std::fill(w.data.begin(), w.data.end(), 0.0f);
    for (int64_t r = 0; r < kept.rows; ++r)
      for (int64_t k = kept.row_ptr[r]; k < kept.row_ptr[r + 1]; ++k)
        w.data[static_cast<size_t>(r * w.cols + kept.col_idx[k])] = kept.values[k];
    w.source = t.name;
    return w;
  }
  DenseMatrix d;
  d.rows = t.shape.size() == 2 ? t.shape[0] : 1;
  d.cols = t.shape.back();
  d.source = t.name;
  d.data.resize(static_cast<size_t>(d.rows * d.cols));
  const bool norm = t.kind == ModelTensorKind::Norm;
  // One stream per row, so threads change the speed, not the values.
  parallel_for(d.rows, d.rows * d.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint64_t state = seed ^ (static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ULL);
      float* out = d.data.data() + r * d.cols;
      for (int64_t c = 0; c < d.cols; ++c) {
        if (norm) {
          const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
          out[c] = static_cast<float>(1.0 + kNormSpread * (2.0 * u - 1.0));
        } else {
          out[c] = static_cast<float>(kEmbeddingStd) * normal_from(state);
        }
      }
    }
  });
  return d;
}

ModelGenResult generate_model(const ModelGenSpec& spec, const std::string& dir,
                              const std::function<void(int, int)>& progress) {
  check_spec(spec);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec))
    throw UserError(fmt::format("-o {}: cannot create the directory", dir));
  const std::vector<ModelTensor> tensors = model_tensors(spec.shape, spec.layers);
  std::vector<CheckpointEntry> plan;
  for (const ModelTensor& t : tensors) plan.push_back({t.name, spec.dtype, t.shape});

  ModelGenResult res;
  res.tensors = static_cast<int64_t>(tensors.size());
  int done = 0;
  const int esize = st_dtype_bytes(spec.dtype);
  auto produce = [&](size_t i, std::span<std::byte> out) {
    const ModelTensor& t = tensors[i];
    const DenseMatrix d = generate_model_tensor(spec, t);
    SG_ASSERT(out.size() == d.data.size() * static_cast<size_t>(esize), "tensor size: " + t.name);
    int64_t raised = 0;
    for (size_t k = 0; k < d.data.size(); ++k)
      store(d.data[k], spec.dtype, out.data() + k * static_cast<size_t>(esize), raised);
    res.raised_to_subnormal += raised;
    if (t.kind == ModelTensorKind::Linear) {
      ++res.linear_tensors;
      res.linear_elements += static_cast<int64_t>(d.data.size());
      for (float v : d.data) res.linear_kept += v != 0.0f;
    }
    if (progress) progress(++done, static_cast<int>(tensors.size()));
  };
  std::map<std::string, std::string> meta{
      {"sparsegen",
       fmt::format("gen-model --like {} --method {} --sparsity {} --seed {}", spec.shape.name,
                   to_string(spec.prune.method), spec.prune.sparsity, spec.seed)}};
  res.files = write_checkpoint(dir, plan, spec.max_shard_bytes, produce, meta);
  const std::string config = (std::filesystem::path(dir) / "config.json").string();
  std::ofstream f(config);
  f << config_json(spec, spec.layers.value_or(spec.shape.layers)).dump(2) << "\n";
  if (!f) throw UserError(SourceLoc{config}, "write failed (disk full or not writable?)");
  return res;
}

}  // namespace sparsegen
