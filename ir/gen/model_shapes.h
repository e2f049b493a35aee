// Tensor names and shapes of decoder-only LLM checkpoints, as Hugging Face `transformers` writes
// them (LlamaForCausalLM: model.embed_tokens, model.layers.L.{self_attn,mlp}.*, model.norm,
// lm_head). `sparsegen gen-model` writes a synthetic checkpoint from this table; tests use it to
// know what a generated model holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen {

// The dimensions that decide every tensor shape of a Llama-style model.
struct ModelShape {
  std::string name;          // "llama-2-7b"
  int64_t hidden = 0;        // hidden_size
  int64_t intermediate = 0;  // intermediate_size (gate/up out, down in)
  int64_t layers = 0;        // num_hidden_layers
  int64_t heads = 0;         // num_attention_heads
  int64_t kv_heads = 0;      // num_key_value_heads (grouped-query attention when < heads)
  int64_t vocab = 0;         // vocab_size
  int64_t head_dim() const { return hidden / heads; }
};

// The built-in shapes: "llama-2-7b" (4096 / 11008 / 32 layers / 32 heads / vocab 32000),
// "llama-3-8b" (4096 / 14336 / 32 / 32 heads, 8 KV heads / vocab 128256) and "tiny-llama" (a
// small model of the same structure for tests and demos: 64 / 176 / 2 layers / 4 heads, 2 KV
// heads / vocab 256). nullopt for other names.
std::optional<ModelShape> find_model_shape(std::string_view name);
// "llama-2-7b, llama-3-8b, tiny-llama": for --help and error messages.
std::string model_shape_names();

// What a tensor of the checkpoint is, which decides how it is generated.
enum class ModelTensorKind {
  Linear,     // a projection inside a decoder layer (q/k/v/o_proj, gate/up/down_proj): pruned
  Embedding,  // model.embed_tokens.weight, lm_head.weight: dense 2-D
  Norm,       // RMSNorm weights: 1-D, near 1
};

struct ModelTensor {
  std::string name;            // "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // [out_features, in_features] for linears (nn.Linear's layout)
  ModelTensorKind kind = ModelTensorKind::Linear;
  int64_t layer = -1;  // decoder layer, -1 outside the layers
};

// Every tensor of the model in the order `transformers` saves them (embeddings, then layer by
// layer, then the final norm and lm_head); `layers` overrides the shape's layer count when set.
std::vector<ModelTensor> model_tensors(const ModelShape& shape,
                                       std::optional<int64_t> layers = std::nullopt);

}  // namespace sparsegen
