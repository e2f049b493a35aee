// CPU interpreter: executes a schedule's division and reduction on the host, walking block →
// warp → thread tasks exactly as the PackedFormat's offsets say, combining partials the way each
// level's ReductionKind says (Total sums one row, Bitmap segments by the stored bitmap, Segment
// merges head/tail partials), and storing (or atomically adding) into C. This is the reference
// for "this plan computes A·B" and the oracle the GPU tests compare with.
//
// Arithmetic: A, B and C values are first rounded to problem.dtype (as the GPU sees them);
// products are accumulated in fp32; the stored result is rounded to dtype once. Store mode:
// C = round(alpha·acc + beta·C). Atomic mode models the kernels' fp32 workspace: ws = beta·C in
// fp32, every partial adds alpha·partial to ws in fp32 (in the interpreter's task order; the GPU's
// atomics add in any order), and C = round(ws) at the end (for fp32 the kernels add into C
// directly, which is the same arithmetic). Dense operands are float arrays in the problem's
// layouts (B: K·N, C: M·N entries). beta == 0: C is not read.
//
// The interpreter also checks the plan's invariants (a Total reduction whose partials span two
// rows, a bitmap that disagrees with the rows, a row stored twice or never) and throws
// std::logic_error naming the level and task — a broken packer or schedule shows up as a failure,
// never as a silently wrong number.
//
//   PackedFormat f = pack_format(a, p, s);
//   interpret(p, s, f, b, c, 1.0f, 0.0f);   // c = A·B
#pragma once

#include <span>

#include "ir/format.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

void interpret(const Problem& p, const Schedule& s, const PackedFormat& f,
               std::span<const float> b, std::span<float> c, float alpha, float beta);

// Plain CSR reference with the same rounding rules (dtype-rounded inputs, fp32 accumulation in
// column order, one rounding on store).
void reference_spmm(const Problem& p, const CsrMatrix& a, std::span<const float> b,
                    std::span<float> c, float alpha, float beta);

// Rounds an fp32 value to the nearest value of dtype (identity for fp32).
float round_to(DType t, float v);

}  // namespace sparsegen
