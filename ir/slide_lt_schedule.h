// slide_lt schedule family: SlideSparse weights ((2N−2):2N, ir/slide_format.h) through the vendor's
// 2:4 sparse GEMM library (cuSPARSELt), the back end for compute-bound N. Its IrFamily is in
// ir/slide_lt_family.cpp. A library candidate: the tuner measures it next to the generated slide
// kernels and the dense library GEMM.
//
//   slide_lt;pattern=6:8;alg=search
//   slide_lt;pattern=6:8;alg=42;split_k=2;split_k_mode=1;split_k_buffers=1
//     pattern  (2N−2):2N of the weight (2:4 … 14:16)
//     alg      the library's algorithm id, or search: found when the kernel is loaded (the
//              library's own search and split-K 2/4/8 around its pick, timed), after which the
//              tuner keeps the concrete choice with the kernel in the database
//     split_k, split_k_mode, split_k_buffers   the library's split-K settings (with an id)
//
// Two steps per run, plus one for int8:
//   b_transform  lifts B into the sliding windows (Ψ) and, for int8, quantizes it per token
//                (ir/quantize.h): B' is lifted K (padded to the 32/64-column chunk) x N,
//                column-major (each token's lifted values contiguous);
//   library      D = W' · B' on the sparse tensor cores, W' the lifted weight (M x K', 2:4 along
//                K', compressed by the library when the kernel is loaded);
//                fp16/bf16: D is C, with the run's alpha and beta;
//                int8: D is the raw int32 accumulator in the workspace, and
//   main         (int8) C = alpha·D·(row scale · token scale) + beta·C, one rounding.
//
// C is column-major (the library writes each token's outputs contiguously); M must be a multiple
// of 16 (fp16/bf16) or 32 (int8), the library's rule for the structured operand. fp8 e4m3 is not
// offered: the library's e4m3 GEMM misses the fp32-accumulation error bound (the slide family's
// generated kernels run it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct SlideLtSchedule {
  static constexpr std::string_view kFamily = "slide_lt";
  static constexpr int kSearch = -1;  // alg=search

  int pattern = 4;  // N of (2N−2):2N: 2 … 8
  int alg = kSearch;
  int split_k = 1;
  int split_k_mode = 0;  // 0: the library's default; 1: one kernel; 2: two kernels
  int split_k_buffers = 1;

  bool searched() const { return alg == kSearch; }
  bool operator==(const SlideLtSchedule&) const = default;
};

std::vector<std::string> validate(const SlideLtSchedule& s);
// fp16/bf16/int8 SpMM or SpMV with a static weight, C column-major, M a multiple of the
// library's 16 / 32.
std::vector<std::string> validate_slide_lt(const Problem& p);

std::string slide_lt_spec(const SlideLtSchedule& s);
std::string print_slide_lt(const SlideLtSchedule& s);
SlideLtSchedule parse_slide_lt_fields(std::string_view spec,
                                      const std::vector<std::string_view>& parts);
// The library's words for the algorithm ("alg=42,split_k=2,mode=1,buffers=1"), or "" for search.
std::string slide_lt_choice(const SlideLtSchedule& s);
// The schedule with the library's words (as slide_lt_choice writes them) as its algorithm.
// Throws UserError when they do not parse.
SlideLtSchedule with_choice(const SlideLtSchedule& s, std::string_view choice);

// Lifted columns the library multiplies: K' padded to the lift's chunk (32 for 16-bit, 64 for
// 8-bit types), a multiple of the library's K rule.
int64_t slide_lt_lifted_k(const Problem& p, int pattern);
// Bytes of the lifted B (lifted K x N in the dtype) and of the raw accumulators (M x N x 4, 8-bit
// types; 0 for 16-bit ones).
int64_t slide_lt_b_work_bytes(const Problem& p, int pattern);
int64_t slide_lt_workspace_bytes(const Problem& p);

// 2:4 sparse tensor cores (sm_80+), blocks of 128 / 256 threads, 32-bit sizes.
std::vector<std::string> verify_slide_lt(const Problem& p, const DeviceLimits& dev);

// One candidate, alg=search, for the matrix's smallest pattern, when the problem fits (none
// otherwise: why_not says why).
std::vector<Schedule> enumerate_slide_lt_schedules(const Problem& p, const CsrMatrix& a,
                                                   const DeviceLimits& dev);

}  // namespace sparsegen
