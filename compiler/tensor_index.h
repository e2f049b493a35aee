// A sidecar of the kernel database for whole-model tuning: a checkpoint tensor's raw content
// (dtype, shape and a hash of its bytes) -> the structure fingerprint of the sparse matrix it
// becomes. With it, a rerun of tune-model finds a stored tensor's tunings from a hash of the
// mapped file bytes (memory speed) instead of converting the tensor to CSR (about a second per
// 45M-element weight on 2 cores).
//
// File: <cache folder>/tensor_index.tsv, one line per tensor, appended with one write() per line
// (O_APPEND: lines of several processes never interleave), tab-separated:
//   v1  F16:4096x11008:<16 hex>  rows  cols  nnz  <row hash, 16 hex>  <col hash, 16 hex>
// Lines that do not parse (a torn write, another version) are ignored: the index is a shortcut,
// and a tensor it does not know is simply loaded. Equal content keys mean equal bytes up to a
// 64-bit hash collision (with equal dtype and shape), the same assumption the database key makes.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "compiler/fingerprint.h"
#include "ir/io/safetensors.h"

namespace sparsegen {

class TensorIndex {
 public:
  // Reads `file` when it exists (a missing or unreadable file is an empty index).
  explicit TensorIndex(std::filesystem::path file);

  // "F16:4096x11008:<hash64 of the bytes, 16 hex>".
  static std::string content_key(const SafetensorsTensor& t);

  std::optional<MatrixFingerprint> find(const std::string& key) const;
  // Records a tensor (in memory and appended to the file). Returns false when the file could not
  // be written (the index then only lives in this process).
  bool add(const std::string& key, const MatrixFingerprint& f);

  const std::filesystem::path& path() const { return file_; }
  size_t size() const { return entries_.size(); }

 private:
  std::filesystem::path file_;
  std::map<std::string, MatrixFingerprint> entries_;
};

// <cache folder of kdb::db_path(cache_dir)>/tensor_index.tsv.
std::filesystem::path tensor_index_path(const std::string& cache_dir);

}  // namespace sparsegen
