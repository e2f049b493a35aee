// The quantization a quantized problem (Problem::quantized_spmm, int8 / fp8 e4m3) is defined by,
// in one place: the packers, the CPU interpreters, the GPU check's reference and the device
// helpers (slide_operand_bits in templates/sg_slide.cuh mirrors quantize_value) all follow it.
//
//   weights (per row r):   scale_r = max_j |a_rj| / qmax,   q_rj = Q(a_rj · (qmax / max_j |a_rj|))
//   tokens  (per column c): scale_c = max_k |b_kc| / qmax,   q_kc = Q(b_kc · (qmax / max_k |b_kc|))
//
// qmax = 127 (int8) or 448 (e4m3); Q rounds to nearest even and saturates (int8: to ±127, e4m3:
// to ±448). A row or column of zeros gets scale 1 and quantizes to zeros. The multiplier qmax /
// max is one IEEE fp32 division and the product one fp32 multiply, so host and device agree bit
// for bit. Non-finite weights are not quantizable: quantize_rows refuses them. For activations
// the maximum skips NaN (as fmaxf does on the device; the NaN itself quantizes to 0 in int8, NaN
// in e4m3) and an Inf gives the token a non-finite maximum, so all of it quantizes to zeros
// (documented limitation of quantized problems).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/dtype.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// 127 for I8, 448 for F8E4M3. Precondition: is_quantized(t).
float quant_max(DType t);

// Q(x · inv): the quantized value as a float (an integer for I8, an e4m3 value for F8E4M3).
float quantize_value(DType t, float x, float inv);

// Scale and multiplier of a set of values with largest magnitude `absmax` (see the top comment):
// inv = qmax / absmax (0 when absmax is 0 or not finite), scale = absmax / qmax (1 then).
struct QuantScale {
  float scale = 1.0f;
  float inv = 0.0f;
};
QuantScale quant_scale(DType t, float absmax);

// Per-row quantization of a CSR matrix's values: q in CSR order and one scale per row. Throws
// UserError naming the first non-finite value (row and column, 1-based).
struct RowQuantized {
  std::vector<float> q;
  std::vector<float> scales;
};
RowQuantized quantize_rows(const CsrMatrix& a, DType t);

// Per-token (per column of B) quantization of B (K×N in p.b_layout): q in B's layout and N
// scales. Precondition: is_quantized(p.dtype).
struct TokenQuantized {
  std::vector<float> q;
  std::vector<float> scales;
};
TokenQuantized quantize_tokens(const Problem& p, std::span<const float> b);

}  // namespace sparsegen
