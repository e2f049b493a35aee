// Value precisions: the public DType (sparsegen/dtype.h) and the host conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/diagnostics.h"
#include "sparsegen/dtype.h"

namespace sparsegen {

// IEEE binary16 / bfloat16 bit patterns, round-to-nearest-even.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);
// fp8 e4m3fn (OCP FP8, the type of sm_89+ tensor cores), round-to-nearest-even; magnitudes beyond
// 448 saturate to 448 (the format has no infinity), NaN stays NaN (0x7f).
uint8_t float_to_e4m3_bits(float f);
float e4m3_bits_to_float(uint8_t b);
// int8 by round-to-nearest-even, saturating to [-127, 127] (symmetric, as per-row quantization
// uses it); NaN becomes 0.
int8_t float_to_int8(float f);

// Result of converting fp32 master values to a narrower precision. Values whose magnitude exceeds
// the target's range are counted and the first is located; the conversion never turns a finite
// input into inf silently: callers decide (report and stop, or report and proceed).
struct ConversionReport {
  int64_t out_of_range = 0;
  int64_t first_index = -1;  // index into the value array of the first out-of-range value
  float first_value = 0;
};

// Converts to fp16 or bf16 bits. Out-of-range finite values are saturated to the largest finite
// value *and* reported; NaN/Inf inputs stay NaN/Inf (they were reported at load).
std::vector<uint16_t> convert_values(std::span<const float> values, DType target,
                                     ConversionReport* report);
// convert_values into `out` (2 bytes per value, the host's byte order, any alignment), e.g. the
// byte buffer a kernel's values are uploaded from, without an intermediate vector. Multithreaded
// for large inputs (ir/parallel.h); the result does not depend on the thread count.
ConversionReport convert_values_to(std::span<const float> values, DType target,
                                   std::span<std::byte> out);

// What convert_values would report, without converting: one comparison per value (multithreaded
// for large inputs, like the conversion).
ConversionReport check_range(std::span<const float> values, DType target);

// The smallest positive float that fp16 / bf16 rounding (to nearest even) turns into infinity:
// 65520 for fp16, 0x1.fefp127 (bits 0x7f7f8000) for bf16.
float overflow_threshold(DType target);

}  // namespace sparsegen
