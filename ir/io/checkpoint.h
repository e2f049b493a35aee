// Hugging Face checkpoints in safetensors: one `.safetensors` file, or shards named
// `model-0000X-of-0000Y.safetensors` with a `model.safetensors.index.json` that maps every tensor
// name to its shard ({"metadata": {"total_size": BYTES}, "weight_map": {NAME: FILE}}).
//
// Reading opens every shard (memory-mapped, headers validated by safetensors.h) and checks the
// index against them: a tensor the index names must be in its shard, and a shard tensor the index
// does not name is an error, so the listing is the checkpoint's whole content. Writing streams
// tensor by tensor (the bytes of one tensor are in memory at a time), so a 13 GB model is written
// with the memory of its largest tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/io/safetensors.h"

namespace sparsegen {

struct CheckpointTensor {
  std::string name;
  size_t shard = 0;                           // index into Checkpoint::shards
  const SafetensorsTensor* tensor = nullptr;  // into shards[shard]
};

struct Checkpoint {
  std::string source;                     // the path given (a .safetensors or the index)
  std::vector<SafetensorsFile> shards;    // one for a single file
  std::vector<CheckpointTensor> tensors;  // sorted by name

  // nullptr when absent.
  const CheckpointTensor* find(const std::string& name) const;

  // Move-only: `tensors` points into `shards` (a move keeps those buffers, a copy would not).
  Checkpoint() = default;
  Checkpoint(Checkpoint&&) = default;
  Checkpoint& operator=(Checkpoint&&) = default;
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;
};

// Opens `path`: a `.safetensors` file, or a `.json` shard index (shards relative to its folder).
// Throws UserError naming the file (and the tensor or shard) for a missing shard, a tensor the
// index maps to a shard that does not hold it, a shard tensor missing from the index, the same
// tensor in two shards, or malformed JSON (with its byte offset).
Checkpoint open_checkpoint(const std::string& path);

// One tensor of a checkpoint to write.
struct CheckpointEntry {
  std::string name;
  StDType dtype = StDType::F16;
  std::vector<int64_t> shape;
  uint64_t bytes() const;  // numel * element size
};

// Fills `out` (exactly entry.bytes() long, little-endian) with tensor `index` of the plan. May
// throw; then nothing is left at the checkpoint's names.
using TensorProducer = std::function<void(size_t index, std::span<std::byte> out)>;

struct CheckpointWriteResult {
  std::vector<std::string> shard_files;  // file names (in `dir`), in order
  std::string index_file;                // model.safetensors.index.json
  uint64_t total_bytes = 0;              // tensor bytes (the index's total_size)
};

// Writes the tensors of `plan` in its order into shards of at most `max_shard_bytes` tensor bytes
// each (a larger tensor gets a shard of its own), named model-0000X-of-0000Y.safetensors, then the
// index (always, also for one shard). Each shard carries `metadata` ({"format": "pt"} is added, as
// transformers writes it). Files are written under temporary names and renamed when complete, the
// index last, so an interrupted run never leaves an index that names a partial shard. Throws
// UserError naming the file on I/O failure; `dir` must exist.
CheckpointWriteResult write_checkpoint(const std::string& dir,
                                       const std::vector<CheckpointEntry>& plan,
                                       uint64_t max_shard_bytes, const TensorProducer& produce,
                                       const std::map<std::string, std::string>& metadata = {});

}  // namespace sparsegen
