// A synthetic pruned LLM checkpoint: every tensor of a Llama-shaped model (model_shapes.h) with
// seeded non-integer values, the decoder layers' linear weights pruned (pruning.h), written as a
// sharded safetensors checkpoint with Hugging Face names (io/checkpoint.h) and a config.json.
//
// Values: linear weights are make_llm_weight (log-normal row and column scales, std 0.02) pruned
// by the spec; embeddings and lm_head dense N(0, 0.02); norm weights 1 + U(-0.05, 0.05). Each
// tensor is drawn from a seed derived from (seed, tensor name), so a tensor does not depend on
// which other tensors are generated (--layers 2 holds the first two layers of the full model).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ir/gen/model_shapes.h"
#include "ir/gen/pruning.h"
#include "ir/io/checkpoint.h"

namespace sparsegen {

struct ModelGenSpec {
  ModelShape shape;
  std::optional<int64_t> layers;  // fewer decoder layers than the shape has
  PruneSpec prune;                // applied to every linear weight of the layers
  StDType dtype = StDType::F16;   // F16, BF16 or F32
  uint64_t seed = 0;
  uint64_t max_shard_bytes = 5'000'000'000;  // transformers' default max_shard_size ("5GB")
};

struct ModelGenResult {
  CheckpointWriteResult files;
  int64_t tensors = 0;
  int64_t linear_tensors = 0;  // pruned
  int64_t linear_elements = 0;
  int64_t linear_kept = 0;  // stored nonzeros of the pruned weights
  // Kept weights whose magnitude is below the dtype's smallest subnormal: stored as that
  // subnormal (same sign) so the file's nonzero pattern is exactly the pruned one.
  int64_t raised_to_subnormal = 0;
};

// Seed of one tensor: SplitMix64 over the model seed and the name's FNV-1a hash.
uint64_t tensor_seed(uint64_t seed, const std::string& name);

// Writes the checkpoint into `dir` (created when missing): shards, model.safetensors.index.json
// and config.json (LlamaConfig fields). `progress(done, total)` is called after each tensor.
// Throws UserError naming the flag for a bad spec (--layers, --dtype, --sparsity, ...) or the file
// on I/O failure.
ModelGenResult generate_model(const ModelGenSpec& spec, const std::string& dir,
                              const std::function<void(int, int)>& progress = {});

// The dense values of one generated tensor in fp32 (linear weights pruned), before the
// conversion to the file's dtype: what tests compare a written checkpoint against.
DenseMatrix generate_model_tensor(const ModelGenSpec& spec, const ModelTensor& t);

}  // namespace sparsegen
