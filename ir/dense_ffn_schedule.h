// dense_ffn schedule family: the gated FFN (ir/ffn.h) computed densely, as a library candidate
// the FFN tuner measures next to the sparse schedules (and returns where sparsity does not pay).
// Its IrFamily is in ir/dense_ffn_family.cpp.
//
//   dense_ffn;threads=256
//     threads  block size of the gating kernel (128, 256, 512)
//
// Steps of a run: the BLAS library's GEMM [G | U] = x · [W_g | W_u] (M x 2N; M x N not gated),
// the gating kernel h = ReLU(G) ⊙ U (templates/sg_ffn.cuh), the library's GEMM
// y = alpha · h · W_d + beta · y. fp16/bf16 with fp32 accumulation; G, U and h are rounded to the
// dtype once each (as a dense serving stack does).
//
// For the IR's other hooks the sparse operand `a` of a gated FFN is an activation pattern (as for
// every FFN family): pack() keeps it densely and interpret() computes c = alpha·H·b + beta·c.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct DenseFfnSchedule {
  static constexpr std::string_view kFamily = "dense_ffn";
  int threads = 256;  // gating kernel block: 128, 256, 512
  bool operator==(const DenseFfnSchedule&) const = default;
};

std::vector<std::string> validate(const DenseFfnSchedule& s);
// A gated FFN in fp16 / bf16 with K, N > 0.
std::vector<std::string> validate_dense_ffn(const Problem& p, const DenseFfnSchedule& s);
std::string dense_ffn_spec(const DenseFfnSchedule& s);
std::string print_dense_ffn(const DenseFfnSchedule& s);
DenseFfnSchedule parse_dense_ffn_fields(std::string_view spec,
                                        const std::vector<std::string_view>& parts);

// Columns of the first GEMM's output: 2N gated, N not.
int64_t dense_ffn_gu_cols(const Problem& p);
// The work buffer: [G | U] (M x gu_cols) then h (M x N), in elements of the dtype; its bytes.
int64_t dense_ffn_h_offset(const Problem& p);
int64_t dense_ffn_work_bytes(const Problem& p);
// Weights in elements: [W_g | W_u] (K x gu_cols) then W_d (N x K).
int64_t dense_ffn_down_offset(const Problem& p);
int64_t dense_ffn_weight_elements(const Problem& p);
// Blocks of the gating kernel (grid-stride beyond 65535 x 8 per SM-ish cap).
int64_t dense_ffn_gate_blocks(const Problem& p, const DenseFfnSchedule& s);

std::vector<std::string> verify_dense_ffn(const Problem& p, const DenseFfnSchedule& s,
                                          const DeviceLimits& dev);
// threads {256, 512, 128}; none unless the problem is a gated FFN and `a` has N columns.
std::vector<Schedule> enumerate_dense_ffn_schedules(const Problem& p, const CsrMatrix& a,
                                                    const DeviceLimits& dev);

}  // namespace sparsegen
