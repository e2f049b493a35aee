#include "ir/csr_pack.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"

namespace sparsegen {
namespace {

struct PackedCsr final : Packed<CsrMatrix> {
  PackedCsr(CsrMatrix a, int64_t slots, std::string layout, std::string note)
      : Packed(std::move(a)), slots_(slots), layout_(std::move(layout)), note_(std::move(note)) {}
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override { return format.col_idx; }
  std::vector<int32_t> take_column_indices() override { return std::move(format.col_idx); }
  std::vector<float> take_master_values() override { return std::move(format.values); }
  FormatStats stats() const override { return csr_pack_stats(format, slots_); }
  std::string describe() const override {
    return fmt::format("{} {} x {} (nnz {}, {})", layout_, format.rows, format.cols, format.nnz(),
                       note_);
  }

 private:
  int64_t slots_;
  std::string layout_, note_;
};

}  // namespace

std::shared_ptr<PackedMatrix> pack_csr(const CsrMatrix& a, const Problem& p, int64_t slots,
                                       std::string layout, std::string note) {
  if (a.rows != p.m || a.cols != p.k)
    throw UserError(fmt::format("{}: the matrix is {}x{} but the problem has M={} and K={}",
                                a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m, p.k));
  return std::make_shared<PackedCsr>(a, slots, std::move(layout), std::move(note));
}

FormatStats csr_pack_stats(const CsrMatrix& a, int64_t slots) {
  FormatStats fs;
  fs.rows = a.rows;
  fs.nnz = a.row_ptr.empty() ? 0 : a.row_ptr.back();  // also after the indices were taken
  fs.nnz_padded = slots;
  for (int64_t r = 0; r < a.rows; ++r)
    fs.max_row_length = std::max(fs.max_row_length, a.row_ptr[r + 1] - a.row_ptr[r]);
  fs.block_tasks = 0;
  fs.col_tiles = 1;
  return fs;
}

const CsrMatrix& packed_csr(const PackedMatrix& packed) {
  const auto* p = dynamic_cast<const PackedCsr*>(&packed);
  SG_ASSERT(p != nullptr, "packed_csr: not a CSR pack");
  return p->format;
}

}  // namespace sparsegen
