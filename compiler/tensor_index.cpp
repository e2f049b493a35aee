#include "compiler/tensor_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/kernel_db.h"

namespace sparsegen {

TensorIndex::TensorIndex(std::filesystem::path file) : file_(std::move(file)) {
  std::ifstream in(file_);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string version, key, row_hash, col_hash;
    MatrixFingerprint f;
    if (!(ls >> version >> key >> f.rows >> f.cols >> f.nnz >> row_hash >> col_hash) ||
        version != "v1" || row_hash.size() != 16 || col_hash.size() != 16)
      continue;
    try {
      f.row_ptr_hash = std::stoull(row_hash, nullptr, 16);
      f.col_idx_hash = std::stoull(col_hash, nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    entries_[key] = f;
  }
}

std::string TensorIndex::content_key(const SafetensorsTensor& t) {
  return fmt::format("{}:{}:{:016x}", to_string(t.dtype), fmt::join(t.shape, "x"),
                     hash64(t.data.data(), t.data.size()));
}

std::optional<MatrixFingerprint> TensorIndex::find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

bool TensorIndex::add(const std::string& key, const MatrixFingerprint& f) {
  if (entries_.count(key)) return true;
  entries_[key] = f;
  const std::string line = fmt::format("v1\t{}\t{}\t{}\t{}\t{:016x}\t{:016x}\n", key, f.rows,
                                       f.cols, f.nnz, f.row_ptr_hash, f.col_idx_hash);
  std::error_code ec;
  if (file_.has_parent_path()) std::filesystem::create_directories(file_.parent_path(), ec);
  const int fd = ::open(file_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
  return n == static_cast<ssize_t>(line.size());
}

std::filesystem::path tensor_index_path(const std::string& cache_dir) {
  return kdb::db_path(cache_dir).parent_path() / "tensor_index.tsv";
}

}  // namespace sparsegen
