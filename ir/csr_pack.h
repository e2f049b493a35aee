// The pack of the library candidates (dense, cusparse): the CSR matrix itself, which the build
// lays out for the library (densely, or as the library's CSR arrays); the CPU interpreter of
// such a pack is the CSR reference.
#pragma once

#include <memory>
#include <string>

#include "ir/family.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// A copy of `a` as a PackedMatrix, after checking it has the problem's M x K (UserError naming
// the matrix otherwise). Its stats report `slots` packed slots (e.g. M·K for a dense copy) and
// describe() reads "<layout> M x K (nnz Z, <layout's note>)".
std::shared_ptr<PackedMatrix> pack_csr(const CsrMatrix& a, const Problem& p, int64_t slots,
                                       std::string layout, std::string note);
// The format figures of such a pack: rows, nonzeros, `slots` packed slots, the longest row, and
// no kernel of the family's own (block_tasks 0, one column tile: the library runs).
FormatStats csr_pack_stats(const CsrMatrix& a, int64_t slots);
// The CSR inside a pack_csr() pack. Precondition (asserted): `packed` was made by pack_csr.
const CsrMatrix& packed_csr(const PackedMatrix& packed);

}  // namespace sparsegen
