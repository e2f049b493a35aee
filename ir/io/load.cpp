#include "ir/io/load.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/io/csr_container.h"
#include "ir/io/dense_to_csr.h"
#include "ir/io/matrix_market.h"
#include "ir/io/npy.h"
#include "ir/io/safetensors.h"
#include "ir/io/smtx.h"

namespace sparsegen {

namespace {

constexpr const char* kSupported = ".mtx, .smtx, .safetensors, .npy";

std::string extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// Lists tensor names for an error message; a real checkpoint has hundreds, so cap the list.
std::string tensor_list(const SafetensorsFile& file) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < file.tensors.size() && i < kShown; ++i) {
    const auto& t = file.tensors[i];
    out += fmt::format("\n  {} {} [{}]", t.name, to_string(t.dtype), fmt::join(t.shape, ", "));
  }
  if (file.tensors.size() > kShown)
    out += fmt::format("\n  ... and {} more", file.tensors.size() - kShown);
  return out;
}

const SafetensorsTensor& select_tensor(const SafetensorsFile& file, const std::string& name) {
  if (file.tensors.empty()) throw UserError(SourceLoc{file.source}, "the file holds no tensors");
  if (name.empty()) {
    if (file.tensors.size() == 1) return file.tensors.front();
    throw UserError(SourceLoc{file.source},
                    fmt::format("the file holds {} tensors; choose one with --tensor NAME:{}",
                                file.tensors.size(), tensor_list(file)));
  }
  if (const SafetensorsTensor* t = file.find(name)) return *t;
  throw UserError(SourceLoc{file.source},
                  fmt::format("no tensor named '{}'; the file holds:{}", name, tensor_list(file)));
}

void reject_tensor_option(const std::string& path, const std::string& tensor, const char* what) {
  if (!tensor.empty())
    throw UserError(
        SourceLoc{path},
        fmt::format("a tensor name ('{}') was given, but {} has no named tensors", tensor, what));
}

[[noreturn]] void unknown_extension(const std::string& path, const char* supported) {
  throw UserError(
      SourceLoc{path},
      fmt::format("unknown file type '{}'; supported extensions: {}",
                  extension(path).empty() ? std::string("(none)") : extension(path), supported));
}

// Values stored in a CSR container were checked when first read, but whoever loads the container
// now has not seen those warnings: repeat them (count and first entry).
void report_container_values(const CsrMatrix& m, Diagnostics& diag) {
  int64_t non_finite = 0;
  for (float v : m.values)  // branch-free so it vectorizes: ~0.05 s for 100M values
    non_finite += (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u;
  if (non_finite > 0) {
    size_t k = 0;
    while (std::isfinite(m.values[k])) ++k;
    const auto row = std::upper_bound(m.row_ptr.begin(), m.row_ptr.end(), static_cast<int64_t>(k)) -
                     m.row_ptr.begin() - 1;
    diag.warn_n(WarningKind::NonFinite, non_finite, SourceLoc{m.source},
                fmt::format("entry ({}, {}) (0-based) = {}", row, m.col_idx[k], m.values[k]));
  }
  if (m.pattern_only && m.nnz() > 0)
    diag.warn_n(WarningKind::PatternValues, m.nnz(), SourceLoc{m.source},
                "pattern-only matrix: its values were synthesized when it was first read");
}

}  // namespace

LoadedMatrix load_matrix(const std::string& path, const LoadOptions& opts) {
  LoadedMatrix out;
  const std::string ext = extension(path);
  if (ext == ".mtx") {
    reject_tensor_option(path, opts.tensor, "a Matrix Market file");
    MatrixMarketOptions mm;
    mm.duplicates = opts.duplicates;
    mm.pattern_seed = opts.pattern_seed;
    out.matrix = read_matrix_market(path, mm, out.diag);
    out.format = "matrix-market";
  } else if (ext == ".smtx") {
    reject_tensor_option(path, opts.tensor, "an .smtx file");
    out.matrix = read_smtx(path, opts.pattern_seed, out.diag);
    out.format = "smtx";
  } else if (ext == ".safetensors") {
    SafetensorsFile file = read_safetensors(path);
    if (is_csr_container(file)) {
      reject_tensor_option(path, opts.tensor, "a sparsegen CSR container");
      out.matrix = csr_from_container(file);
      report_container_values(out.matrix, out.diag);
      out.format = "sparsegen-csr";
    } else {
      DenseMatrix d = tensor_to_dense(file, select_tensor(file, opts.tensor));
      out.matrix = dense_to_csr(d, out.diag);
      out.format = "safetensors-dense";
    }
  } else if (ext == ".npy") {
    reject_tensor_option(path, opts.tensor, "an .npy file");
    out.matrix = dense_to_csr(read_npy(path), out.diag);
    out.format = "npy";
  } else {
    unknown_extension(path, kSupported);
  }
  out.matrix.source = path;
  return out;
}

DenseMatrix load_dense(const std::string& path, const std::string& tensor) {
  const std::string ext = extension(path);
  if (ext == ".safetensors") {
    SafetensorsFile file = read_safetensors(path);
    if (is_csr_container(file))
      throw UserError(SourceLoc{path},
                      "is a sparsegen CSR container (a sparse matrix), not a dense weight");
    return tensor_to_dense(file, select_tensor(file, tensor));
  }
  if (ext == ".npy") {
    reject_tensor_option(path, tensor, "an .npy file");
    return read_npy(path);
  }
  unknown_extension(path, ".safetensors, .npy (dense weights)");
}

}  // namespace sparsegen
