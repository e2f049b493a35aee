#include "ir/gen/model_shapes.h"

#include <fmt/format.h>

#include <array>

namespace sparsegen {
namespace {

// Values of the models' published config.json files (tiny-llama: ours, small but with every
// structural feature: grouped-query attention and a non-square MLP).
const std::array<ModelShape, 3> kShapes = {{
    {"llama-2-7b", 4096, 11008, 32, 32, 32, 32000},
    {"llama-3-8b", 4096, 14336, 32, 32, 8, 128256},
    {"tiny-llama", 64, 176, 2, 4, 2, 256},
}};

}  // namespace

std::optional<ModelShape> find_model_shape(std::string_view name) {
  for (const ModelShape& s : kShapes)
    if (s.name == name) return s;
  return std::nullopt;
}

std::string model_shape_names() {
  std::string out;
  for (const ModelShape& s : kShapes) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

std::vector<ModelTensor> model_tensors(const ModelShape& s, std::optional<int64_t> layers) {
  const int64_t n_layers = layers.value_or(s.layers);
  const int64_t kv = s.kv_heads * s.head_dim();
  std::vector<ModelTensor> out;
  out.push_back({"model.embed_tokens.weight", {s.vocab, s.hidden}, ModelTensorKind::Embedding});
  for (int64_t l = 0; l < n_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    auto lin = [&](const char* name, int64_t out_f, int64_t in_f) {
      out.push_back({p + name, {out_f, in_f}, ModelTensorKind::Linear, l});
    };
    out.push_back({p + "input_layernorm.weight", {s.hidden}, ModelTensorKind::Norm, l});
    lin("self_attn.q_proj.weight", s.hidden, s.hidden);
    lin("self_attn.k_proj.weight", kv, s.hidden);
    lin("self_attn.v_proj.weight", kv, s.hidden);
    lin("self_attn.o_proj.weight", s.hidden, s.hidden);
    out.push_back({p + "post_attention_layernorm.weight", {s.hidden}, ModelTensorKind::Norm, l});
    lin("mlp.gate_proj.weight", s.intermediate, s.hidden);
    lin("mlp.up_proj.weight", s.intermediate, s.hidden);
    lin("mlp.down_proj.weight", s.hidden, s.intermediate);
  }
  out.push_back({"model.norm.weight", {s.hidden}, ModelTensorKind::Norm});
  out.push_back({"lm_head.weight", {s.vocab, s.hidden}, ModelTensorKind::Embedding});
  return out;
}

}  // namespace sparsegen
